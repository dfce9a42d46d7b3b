use askgate_derive::AskForm;

#[derive(AskForm)]
#[ask(message = "How many replicas?")]
struct Scale {
    #[ask(min_length = 1)]
    replicas: u8,
    #[ask(zone = "Europe/Paris")]
    note: String,
}

fn main() {}
