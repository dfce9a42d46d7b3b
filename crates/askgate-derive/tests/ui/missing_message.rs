use askgate_derive::AskForm;

#[derive(AskForm)]
struct Scale {
    replicas: u8,
}

fn main() {}
