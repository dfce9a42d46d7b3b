//! How a person's response becomes an outcome: provenance, defaults,
//! re-asks that ask only what is still open, and decline/cancel as data.

mod common;

use askgate_core::{Ask, Outcome, Provenance, Response, Revision, Step};
use serde_json::{Map, Value as Json, json};

fn content(json: Json) -> Map<String, Json> {
    match json {
        Json::Object(map) => map,
        _ => panic!("content is an object"),
    }
}

fn accepted(step: Step) -> askgate_core::Values {
    match step {
        Step::Settled(Outcome::Accepted { values }) => values,
        other => panic!("expected an accepted outcome, got {other:?}"),
    }
}

fn deploy() -> Ask {
    Ask::new(common::form("every_kind")).expect("askable")
}

fn valid_answer() -> Json {
    json!({
        "contact": "ops@example.com",
        "replicas": 3,
        "dry_run": false,
        "checks": ["smoke"],
        "deadline": "2026-12-03T17:00:00Z",
        "oncall_zone": "Asia/Tokyo"
    })
}

/// The valid answer with `changes` made to it, settled on 2025-11-25.
fn settle_changed(changes: Json) -> Step {
    let mut answer = content(valid_answer());
    answer.extend(content(changes));
    deploy().settle(Revision::V2025_11_25, &Response::accept(answer))
}

#[test]
fn decline_and_cancel_are_outcomes_not_errors() {
    let ask = deploy();
    for revision in Revision::ALL {
        assert!(matches!(
            ask.settle(revision, &Response::decline()),
            Step::Settled(Outcome::Declined)
        ));
        assert!(matches!(
            ask.settle(revision, &Response::cancel()),
            Step::Settled(Outcome::Cancelled)
        ));
    }
}

#[test]
fn fields_left_empty_take_their_defaults_and_say_so() {
    let values = accepted(deploy().settle(
        Revision::V2025_06_18,
        &Response::accept(content(valid_answer())),
    ));
    for defaulted in [
        "name", "ratio", "env", "reason", "freeze", "start", "office", "window",
    ] {
        assert_eq!(
            values.get(defaulted).expect(defaulted).source,
            Provenance::Defaulted,
            "{defaulted}"
        );
    }
    assert_eq!(
        values.get("reason").expect("reason").value.to_json(),
        "hotfix for INC-12"
    );
    assert_eq!(
        values.get("contact").expect("contact").source,
        Provenance::Answered
    );
    assert!(
        values.get("runbook").is_none(),
        "an optional field left empty has no value"
    );
}

#[test]
fn a_blank_string_counts_as_left_empty() {
    let values = accepted(settle_changed(json!({"name": "   "})));
    assert_eq!(
        values.get("name").expect("name").source,
        Provenance::Defaulted
    );
}

#[test]
fn an_option_label_is_read_as_its_value() {
    let values = accepted(settle_changed(json!({"env": "Production"})));
    assert_eq!(values.get("env").expect("env").value.to_json(), "prod");
}

#[test]
fn a_2025_06_18_multi_select_is_read_from_its_checkboxes_in_option_order() {
    let mut answer = valid_answer();
    let answer = answer.as_object_mut().expect("object");
    answer.remove("checks");
    answer.insert("checks.load".into(), json!(true));
    answer.insert("checks.smoke".into(), json!(true));
    answer.insert("checks.chaos".into(), json!(false));
    let values =
        accepted(deploy().settle(Revision::V2025_06_18, &Response::accept(answer.clone())));
    assert_eq!(
        values.get("checks").expect("checks").value.to_json(),
        json!(["smoke", "load"])
    );
}

#[test]
fn a_required_multi_select_with_nothing_picked_is_refused() {
    let Step::ReAsk(next) = settle_changed(json!({"checks": []})) else {
        panic!("nothing picked is refused")
    };
    assert_eq!(next.reasons(), ["Checks to run: pick at least 1 option."]);
}

#[test]
fn supplied_values_are_never_asked_and_never_overwritten() {
    let ask = Ask::new(common::form("suggested")).expect("askable");
    let request = ask.request(Revision::V2025_11_25).expect("askable");
    assert!(request.requested_schema.property("service").is_none());
    let answer = json!({"service": "other-api", "when": "Tomorrow 9am", "tz": "Europe/London"});
    let values = accepted(ask.settle(Revision::V2025_11_25, &Response::accept(content(answer))));
    let service = values.get("service").expect("service");
    assert_eq!(
        (service.value.to_json(), service.source),
        (json!("billing-api"), Provenance::Supplied)
    );
}

