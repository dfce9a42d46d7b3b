//! What a programmer and a person read when something is wrong: typed
//! errors (the caller's misuse apart from the person's answer), each
//! naming what was wrong and what was expected.

use std::time::Duration;

use askgate_core::{Ask, Surface};
use askgate_mcp::client::{AnswerError, Elicitation, Kind, Mismatch, Parking, Property, Requested};
use askgate_mcp::stored::{self, Act, StoredRequest};
use askgate_mcp::{Error, InboxLinks, Misuse};
use serde_json::{Map, json};

#[test]
fn a_bad_inbox_url_is_the_callers_misuse_and_says_what_was_expected() {
    let relative = InboxLinks::new("inbox/asks").expect_err("a relative URL");
    assert!(
        matches!(&relative, Misuse::InboxUrl { url, .. } if url == "inbox/asks"),
        "{relative:?}"
    );
    // The crate's one error carries it as the caller's misuse.
    let as_error: Error = relative.clone().into();
    assert!(matches!(as_error, Error::Misuse(_)), "{as_error:?}");
    let text = relative.to_string();
    assert!(
        text.contains("\"inbox/asks\"") && text.contains("expected one like https://"),
        "{text}"
    );

    let hostless = InboxLinks::new("mailto:ops").expect_err("a URL without a host");
    assert!(
        matches!(hostless, Misuse::InboxUrlWithoutHost { .. }),
        "{hostless:?}"
    );
}

#[test]
fn a_refused_answer_in_the_inbox_names_its_field_and_what_was_expected() {
    let ask = Ask::new(askgate_testkit::deploy_form(json!([]))).expect("askable");
    let request = StoredRequest::form(&ask).to_json();
    let mut content = Map::new();
    content.insert("env".into(), json!("moon"));
    let refused = stored::settle(&request, Act::Answer(content), "alice", Surface::Cli)
        .expect_err("not an option");
    assert_eq!(refused.reasons.len(), 1, "{refused:?}");
    assert_eq!(refused.reasons[0].field.as_deref(), Some("env"));
    let text = refused.to_string();
    assert!(
        text.contains("Environment") && text.contains("Staging, Production"),
        "{text}"
    );
}

#[test]
fn a_value_that_does_not_fit_says_why_without_repeating_it() {
    let property = Property {
        name: "replicas".into(),
        title: None,
        description: None,
        required: true,
        default: None,
        kind: Kind::Integer {
            minimum: Some(1.0),
            maximum: Some(5.0),
        },
    };
    assert_eq!(
        property.check(&json!(9)),
        Err(Mismatch::TooLarge { max: 5.0 })
    );
    assert_eq!(
        property
            .check(&json!(9))
            .expect_err("too large")
            .to_string(),
        "too large: at most 5"
    );
    assert_eq!(property.check(&json!(2.5)), Err(Mismatch::NotWhole));
    assert_eq!(property.check(&json!(3)), Ok(json!(3)));
}

#[tokio::test]
async fn a_wait_longer_than_time_itself_is_the_callers_misuse_and_nothing_is_parked() {
    let store = askgate_testkit::TempStore::open().await;
    let parking = Parking::new(store.store().clone())
        .with_timeout(Duration::MAX)
        .with_notice(false);
    let requested = Requested::from_json(
        "Which environment?",
        &json!({"properties": {"env": {"type": "string"}}}),
    )
    .expect("a form");
    let error = parking
        .answer(&Elicitation::Form(requested), "deployer")
        .await
        .expect_err("no expiry can be written down");
    assert!(
        matches!(
            error,
            AnswerError::Misuse(Misuse::LifetimeOutOfRange { .. })
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("Parking::with_timeout"),
        "{error}"
    );
    let pending = store.store().pending(10, None).await.expect("lists");
    assert!(pending.asks.is_empty(), "nothing is parked");
}
