use askgate_derive::AskForm;

struct Address {
    street: String,
    city: String,
}

#[derive(AskForm)]
#[ask(message = "Where should the parcel go?")]
struct Parcel {
    recipient: String,
    address: Address,
}

fn main() {}
