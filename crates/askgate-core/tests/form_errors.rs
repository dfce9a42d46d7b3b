//! Forms MCP cannot carry are refused with a typed error that says what to
//! change — never widened into something looser.

use askgate_core::{Ask, Error, Form, FormError, Misuse, Revision};
use serde_json::json;

fn ask(form: serde_json::Value) -> Result<Ask, Error> {
    let form: Form = serde_json::from_value(form).expect("the declaration parses");
    Ask::new(form)
}

fn field(extra: serde_json::Value) -> serde_json::Value {
    json!({"message": "m", "fields": [extra]})
}

/// A form of one field `id` of type `kind` offering `options`, titled as
/// its id in capitals.
fn offering(id: &str, kind: &str, options: serde_json::Value) -> serde_json::Value {
    field(json!({"id": id, "title": id.to_uppercase(), "type": kind, "options": options}))
}

#[test]
fn every_form_error_message() {
    // Each case: what is wrong, and the form declaring it; object keys keep
    // their order, so the report does too.
    let cases = json!({
        "empty form": {"message": "m", "fields": []},
        "bad id": field(json!({"id": "a b", "title": "A", "type": "text"})),
        "duplicate id": {"message": "m", "fields": [
            {"id": "a", "title": "A", "type": "text"}, {"id": "a", "title": "B", "type": "boolean"}]},
        "collision with .other": {"message": "m", "fields": [
            {"id": "env", "title": "Env", "type": "choice", "strict": false, "options": [{"value": "x", "label": "X"}]},
            {"id": "env.other", "title": "Other", "type": "text"}]},
        "collision with .from": {"message": "m", "fields": [
            {"id": "w.from", "title": "From", "type": "text"},
            {"id": "w", "title": "Window", "type": "time_range"}]},
        "option value collides with .other": field(json!({"id": "c", "title": "C", "type": "choice",
            "multiple": true, "strict": false, "options": [{"value": "other", "label": "Other"}]})),
        "number with options": offering("n", "number", json!([{"value": "1", "label": "One"}])),
        "boolean with options": offering("b", "boolean", json!([{"value": "yes", "label": "Yes"}])),
        "choice without options": offering("c", "choice", json!([])),
        "duplicate option": offering("c", "choice",
            json!([{"value": "a", "label": "A"}, {"value": "a", "label": "B"}])),
        "duplicate hotkey": offering("c", "choice",
            json!([{"value": "a", "label": "A", "hotkey": "x"}, {"value": "b", "label": "B", "hotkey": "X"}])),
        "empty option value": offering("c", "choice", json!([{"value": "", "label": "Nothing"}])),
        "min above max": field(json!({"id": "n", "title": "N", "type": "integer", "minimum": 5, "maximum": 1})),
        "length bounds": field(json!({"id": "t", "title": "T", "type": "text", "min_length": 5, "max_length": 1})),
        "items on a single choice": field(json!({"id": "c", "title": "C", "type": "choice", "max_items": 2,
            "options": [{"value": "a", "label": "A"}]})),
        "more items than options": field(json!({"id": "c", "title": "C", "type": "choice", "multiple": true,
            "min_items": 3, "options": [{"value": "a", "label": "A"}]})),
        "unknown zone": field(json!({"id": "t", "title": "T", "type": "instant", "zone": "Europe/Atlantis"})),
        "bad zone option": offering("z", "zone", json!([{"value": "Nowhere/City", "label": "Nowhere"}])),
        "bad instant option": offering("t", "instant",
            json!([{"value": "2026-07-01T09:00:00", "label": "Nine"}])),
        "bad default": field(json!({"id": "n", "title": "N", "type": "integer", "maximum": 3, "default": 7})),
        "default not on offer": field(json!({"id": "c", "title": "C", "type": "choice", "default": "z",
            "options": [{"value": "a", "label": "A"}]})),
        "supplied unknown field": {"message": "m", "fields": [{"id": "a", "title": "A", "type": "text"}],
            "supplied": {"b": "x"}},
        "bad supplied value": {"message": "m", "fields": [{"id": "d", "title": "Day", "type": "date"}],
            "supplied": {"d": "2025-02-29"}}
    });
    let serde_json::Value::Object(cases) = cases else {
        unreachable!("the cases are one object")
    };
    let mut report = String::new();
    for (name, form) in cases {
        let error = ask(form).expect_err(&name);
        report.push_str(&format!("## {name}\n{error}\n\n"));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn a_sensitive_field_is_never_asked_in_form_mode() {
    let ask = ask(field(
        json!({"id": "pw", "title": "Password", "type": "text", "sensitive": true}),
    ))
    .expect("declaring a sensitive field is fine");
    assert!(ask.needs_url_mode());
    for revision in Revision::ALL {
        assert_eq!(
            ask.request(revision)
                .expect_err("form mode refuses secrets"),
            Error::Form(FormError::SensitiveField { field: "pw".into() })
        );
    }
}

#[test]
fn a_form_whose_every_field_is_supplied_settles_without_asking() {
    let ask = ask(
        json!({"message": "m", "fields": [{"id": "a", "title": "A", "type": "integer"}],
        "supplied": {"a": 4}}),
    )
    .expect("askable");
    assert_eq!(
        ask.request(Revision::V2025_11_25)
            .expect_err("nothing open"),
        Error::Misuse(Misuse::NothingToAsk),
        "asking a form with nothing open is the caller's bug: settle it instead"
    );
    let outcome = ask.settle_without_asking().expect("nothing to ask");
    insta::assert_json_snapshot!(outcome, @r#"
    {
      "outcome": "accepted",
      "values": {
        "a": {
          "value": 4,
          "source": "supplied"
        }
      }
    }
    "#);
}

#[test]
fn a_typo_in_a_constraint_is_a_parse_error_naming_the_key() {
    let error = serde_json::from_value::<Form>(field(
        json!({"id": "n", "title": "N", "type": "integer", "minimun": 1}),
    ))
    .expect_err("unknown key");
    assert!(error.to_string().contains("minimun"), "{error}");
}

#[test]
fn a_re_ask_cap_of_zero_is_misuse_of_the_api() {
    let ask = ask(field(json!({"id": "a", "title": "A", "type": "integer"}))).expect("askable");
    let error = ask.with_max_attempts(0).expect_err("zero attempts");
    assert_eq!(error, Error::Misuse(Misuse::ZeroAttempts));
    assert_eq!(
        error.to_string(),
        "the re-ask cap must allow at least one attempt"
    );
}

#[test]
fn a_form_error_reads_the_same_through_the_crate_error() {
    let error = ask(json!({"message": "m", "fields": []})).expect_err("no fields");
    assert_eq!(error, Error::Form(FormError::EmptyForm));
    assert_eq!(error.to_string(), FormError::EmptyForm.to_string());
}

#[test]
fn values_read_as_a_form_they_were_not_settled_from_are_misuse() {
    let mismatch = askgate_core::ValuesMismatch::Missing {
        field: "env".into(),
    };
    let error = Error::from(mismatch.clone());
    assert_eq!(error, Error::Misuse(Misuse::Values(mismatch.clone())));
    assert_eq!(error.to_string(), mismatch.to_string());
}
