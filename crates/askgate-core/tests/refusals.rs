//! Every refusal a person can meet, as the person reads it. Snapshotted, so a
//! change to a message is a reviewed change.

mod common;

use std::fmt::Write;

use askgate_core::{Ask, Form, Outcome, Response, Revision, Step};
use serde_json::{Value as Json, json};

/// One field per type, every constraint set, nothing supplied or defaulted.
fn form() -> Form {
    serde_json::from_value(json!({
        "message": "Check every refusal.",
        "fields": [
            {"id": "name", "title": "Name", "type": "text", "min_length": 3, "max_length": 8},
            {"id": "mail", "title": "Email", "type": "text", "format": "email", "required": false},
            {"id": "site", "title": "Website", "type": "text", "format": "uri", "required": false},
            {"id": "api_token", "title": "API token", "type": "text", "format": "uri", "required": false},
            {"id": "ratio", "title": "Ratio", "type": "number", "minimum": 0, "maximum": 1, "required": false},
            {"id": "count", "title": "Count", "type": "integer", "minimum": 1, "maximum": 5, "required": false},
            {"id": "ok", "title": "Proceed", "type": "boolean", "required": false},
            {"id": "env", "title": "Environment", "type": "choice", "required": false,
             "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]},
            {"id": "why", "title": "Reason", "type": "choice", "strict": false, "required": false,
             "options": [{"value": "release", "label": "Release"}]},
            {"id": "checks", "title": "Checks", "type": "choice", "multiple": true, "min_items": 2, "max_items": 2, "required": false,
             "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}, {"value": "c", "label": "C"}]},
            {"id": "day", "title": "Day", "type": "date", "required": false},
            {"id": "at", "title": "At", "type": "instant", "zone": "Europe/Paris", "required": false},
            {"id": "utc_at", "title": "UTC time", "type": "instant", "required": false},
            {"id": "tz", "title": "Zone", "type": "zone", "required": false},
            {"id": "span", "title": "Span", "type": "time_range", "zone": "Europe/Paris", "required": false}
        ]
    }))
    .expect("a valid form")
}

fn refusal(content: Json) -> String {
    let ask = Ask::new(form()).expect("askable");
    let Json::Object(content) = content else {
        panic!("content is an object")
    };
    let mut base = serde_json::Map::new();
    base.insert("name".into(), json!("valid"));
    base.extend(content);
    match ask.settle(Revision::V2025_11_25, &Response::accept(base)) {
        Step::ReAsk(next) => next.reasons().join("\n"),
        Step::Settled(Outcome::Accepted { .. }) => "(accepted)".into(),
        Step::Settled(other) => format!("{other:?}"),
    }
}

#[test]
fn every_refusal_message() {
    // Each case: what it refuses, and the content answered (beside a valid
    // name); object keys keep their order, so the report does too.
    let cases = json!({
        "missing required": {"name": null},
        "wrong type": {"name": 42},
        "too short": {"name": "ab"},
        "too long": {"name": "abcdefghijk"},
        "not an email": {"mail": "bob.example.com"},
        "not a uri": {"site": "example.com/x"},
        "secret-named field never echoes": {"api_token": "notauri"},
        "token-looking value never echoes": {"site": "ghp_16C7e42F292c6912E7710c838347Ae178B4a"},
        "below minimum": {"ratio": -0.5},
        "above maximum": {"count": 9},
        "not whole": {"count": 2.5},
        "not a number": {"ratio": "lots"},
        "not a boolean": {"ok": "maybe"},
        "not on offer": {"env": "qa"},
        "choice and other": {"why": "release", "why.other": "audit"},
        "too few items": {"checks": ["a"]},
        "too many items": {"checks": ["a", "b", "c"]},
        "multi item not on offer": {"checks": ["a", "z"]},
        "not a date": {"day": "29/03/2026"},
        "no such date": {"day": "2025-02-29"},
        "not an instant": {"at": "tomorrow at nine"},
        "no offset without zone": {"utc_at": "2026-07-01T09:00:00"},
        "skipped local time": {"at": "2026-03-29T02:30:00"},
        "ambiguous local time": {"at": "2026-10-25T02:30:00"},
        "offset does not match zone": {"utc_at": "2026-07-01T09:00:00+01:00[Europe/Paris]"},
        "unknown zone with suggestion": {"tz": "Europe/Pairs"},
        "unknown zone without suggestion": {"tz": "Mars/Olympus_Mons_Base"},
        "half range": {"span.from": "2026-07-01T09:00:00"},
        "range order": {"span.from": "2026-07-01T10:00:00", "span.to": "2026-07-01T09:00:00"},
        "empty range": {"span.from": "2026-07-01T10:00:00", "span.to": "2026-07-01T10:00:00"},
        "range end in a gap": {"span.from": "2026-03-29T01:00:00", "span.to": "2026-03-29T02:15:00"},
        "unknown property beside a wrong value": {"colour": "blue", "ok": "maybe"},
        "several at once": {"count": 0, "day": "2026-13-01", "extra": true}
    });
    let mut report = String::new();
    let Json::Object(cases) = cases else {
        unreachable!("the cases are one object")
    };
    for (name, content) in cases {
        writeln!(report, "## {name}\n{}\n", refusal(content)).expect("writing to a string");
    }
    insta::assert_snapshot!(report);
}

#[test]
fn a_reask_prepends_the_reasons_and_counts_attempts() {
    let ask = Ask::new(form()).expect("askable");
    let response =
        Response::accept(serde_json::from_value(json!({"name": "ab"})).expect("an object"));
    let Step::ReAsk(next) = ask.settle(Revision::V2025_11_25, &response) else {
        panic!("too short is refused")
    };
    let request = next.request(Revision::V2025_11_25).expect("askable");
    insta::assert_snapshot!(request.message);
}

#[test]
fn the_cap_on_attempts_ends_in_an_outcome_that_says_so() {
    let ask = Ask::new(form())
        .expect("askable")
        .with_max_attempts(2)
        .expect("two attempts");
    let wrong = Response::accept(serde_json::from_value(json!({"name": "ab"})).expect("an object"));
    let Step::ReAsk(second) = ask.settle(Revision::V2025_11_25, &wrong) else {
        panic!("the first refusal re-asks")
    };
    let Step::Settled(Outcome::GaveUp {
        attempts, problems, ..
    }) = second.settle(Revision::V2025_11_25, &wrong)
    else {
        panic!("the second refusal gives up")
    };
    assert_eq!(attempts, 2);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].field, "name");
}

