use std::collections::HashMap;

use askgate_derive::AskForm;

#[derive(AskForm)]
#[ask(message = "Which labels?")]
struct Labels {
    labels: HashMap<String, String>,
}

fn main() {}
