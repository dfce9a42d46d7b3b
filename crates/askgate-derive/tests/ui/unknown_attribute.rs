use askgate_derive::AskForm;

#[derive(AskForm)]
#[ask(message = "How many replicas?")]
struct Scale {
    #[ask(minimum = 1)]
    replicas: u8,
}

fn main() {}
