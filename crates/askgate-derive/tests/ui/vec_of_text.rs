use askgate_derive::AskForm;

#[derive(AskForm)]
#[ask(message = "Which hosts?")]
struct Hosts {
    hosts: Vec<String>,
}

fn main() {}
