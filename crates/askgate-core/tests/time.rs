//! Zones and instants: clock changes, leap days, ranges across a clock
//! change, and zones that do not exist.

use askgate_core::{
    Ask, Error, Form, FormError, Instant, Outcome, ProblemKind, Response, Revision, Step, Value,
};
use serde_json::{Value as Json, json};

fn ask(fields: Json) -> Ask {
    let form: Form =
        serde_json::from_value(json!({"message": "m", "fields": fields})).expect("a form");
    Ask::new(form).expect("askable")
}

/// Settle one field's answer: its value, or the kind of the problem.
fn answer(ask: &Ask, content: Json) -> Result<Value, ProblemKind> {
    let Json::Object(content) = content else {
        panic!("an object")
    };
    let once = ask.clone().with_max_attempts(1).expect("one attempt");
    match once.settle(Revision::V2025_11_25, &Response::accept(content)) {
        Step::Settled(Outcome::Accepted { values }) => Ok(values
            .iter()
            .next()
            .expect("one field settled")
            .value
            .clone()),
        Step::Settled(Outcome::GaveUp { problems, .. }) => Err(problems[0].kind.clone()),
        other => panic!("unexpected step {other:?}"),
    }
}

fn paris_instant() -> Ask {
    ask(json!([{"id": "at", "title": "At", "type": "instant", "zone": "Europe/Paris"}]))
}

/// An instant field without a zone: an answer carries its own offset.
fn zoneless_instant() -> Ask {
    ask(json!([{"id": "at", "title": "At", "type": "instant"}]))
}

/// The code of the problem a zoneless instant field finds in `text`.
fn zoneless_refusal(text: &str) -> &'static str {
    let refused = answer(&zoneless_instant(), json!({"at": text}));
    refused.expect_err("the answer is refused").code()
}

fn instant_text(value: Value) -> String {
    match value {
        Value::Instant(instant) => instant.to_string(),
        other => panic!("not an instant: {other:?}"),
    }
}

#[test]
fn a_local_time_in_the_spring_gap_is_refused() {
    let error =
        answer(&paris_instant(), json!({"at": "2026-03-29T02:30:00"})).expect_err("skipped");
    assert_eq!(error.code(), "skipped_local_time");
}

#[test]
fn a_local_time_in_the_autumn_overlap_is_refused_until_the_offset_is_given() {
    let ask = paris_instant();
    let error = answer(&ask, json!({"at": "2026-10-25T02:30:00"})).expect_err("ambiguous");
    assert_eq!(error.code(), "ambiguous_local_time");
    let first = answer(&ask, json!({"at": "2026-10-25T02:30:00+02:00"})).expect("the first 02:30");
    let second =
        answer(&ask, json!({"at": "2026-10-25T02:30:00+01:00"})).expect("the second 02:30");
    assert_eq!(instant_text(first), "2026-10-25T02:30:00+02:00");
    assert_eq!(instant_text(second), "2026-10-25T02:30:00+01:00");
}

#[test]
fn an_instant_given_in_utc_is_shown_in_the_fields_zone() {
    let value = answer(&paris_instant(), json!({"at": "2026-07-01T07:00:00Z"})).expect("valid");
    assert_eq!(instant_text(value), "2026-07-01T09:00:00+02:00");
}

#[test]
fn a_zone_annotation_must_agree_with_the_offset() {
    let ask = zoneless_instant();
    let error = answer(
        &ask,
        json!({"at": "2026-07-01T09:00:00+01:00[Europe/Paris]"}),
    )
    .expect_err("mismatch");
    assert_eq!(error.code(), "offset_mismatch");
    let value = answer(
        &ask,
        json!({"at": "2026-07-01T09:00:00+02:00[Europe/Paris]"}),
    )
    .expect("agrees");
    assert_eq!(instant_text(value), "2026-07-01T09:00:00+02:00");
    let value = answer(&ask, json!({"at": "2026-07-01T09:00:00[America/New_York]"}))
        .expect("local in the named zone");
    assert_eq!(instant_text(value), "2026-07-01T09:00:00-04:00");
}

#[test]
fn a_local_time_needs_a_zone_to_be_read_in() {
    assert_eq!(zoneless_refusal("2026-07-01T09:00:00"), "no_offset");
}

#[test]
fn leap_days_exist_only_in_leap_years() {
    let ask = ask(json!([{"id": "day", "title": "Day", "type": "date"}]));
    for valid in ["2024-02-29", "2000-02-29"] {
        assert_eq!(
            answer(&ask, json!({"day": valid})).expect(valid),
            Value::Date(valid.parse().expect("a date"))
        );
    }
    for invalid in ["2025-02-29", "2100-02-29", "2026-04-31"] {
        assert_eq!(
            answer(&ask, json!({"day": invalid}))
                .expect_err(invalid)
                .code(),
            "no_such_date"
        );
    }
    for malformed in ["2026-2-1", "20260201", "2026-02-01T00:00:00", "tomorrow"] {
        assert_eq!(
            answer(&ask, json!({"day": malformed}))
                .expect_err(malformed)
                .code(),
            "not_date"
        );
    }
}

/// The two ends of a Paris time range answered `from` and `to`.
fn paris_range(from: &str, to: &str) -> (Instant, Instant) {
    let ask =
        ask(json!([{"id": "w", "title": "Window", "type": "time_range", "zone": "Europe/Paris"}]));
    let value = answer(&ask, json!({"w.from": from, "w.to": to})).expect("a valid range");
    let Value::TimeRange { from, to } = value else {
        panic!("a range")
    };
    (from, to)
}

