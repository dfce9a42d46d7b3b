//! The relay's own checks.

use askgate_mcp::input;
use rmcp::model::InputRequest;
use serde_json::json;
use tokio::sync::mpsc;

use super::ask::check;
use super::held::Held;
use super::inflight::Inflight;
use super::resume::{Resumable, ResumableAsk};
use super::*;

#[test]
fn a_resumed_call_gives_its_asks_their_old_keys_and_counts_on_past_them() {
    let (_asks, asked) = mpsc::unbounded_channel();
    let mut held: Held = Held::new(std::future::pending(), asked)
        .with_keys(vec!["upstream-3".into(), "upstream-5".into()]);
    assert_eq!(held.key(), "upstream-3");
    assert_eq!(held.key(), "upstream-5");
    assert_eq!(held.key(), "upstream-6", "never a key used before");
}

#[test]
fn a_carried_round_gives_the_server_its_own_keys_and_state_back() {
    let resumable = Resumable {
        asks: vec![ResumableAsk {
            ours: "upstream-1".into(),
            theirs: "name".into(),
            request: serde_json::to_value(name_form()).expect("serializes"),
        }],
        state: Some("theirs".into()),
    };
    let needed = resumable.needed().expect("its requests read back");
    let requests = needed.input_requests.expect("requests");
    assert_eq!(requests.keys().collect::<Vec<_>>(), ["name"]);
    assert_eq!(needed.request_state.as_deref(), Some("theirs"));
    assert_eq!(resumable.keys(), ["upstream-1"]);
    let broken = Resumable {
        asks: vec![ResumableAsk {
            request: json!({"method": "nonsense"}),
            ..resumable.asks[0].clone()
        }],
        state: None,
    };
    assert!(broken.needed().is_err());
}

fn name_form() -> InputRequest {
    input::from_json(&json!({
        "method": "elicitation/create",
        "params": {
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "age": {"type": "integer", "minimum": 0}
                },
                "required": ["name"]
            }
        }
    }))
    .expect("a form request")
}

#[test]
fn a_fitting_answer_reaches_the_server_in_canonical_form() {
    let answer = json!({"action": "accept", "content": {"name": "Ada", "age": 36.0}});
    let checked = check(&name_form(), &answer).expect("fits");
    assert_eq!(checked["content"], json!({"name": "Ada", "age": 36}));
}

#[test]
fn an_answer_that_does_not_fit_is_refused_naming_the_property_not_the_value() {
    for (content, expected) in [
        (json!({"age": 3}), "name is required"),
        (
            json!({"name": "Ada", "shoe": "42"}),
            "\"shoe\" was not asked for",
        ),
        (json!({"name": "Ada", "age": -7}), "age:"),
        (json!({"name": 4242}), "name:"),
    ] {
        let answer = json!({"action": "accept", "content": content});
        let why = check(&name_form(), &answer).expect_err("does not fit");
        assert!(why.contains(expected), "{why:?} should say {expected:?}");
        assert!(!why.contains("4242") && !why.contains("-7"), "{why:?}");
    }
}

#[test]
fn a_decline_is_passed_on_without_content() {
    let answer = json!({"action": "decline", "content": {"name": "Ada"}});
    let checked = check(&name_form(), &answer).expect("a decline is an answer");
    assert_eq!(checked, json!({"action": "decline"}));
}

#[test]
fn asks_go_to_the_call_in_flight_unless_several_people_have_calls_there() {
    let inflight = Inflight::default();
    assert!(matches!(inflight.route(), Route::NoCall));
    let (asks, _asked) = mpsc::unbounded_channel();
    let first = inflight.enter("call_1", "ada", asks.clone());
    let second = inflight.enter("call_2", "ada", asks.clone());
    assert!(matches!(inflight.route(), Route::Call(..)));
    let other = inflight.enter("call_3", "grace", asks);
    assert!(matches!(inflight.route(), Route::Ambiguous));
    drop(other);
    drop(first);
    assert!(matches!(inflight.route(), Route::Call(..)));
    drop(second);
    assert!(matches!(inflight.route(), Route::NoCall));
}
