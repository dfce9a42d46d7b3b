use askgate_derive::{AskChoice, AskForm};

#[derive(AskChoice)]
enum Environment {
    Staging,
    Prod,
}

#[derive(AskForm)]
#[ask(message = "Deploy where?")]
struct Deploy {
    #[ask(default = "prod")]
    environment: Environment,
}

fn main() {}