#[test]
fn a_range_across_the_spring_change_is_an_hour_shorter_than_the_clock_says() {
    let (from, to) = paris_range("2026-03-29T01:00:00", "2026-03-29T04:00:00");
    assert_eq!(from.to_string(), "2026-03-29T01:00:00+01:00");
    assert_eq!(to.to_string(), "2026-03-29T04:00:00+02:00");
    assert_eq!((to.timestamp - from.timestamp).as_hours(), 2);
}

#[test]
fn a_range_that_looks_backwards_on_the_clock_but_is_forwards_in_time_is_accepted() {
    // 02:45 at +02:00 comes before 02:15 at +01:00 on the night the clocks go back.
    let (from, to) = paris_range("2026-10-25T02:45:00+02:00", "2026-10-25T02:15:00+01:00");
    assert_eq!((to.timestamp - from.timestamp).as_mins(), 30);
}

#[test]
fn unknown_zones_are_refused_with_the_closest_name() {
    let ask = ask(json!([{"id": "tz", "title": "Zone", "type": "zone"}]));
    let error = answer(&ask, json!({"tz": "America/Sao_Paolo"})).expect_err("misspelled");
    let ProblemKind::UnknownZone { suggestion, .. } = error else {
        panic!("unknown zone")
    };
    assert_eq!(suggestion.as_deref(), Some("America/Sao_Paulo"));
    assert_eq!(
        answer(&ask, json!({"tz": "Nowhere"}))
            .expect_err("unknown")
            .code(),
        "unknown_zone"
    );
    assert_eq!(
        answer(&ask, json!({"tz": "europe/paris"})).expect("any case"),
        Value::Zone("Europe/Paris".into())
    );
}

#[test]
fn a_declared_zone_must_exist() {
    let form: Form = serde_json::from_value(json!({"message": "m", "fields": [
        {"id": "w", "title": "Window", "type": "time_range", "zone": "Atlantis/Capital"}]}))
    .expect("parses");
    assert!(matches!(
        Ask::new(form),
        Err(Error::Form(FormError::UnknownZone { .. }))
    ));
}

#[test]
fn a_strict_zone_choice_accepts_only_its_options() {
    let ask = ask(
        json!([{"id": "tz", "title": "Zone", "type": "zone", "strict": true,
        "options": [{"value": "Europe/Paris", "label": "Paris"}]}]),
    );
    assert_eq!(
        answer(&ask, json!({"tz": "Paris"})).expect("by label"),
        Value::Zone("Europe/Paris".into())
    );
    assert_eq!(
        answer(&ask, json!({"tz": "Asia/Tokyo"}))
            .expect_err("not offered")
            .code(),
        "not_on_offer"
    );
}

/// A settled value, given back as a supplied value, reads as itself.
fn resupplied(field: Json, value: &Value) -> Value {
    let form: Form = serde_json::from_value(json!({"message": "m", "fields": [field],
        "supplied": {"f": value.to_json()}}))
    .expect("a form");
    let ask = Ask::new(form).expect("the settled value is valid as supplied");
    ask.values().iter().next().expect("supplied").value.clone()
}

#[test]
fn a_field_with_a_zone_shows_every_instant_in_it_and_reads_it_back_unchanged() {
    let field = json!({"id": "f", "title": "F", "type": "instant", "zone": "America/New_York"});
    let ask = ask(json!([field.clone()]));
    let value = answer(
        &ask,
        json!({"f": "2026-07-01T09:30:00+02:00[Europe/Paris]"}),
    )
    .expect("valid");
    assert_eq!(instant_text(value.clone()), "2026-07-01T03:30:00-04:00");
    assert_eq!(resupplied(field, &value), value);
}

#[test]
fn an_offset_with_seconds_is_not_rfc_3339() {
    assert_eq!(
        zoneless_refusal("2026-07-01T09:30:00+05:30:15"),
        "not_instant"
    );
}

#[test]
fn a_historic_offset_in_seconds_is_written_in_utc_and_reads_back_as_the_same_moment() {
    // Paris kept local mean time, +00:09:21, until 1891.
    let field = json!({"id": "f", "title": "F", "type": "instant", "zone": "Europe/Paris"});
    let ask = ask(json!([field.clone()]));
    let value = answer(&ask, json!({"f": "1850-01-01T12:00:00"})).expect("valid");
    assert_eq!(instant_text(value.clone()), "1850-01-01T11:50:39+00:00");
    assert_eq!(resupplied(field, &value), value);
}

#[test]
fn an_option_label_never_shadows_what_a_value_says() {
    // The second option's label is the first option's moment, written out.
    let field = json!({"id": "f", "title": "F", "type": "instant", "options": [
        {"value": "2026-07-01T07:30:00Z", "label": "Early"},
        {"value": "2026-07-01T09:30:00Z", "label": "2026-07-01T07:30:00+00:00"}]});
    let instant_ask = ask(json!([field.clone()]));
    let value = answer(&instant_ask, json!({"f": "2026-07-01T07:30:00Z"})).expect("valid");
    assert_eq!(instant_text(value.clone()), "2026-07-01T07:30:00+00:00");
    assert_eq!(resupplied(field, &value), value);

    let zones = json!({"id": "f", "title": "F", "type": "zone",
        "options": [{"value": "UTC", "label": "Europe/Paris"}]});
    let zone_ask = ask(json!([zones.clone()]));
    let value = answer(&zone_ask, json!({"f": "europe/paris"})).expect("a zone name");
    assert_eq!(value, Value::Zone("Europe/Paris".into()));
    assert_eq!(resupplied(zones, &value), value);
}
