//! Input requests of the multi round-trip model: each kind built, written
//! as `inputRequests` carry it, read back, and its answer read.

// rmcp marks sampling and roots deprecated (SEP-2577); 2026-07-28 has them.
#![allow(deprecated)]

use askgate_core::{Ask, Form, Revision};
use askgate_mcp::input::{
    InputError, InputKind, elicit_form, elicit_url, from_json, list_roots, read_elicitation,
    read_roots, read_sampling, to_json,
};
use rmcp::model::ElicitationAction;
use serde_json::json;

#[test]
fn each_kind_has_its_method_and_back() {
    for kind in InputKind::ALL {
        assert_eq!(InputKind::from_method(kind.method()).ok(), Some(kind));
    }
    let unknown = InputKind::from_method("tools/call");
    assert!(
        matches!(&unknown, Err(InputError::UnknownMethod(m)) if m == "tools/call"),
        "{unknown:?}"
    );
}

#[test]
fn a_form_elicitation_carries_the_revisions_mapping_and_reads_back() {
    let form: Form = serde_json::from_value(json!({
        "message": "What is your name?",
        "fields": [{"id": "name", "title": "Name", "type": "text"}]
    }))
    .expect("a form");
    let ask = Ask::new(form).expect("carried");
    let params = ask.request(Revision::V2026_07_28).expect("maps");
    let request = elicit_form(&params).expect("builds");
    assert_eq!(InputKind::of(&request), Some(InputKind::Elicitation));
    let wire = to_json(&request);
    assert_eq!(wire["method"], "elicitation/create");
    assert_eq!(wire["params"]["message"], "What is your name?");
    assert_eq!(
        wire["params"]["requestedSchema"]["required"],
        json!(["name"])
    );
    assert_eq!(from_json(&wire).expect("reads back"), request);
}

#[test]
fn a_url_elicitation_needs_an_id_and_an_absolute_url() {
    let no_id = elicit_url("Open the inbox", "https://inbox.example/a/1", "  ");
    assert!(
        matches!(no_id, Err(InputError::EmptyElicitationId)),
        "{no_id:?}"
    );
    for relative in ["/a/1", "inbox/a/1", "mailto:someone@example.com"] {
        let refused = elicit_url("Open the inbox", relative, "a-1");
        assert!(
            matches!(&refused, Err(InputError::RelativeUrl(url)) if url == relative),
            "{refused:?}"
        );
    }
    let request = elicit_url("Open the inbox", "http://127.0.0.1:7777/a/1", "a-1").expect("builds");
    let wire = to_json(&request);
    assert_eq!(wire["params"]["mode"], "url");
    assert_eq!(wire["params"]["elicitationId"], "a-1");
    // An upstream's URL request is checked the same way.
    let mut relative = wire.clone();
    relative["params"]["url"] = json!("/a/1");
    let refused = from_json(&relative);
    assert!(
        matches!(&refused, Err(InputError::RelativeUrl(url)) if url == "/a/1"),
        "{refused:?}"
    );
}

#[test]
fn sampling_and_roots_requests_round_trip() {
    let sampling = from_json(&json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
            "maxTokens": 100
        }
    }))
    .expect("a sampling request");
    assert_eq!(InputKind::of(&sampling), Some(InputKind::Sampling));
    assert_eq!(to_json(&sampling)["params"]["maxTokens"], 100);
    let roots = list_roots();
    assert_eq!(InputKind::of(&roots), Some(InputKind::Roots));
    assert_eq!(to_json(&roots)["method"], "roots/list");
    assert_eq!(from_json(&to_json(&roots)).expect("reads back"), roots);
}

#[test]
fn answers_of_each_kind_are_read_and_bad_ones_named() {
    let elicited = read_elicitation(&json!({"action": "accept", "content": {"name": "Alice"}}))
        .expect("an elicitation result");
    assert_eq!(elicited.action, ElicitationAction::Accept);
    let sampled = read_sampling(&json!({
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "test-model",
        "stopReason": "endTurn"
    }))
    .expect("a sampling result");
    assert_eq!(sampled.model, "test-model");
    let roots = read_roots(&json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}))
        .expect("a roots result");
    assert_eq!(roots.roots.len(), 1);

    let error = read_elicitation(&json!(12345)).expect_err("not a result");
    assert!(
        error
            .to_string()
            .starts_with("not a valid elicitation result")
    );
    let error = from_json(&json!({"params": {}})).expect_err("no method");
    assert!(error.to_string().contains("\"method\""));
}
