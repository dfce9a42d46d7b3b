use askgate_derive::AskChoice;

#[derive(AskChoice)]
enum Replicas {
    One = 1,
    Three = 3,
}

fn main() {}