#[test]
fn a_reask_asks_only_what_is_still_open_or_wrong_and_keeps_what_was_answered() {
    let Step::ReAsk(next) = settle_changed(json!({"replicas": 40, "contact": "not-an-email"}))
    else {
        panic!("refused")
    };
    assert_eq!(next.attempt(), 2);
    let asked: Vec<&str> = next.open_fields().collect();
    assert_eq!(asked, ["contact", "replicas"]);
    let request = next.request(Revision::V2025_11_25).expect("askable");
    let properties: Vec<&str> = request.requested_schema.names().collect();
    assert_eq!(properties, ["contact", "replicas"]);

    let fixed = json!({"contact": "ops@example.com", "replicas": 4});
    let values = accepted(next.settle(Revision::V2025_11_25, &Response::accept(content(fixed))));
    assert_eq!(
        values.get("dry_run").expect("kept").source,
        Provenance::Answered
    );
    assert_eq!(
        values.get("name").expect("kept").source,
        Provenance::Defaulted
    );
    assert_eq!(values.get("replicas").expect("fixed").value.to_json(), 4);
    let order: Vec<&str> = values.iter().map(|s| &*s.id).collect();
    assert_eq!(
        order[..3],
        ["name", "contact", "ratio"],
        "values stay in form order"
    );
}

#[test]
fn an_ask_resumes_from_its_record_exactly_where_it_was() {
    let Step::ReAsk(next) = settle_changed(json!({"replicas": 0})) else {
        panic!("refused")
    };
    let stored = serde_json::to_string(&next.to_record()).expect("serializes");
    let resumed =
        Ask::from_record(serde_json::from_str(&stored).expect("deserializes")).expect("resumes");
    assert_eq!(resumed.attempt(), next.attempt());
    assert_eq!(resumed.message(), next.message());
    let fix = Response::accept(content(json!({"replicas": 2})));
    let a = format!("{:?}", accepted(next.settle(Revision::V2025_11_25, &fix)));
    let b = format!(
        "{:?}",
        accepted(resumed.settle(Revision::V2025_11_25, &fix))
    );
    assert_eq!(a, b);
}

#[test]
fn only_properties_that_are_the_one_way_to_answer_are_required() {
    let request = deploy().request(Revision::V2025_11_25).expect("askable");
    // Required with no default and a single property; not: defaults, optional
    // fields, choices with free entry, and the ends of a defaulted range.
    assert_eq!(
        request.requested_schema.required,
        [
            "contact",
            "replicas",
            "dry_run",
            "checks",
            "deadline",
            "oncall_zone"
        ]
    );
}

#[test]
fn the_same_response_always_settles_to_the_same_bytes() {
    let ask = deploy();
    let response = Response::accept(content(valid_answer()));
    let first = serde_json::to_string(&accepted(ask.settle(Revision::V2025_11_25, &response)))
        .expect("json");
    let second = serde_json::to_string(&accepted(ask.settle(Revision::V2025_11_25, &response)))
        .expect("json");
    assert_eq!(first, second);
}

/// What a step comes to, comparable: the outcome, or the re-ask's record.
#[derive(Debug, PartialEq)]
enum Came {
    Outcome(Outcome),
    ReAsk(Box<askgate_core::AskRecord>),
}

fn settled_as(step: Step) -> Came {
    match step {
        Step::Settled(outcome) => Came::Outcome(outcome),
        Step::ReAsk(again) => Came::ReAsk(Box::new(again.to_record())),
    }
}

#[test]
fn an_answer_settles_the_same_from_its_text_as_from_its_parsed_map() {
    let ask = deploy();
    let answers = [
        serde_json::to_string(&valid_answer()).expect("serializes"),
        // A later duplicate replaces the earlier value, as in a parsed map.
        r#"{"replicas": 99, "contact": "ops@example.com", "replicas": 3, "dry_run": false,
            "checks": ["smoke"], "deadline": "2026-12-03T17:00:00Z", "oncall_zone": "Asia/Tokyo"}"#
            .to_owned(),
        // Unknown names are refused once each, in the order they first appear.
        r#"{"zzz": 1, "replicas": 3, "a\u0062c": 2, "zzz": 3, "checks.smoke": true}"#.to_owned(),
        // Wrong values, escaped names and an empty answer.
        r#"{"repl\u0069cas": "many", "deadline": "tomorrow", "oncall_zone": "Mars/Base"}"#
            .to_owned(),
        "{}".to_owned(),
    ];
    for text in answers {
        let map: Map<String, Json> = serde_json::from_str(&text).expect("an object");
        let from_map = ask.settle(Revision::V2025_06_18, &Response::accept(map));
        let from_text = ask
            .settle_text(Revision::V2025_06_18, &text)
            .expect("an object");
        assert_eq!(settled_as(from_text), settled_as(from_map), "{text}");
    }
}

#[test]
fn answer_text_that_is_not_an_object_says_where_and_never_echoes_the_answer() {
    let ask = deploy();
    for text in [
        "\"hunter2-secret\"",
        "{\"replicas\": \"hunter2-secret\"",
        "[\"hunter2-secret\"]",
    ] {
        let error = ask
            .settle_text(Revision::V2025_11_25, text)
            .expect_err("not one object");
        let message = askgate_core::Error::from(error).to_string();
        assert!(!message.contains("hunter2"), "{text}: {message}");
        assert!(message.contains("not one JSON object"), "{message}");
        assert!(message.contains("line 1, column"), "{message}");
    }
}

#[test]
fn answer_text_that_is_not_one_object_is_an_error() {
    let ask = deploy();
    for text in ["[]", "\"replicas\"", "{\"replicas\": 3", "{} {}", ""] {
        assert!(
            ask.settle_text(Revision::V2025_11_25, text).is_err(),
            "{text:?}"
        );
    }
}
