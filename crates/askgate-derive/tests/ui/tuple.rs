use askgate_derive::AskForm;

#[derive(AskForm)]
#[ask(message = "Which window?")]
struct Window {
    hours: (u8, u8),
    zone: Option<Option<String>>,
}

fn main() {}