#[test]
fn an_unknown_property_refuses_the_whole_answer_and_names_what_is_asked() {
    let ask = Ask::new(form()).expect("askable");
    let response = Response::accept(
        serde_json::from_value(json!({"name": "valid", "colour": "blue"})).expect("an object"),
    );
    let Step::ReAsk(again) = ask.settle(Revision::V2025_11_25, &response) else {
        panic!("a property the form does not ask for is refused");
    };
    let message = again.problems()[0].message();
    assert!(message.contains("\"colour\""), "{message}");
    assert!(message.contains("it asks for \"name\""), "{message}");
    // Nothing of the refused answer is kept: the re-ask asks every field.
    let asked = again.request(Revision::V2025_11_25).expect("a request");
    assert!(asked.requested_schema.property("name").is_some());
}

#[test]
fn a_mistyped_confirmation_does_not_settle_on_its_default() {
    let form: Form = serde_json::from_value(json!({
        "message": "Run it?",
        "fields": [{"id": "confirm", "title": "Run it", "type": "boolean", "default": true}]
    }))
    .expect("a form");
    let ask = Ask::new(form).expect("askable");
    let typo =
        Response::accept(serde_json::from_value(json!({"confrim": false})).expect("an object"));
    let Step::ReAsk(again) = ask.settle(Revision::V2025_11_25, &typo) else {
        panic!("{{\"confrim\": false}} must not settle as accepted with confirm: true");
    };
    assert_eq!(
        again.problems()[0].message(),
        "The answer has a property \"confrim\" that this form does not ask for; it asks for \"confirm\"."
    );
}
