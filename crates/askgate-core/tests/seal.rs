//! Sealed request state: a state opens only for the request it was issued
//! for, unaltered, before it expires.

use askgate_core::{Binding, Opened, Sealer, StateError, arguments_digest};
use jiff::Timestamp;
use proptest::prelude::*;
use serde_json::json;

fn binding() -> Binding {
    Binding {
        principal: "alice".into(),
        method: "tools/call".into(),
        name: "deploy".into(),
        arguments: arguments_digest(b"digest key", &json!({"env": "prod"})),
    }
}

fn at(text: &str) -> Timestamp {
    text.parse().expect("a timestamp")
}

fn sealed() -> (Sealer, String) {
    let sealer = Sealer::new([42u8; 32]);
    let state = sealer.seal(
        &binding(),
        at("2026-11-29T12:10:00Z"),
        "nonce-1",
        &json!({"ask": "a-1", "round": 2}),
    );
    (sealer, state)
}

/// The sealed state, opened for its own request at `now`.
fn open_at(now: &str) -> Result<Opened, StateError> {
    let (sealer, state) = sealed();
    sealer.open(&state, &binding(), at(now))
}

#[test]
fn a_state_opens_for_its_own_request_and_gives_back_what_it_carried() {
    let opened = open_at("2026-11-29T12:00:00Z").expect("opens");
    assert_eq!(opened.nonce, "nonce-1");
    assert_eq!(opened.carried, json!({"ask": "a-1", "round": 2}));
    assert_eq!(opened.expires_at, at("2026-11-29T12:10:00Z"));
}

#[test]
fn an_expired_state_is_refused_with_its_expiry() {
    let error = open_at("2026-11-29T12:10:00Z").expect_err("expired");
    assert_eq!(error, StateError::Expired(at("2026-11-29T12:10:00Z")));
    assert!(
        error
            .to_string()
            .contains("expired at 2026-11-29T12:10:00Z")
    );
}

#[test]
fn a_state_for_another_principal_request_or_arguments_is_foreign() {
    let (sealer, state) = sealed();
    let now = at("2026-11-29T12:00:00Z");
    let mut other = binding();
    other.principal = "mallory".into();
    assert_eq!(
        sealer.open(&state, &other, now),
        Err(StateError::Foreign("principal"))
    );
    let mut other = binding();
    other.name = "destroy".into();
    assert_eq!(
        sealer.open(&state, &other, now),
        Err(StateError::Foreign("request"))
    );
    let mut other = binding();
    other.arguments = arguments_digest(b"digest key", &json!({"env": "staging"}));
    assert_eq!(
        sealer.open(&state, &other, now),
        Err(StateError::Foreign("set of arguments"))
    );
}

#[test]
fn another_servers_key_and_garbage_are_refused() {
    let (_, state) = sealed();
    let stranger = Sealer::new([1u8; 32]);
    let now = at("2026-11-29T12:00:00Z");
    assert_eq!(
        stranger.open(&state, &binding(), now),
        Err(StateError::Tampered)
    );
    assert!(matches!(
        stranger.open("eyJhIjoxfQ", &binding(), now),
        Err(StateError::Malformed(_))
    ));
    assert!(matches!(
        stranger.open("as1.only-a-body", &binding(), now),
        Err(StateError::Malformed(_))
    ));
}

#[test]
fn a_rotated_key_still_opens_states_it_sealed() {
    let (_, state) = sealed();
    let rotated = Sealer::new([9u8; 32]).with_previous([42u8; 32]);
    assert!(
        rotated
            .open(&state, &binding(), at("2026-11-29T12:00:00Z"))
            .is_ok()
    );
}

proptest! {
    /// Changing any one character of a state makes it fail to open.
    #[test]
    fn any_altered_character_is_caught(index in any::<prop::sample::Index>(), replacement in "[A-Za-z0-9_.-]") {
        let (sealer, state) = sealed();
        let position = index.index(state.len());
        let original = &state[position..=position];
        prop_assume!(original != replacement);
        let mut altered = state.clone();
        altered.replace_range(position..=position, &replacement);
        let result = sealer.open(&altered, &binding(), at("2026-11-29T12:00:00Z"));
        prop_assert!(result.is_err(), "altered at {position}: {altered}");
    }
}

#[test]
fn a_refused_state_converts_into_the_crate_error_with_its_kind() {
    fn open(sealer: &Sealer, state: &str) -> Result<(), askgate_core::Error> {
        sealer.open(state, &binding(), at("2026-11-29T12:00:00Z"))?;
        Ok(())
    }
    let (sealer, _) = sealed();
    let error = open(&sealer, "as1.not-a-state").expect_err("malformed");
    assert!(
        matches!(error, askgate_core::Error::State(StateError::Malformed(_))),
        "{error:?}"
    );
}
