//! Snapshots of the generated `elicitation/create` params: a change to what a
//! client is sent is a reviewed change.

mod common;

use askgate_core::{Ask, Revision};

#[test]
fn generated_params_per_revision() {
    for (name, form) in common::corpus() {
        let ask = Ask::new(form).expect("the corpus forms are askable");
        for revision in Revision::ALL {
            let params = ask.request(revision).expect("askable");
            insta::assert_json_snapshot!(format!("{name}@{revision}"), params);
        }
    }
}
