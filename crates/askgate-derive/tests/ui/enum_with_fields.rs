use askgate_derive::AskChoice;

#[derive(AskChoice)]
enum Target {
    Staging,
    Region(String),
    Cluster { name: String },
}

fn main() {}
