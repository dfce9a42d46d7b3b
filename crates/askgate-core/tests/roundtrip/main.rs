//! Property tests of the round trip a person's answer makes: a random form is
//! asked in every revision, a random valid answer is written as a client of
//! that revision would write it, and settling gives back exactly the values
//! given, each with its provenance. Wrong answers are refused naming the
//! field, arbitrary content never panics, settling is deterministic, and a
//! re-ask asks only what is still open or wrong.
//!
//! Run: `cargo test -p askgate-core --test roundtrip` (a few seconds in a
//! debug build). `PROPTEST_CASES=3000` runs every property deeper. The module
//! `model` describes fields and their values; `strategies` generates them.

mod model;
mod strategies;

use askgate_core::{Ask, Form, Outcome, Provenance, Response, Revision, Step};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use serde_json::{Map, Value as Json, json};

use model::*;
use strategies::*;

// ---------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------

/// `cases` per property, unless `PROPTEST_CASES` asks for a deeper (or quicker) run.
fn config(cases: u32) -> ProptestConfig {
    let defaults = ProptestConfig::default();
    let cases = if std::env::var_os("PROPTEST_CASES").is_some() {
        defaults.cases
    } else {
        cases
    };
    // No regression files: this suite writes nothing beside itself.
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..defaults
    }
}

fn ask_for(case: &FormCase) -> Result<Ask, TestCaseError> {
    Ask::new(case.form()).map_err(|e| TestCaseError::fail(format!("the form is askable, but: {e}")))
}

/// The content answering every field the person answers, as a client of `revision` writes it.
fn valid_content(case: &FormCase, ask: &Ask, revision: Revision) -> Map<String, Json> {
    ask.content_for(revision, &case.answers())
}

/// Replace everything the content says about field `target` with `bad`.
fn corrupt(content: &mut Map<String, Json>, target: &str, bad: &Bad) {
    content.retain(|name, _| !belongs(name, target));
    for (suffix, json) in bad {
        let name = if suffix.is_empty() {
            target.to_owned()
        } else {
            format!("{target}.{suffix}")
        };
        content.insert(name, json.clone());
    }
}

/// The values settle gave: supplied ones kept, answered ones exactly as
/// given, left-out ones defaulted, and nothing else. `answered(i)`: whether
/// the person answered field `i` in some attempt.
fn check_values(
    case: &FormCase,
    outcome: &Step,
    answered: impl Fn(usize) -> bool,
) -> Result<(), TestCaseError> {
    let Step::Settled(Outcome::Accepted { values }) = outcome else {
        return Err(TestCaseError::fail(format!(
            "expected an accepted outcome, got {outcome:?}"
        )));
    };
    let mut expected = Vec::new();
    for (i, field) in case.fields.iter().enumerate() {
        let value = match (&field.supplied, answered(i), &field.default) {
            (Some(supplied), _, _) => Some((Provenance::Supplied, &supplied.expect)),
            (None, true, _) => Some((Provenance::Answered, &field.answer.expect)),
            (None, false, Some(default)) => Some((Provenance::Defaulted, &default.expect)),
            (None, false, None) => None,
        };
        if let Some((source, value)) = value {
            expected.push((id(i), source, value.clone()));
        }
    }
    let got: Vec<(String, Provenance, Json)> = values
        .iter()
        .map(|s| (s.id.to_string(), s.source, s.value.to_json()))
        .collect();
    prop_assert_eq!(got, expected);
    Ok(())
}

fn round_trip(case: &FormCase, revision: Revision) -> Result<(), TestCaseError> {
    let ask = ask_for(case)?;
    let open: Vec<String> = case.open().into_iter().map(id).collect();
    prop_assert_eq!(
        ask.open_fields().collect::<Vec<_>>(),
        open.iter().map(String::as_str).collect::<Vec<_>>()
    );
    if open.is_empty() {
        prop_assert!(
            ask.request(revision).is_err(),
            "nothing to ask, so no request"
        );
        let step = ask.settle_without_asking().map(Step::Settled);
        let step =
            step.ok_or_else(|| TestCaseError::fail("nothing is open, so the ask settles at once"))?;
        return check_values(case, &step, |_| false);
    }
    let request = ask
        .request(revision)
        .map_err(|e| TestCaseError::fail(format!("the ask can be requested in {revision}: {e}")))?;
    let asked: Vec<&str> = request.requested_schema.names().collect();
    for name in &asked {
        prop_assert!(
            open.iter().any(|id| belongs(name, id)),
            "{name} is asked, but its field is not open"
        );
    }
    for id in &open {
        prop_assert!(
            asked.iter().any(|name| belongs(name, id)),
            "open field {id} is not asked"
        );
    }
    let content = valid_content(case, &ask, revision);
    for name in content.keys() {
        prop_assert!(
            asked.contains(&name.as_str()),
            "the answer uses {name}, which the request does not ask"
        );
    }
    let step = ask.settle(revision, &Response::accept(content.clone()));
    check_values(case, &step, |i| case.fields[i].answers()).map_err(|e| {
        TestCaseError::fail(format!(
            "{e}\nin {revision}, content {}",
            Json::Object(content)
        ))
    })
}

/// Everything a person or a caller can observe of a step.
fn fingerprint(step: &Step, revision: Revision) -> String {
    match step {
        Step::Settled(outcome) => {
            serde_json::to_string(outcome).unwrap_or_else(|e| format!("unserializable: {e}"))
        }
        Step::ReAsk(again) => format!(
            "re-ask {} of {}; reasons {:?}; open {:?}; values {}; request {}",
            again.attempt(),
            again.max_attempts(),
            again.reasons(),
            again.open_fields().collect::<Vec<_>>(),
            serde_json::to_string(&again.values()).unwrap_or_default(),
            again
                .request(revision)
                .map_or_else(|e| e.to_string(), |r| r.to_json().to_string()),
        ),
    }
}

// ---------------------------------------------------------------------------
// Properties.
// ---------------------------------------------------------------------------

proptest! {
    #![proptest_config(config(256))]

    /// Property 1: for every revision, a valid answer written as that
    /// revision's client writes it settles to exactly the values given.
    #[test]
    fn a_valid_answer_settles_to_exactly_the_values_given(case in form_case()) {
        for revision in Revision::ALL {
            round_trip(&case, revision)?;
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// Property 2: the same ask and the same response give the same step,
    /// on the same ask, on a clone, and on the same form asked afresh.
    #[test]
    fn settling_the_same_response_twice_gives_the_same_step(
        (case, target) in wrong_case(),
        wrong in any::<bool>(),
    ) {
        let ask = ask_for(&case)?;
        let fresh = ask_for(&case)?;
        for revision in Revision::ALL {
            let mut content = valid_content(&case, &ask, revision);
            if wrong {
                corrupt(&mut content, &id(target), &case.fields[target].bad);
            }
            let response = Response::accept(content);
            let first = fingerprint(&ask.settle(revision, &response), revision);
            prop_assert_eq!(&first, &fingerprint(&ask.settle(revision, &response), revision));
            prop_assert_eq!(&first, &fingerprint(&ask.clone().settle(revision, &response), revision));
            prop_assert_eq!(&first, &fingerprint(&fresh.settle(revision, &response), revision));
        }
    }

    /// Property 3: a wrong answer to one field (or a property the form does
    /// not ask, named beside it) is refused with one reason that names it; with a single
    /// attempt allowed, the ask gives up instead.
    #[test]
    fn a_wrong_answer_is_refused_naming_the_field(
        (case, target) in wrong_case(),
        unknown in proptest::option::weighted(0.2, prop_oneof!["x[a-z]{1,8}", (0usize..8).prop_map(|i| format!("f{i}.nope!"))]),
        max_attempts in 1u32..=3,
    ) {
        let ask = ask_for(&case)?.with_max_attempts(max_attempts).expect("at least one attempt");
        for revision in Revision::ALL {
            let mut content = valid_content(&case, &ask, revision);
            if let Some(name) = &unknown {
                // A property the form does not ask for refuses the whole
                // answer, even beside otherwise valid values: it is named,
                // and nothing of the answer is kept.
                let mut extra = content.clone();
                extra.insert(name.clone(), json!("anything"));
                match ask.settle(revision, &Response::accept(extra)) {
                    Step::ReAsk(again) => {
                        prop_assert!(max_attempts > 1);
                        let quoted = format!("{:?}", name.chars().take(40).collect::<String>());
                        let named = again.reasons().iter().any(|r| r.contains(&quoted));
                        prop_assert!(named, "{} is named", quoted);
                        prop_assert_eq!(format!("{:?}", again.values()), format!("{:?}", ask.values()), "nothing of a refused answer is kept");
                    }
                    Step::Settled(Outcome::GaveUp { problems, .. }) => {
                        prop_assert_eq!(max_attempts, 1);
                        prop_assert!(problems.iter().any(|p| &p.field == name));
                    }
                    other => {
                        return Err(TestCaseError::fail(format!("{revision}: an extra property was not refused: {other:?}")));
                    }
                }
            }
            corrupt(&mut content, &id(target), &case.fields[target].bad);
            if let Some(name) = &unknown {
                // Beside a wrong value it is named too.
                content.insert(name.clone(), json!("anything"));
            }
            let named: Vec<String> = std::iter::once(title(target)).chain(unknown.clone()).collect();
            let shown = Json::Object(content.clone());
            let reasons: Vec<String> = match ask.settle(revision, &Response::accept(content)) {
                Step::ReAsk(again) => {
                    prop_assert!(max_attempts > 1, "a single attempt gives up rather than re-asks");
                    prop_assert_eq!(again.attempt(), 2);
                    again.reasons().to_vec()
                }
                Step::Settled(Outcome::GaveUp { attempts, problems, .. }) => {
                    prop_assert_eq!((max_attempts, attempts), (1, 1), "gave up too early");
                    problems.iter().map(|p| p.message()).collect()
                }
                other => {
                    return Err(TestCaseError::fail(format!("{revision}: {shown} was not refused: {other:?}")));
                }
            };
            prop_assert_eq!(reasons.len(), named.len(), "{}: one reason each for {}: {:?}", revision, shown, reasons);
            for (reason, name) in reasons.iter().zip(&named) {
                prop_assert!(reason.contains(name), "{}: {:?} does not name {}", revision, reasons, name);
            }
        }
    }

    /// Property 5: after one field is refused, the re-ask asks that field and
    /// the ones still open, never one answered correctly; answering it then
    /// settles with every earlier answer kept.
    #[test]
    fn a_re_ask_asks_only_the_fields_still_open_or_wrong((case, target) in wrong_case()) {
        let ask = ask_for(&case)?;
        for revision in Revision::ALL {
            let mut content = valid_content(&case, &ask, revision);
            corrupt(&mut content, &id(target), &case.fields[target].bad);
            let Step::ReAsk(again) = ask.settle(revision, &Response::accept(content)) else {
                return Err(TestCaseError::fail(format!("{revision}: the wrong answer is refused")));
            };
            // Optional fields left empty may be asked again or not; nothing else may.
            let may_ask: Vec<String> = (0..case.fields.len())
                .filter(|&i| i == target || case.fields[i].stays_open())
                .map(id)
                .collect();
            let open: Vec<&str> = again.open_fields().collect();
            prop_assert!(open.contains(&id(target).as_str()), "{revision}: the wrong field is asked again");
            for field in &open {
                prop_assert!(may_ask.iter().any(|id| id == field), "{revision}: {field} was settled but is open again");
            }
            let request = again.request(revision).map_err(|e| TestCaseError::fail(e.to_string()))?;
            for name in request.requested_schema.names() {
                prop_assert!(open.iter().any(|id| belongs(name, id)), "{revision}: the re-ask asks {name} again");
            }
            let target_id = id(target);
            prop_assert!(request.requested_schema.names().any(|name| belongs(name, &target_id)));
            prop_assert!(request.message.contains(&title(target)), "the re-ask says what was wrong");

            let fix: Map<String, Json> = [(target_id, case.fields[target].answer.send.clone())].into_iter().collect();
            let settled = again.settle(revision, &Response::accept(again.content_for(revision, &fix)));
            check_values(&case, &settled, |i| i == target || case.fields[i].answers())?;
        }
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// Property 4: whatever the content, for every revision, settling never
    /// panics, and neither do the re-ask's request and content.
    #[test]
    fn arbitrary_content_never_panics(
        (case, entries) in form_case().prop_flat_map(|case| {
            let names = case.property_names();
            let key = prop_oneof![select(names), "x.{0,8}", ".{0,8}"];
            (Just(case), proptest::collection::vec((key, arbitrary_json()), 0..8))
        }),
        accept in proptest::option::weighted(0.9, any::<bool>()),
    ) {
        let ask = ask_for(&case)?;
        let content: Map<String, Json> = entries.into_iter().collect();
        let response = match accept {
            Some(true) => Response::accept(content.clone()),
            Some(false) => Response { action: askgate_core::Action::Accept, content: None },
            None => Response::decline(),
        };
        for revision in Revision::ALL {
            if let Step::ReAsk(again) = ask.settle(revision, &response) {
                let _ = again.request(revision);
                let _ = again.message();
                let _ = again.content_for(revision, &content);
                let _ = fingerprint(&again.settle(revision, &response), revision);
            }
            let _ = ask.content_for(revision, &content);
        }
    }
}

// ---------------------------------------------------------------------------
// Regressions: library bugs the properties above found (now fixed), each
// reproduced on its own.
// ---------------------------------------------------------------------------

/// Settle `content` (2025-11-25) against a one-field form; `None` when the form is refused.
fn settle_one(field: Json, content: Json) -> Option<Step> {
    let form: Form =
        serde_json::from_value(json!({"message": "m", "fields": [field]})).expect("a Form");
    let Json::Object(content) = content else {
        panic!("content is an object");
    };
    let ask = Ask::new(form).ok()?;
    Some(ask.settle(Revision::V2025_11_25, &Response::accept(content)))
}

#[test]
fn an_integer_answer_is_never_settled_as_another_number() {
    let field =
        json!({"id": "n", "title": "N", "type": "integer", "maximum": 9_007_199_254_740_992_i64});
    let step = settle_one(field, json!({"n": 9_007_199_254_740_993_i64})).expect("askable");
    // Refused (it is above the maximum), or kept exactly: never 9007199254740992.
    if let Step::Settled(Outcome::Accepted { values }) = &step {
        let settled = values.get("n").map(|s| s.value.to_json());
        assert_eq!(settled, Some(json!(9_007_199_254_740_993_i64)), "{step:?}");
    }
}

#[test]
fn a_strict_zone_field_without_options_is_refused_or_answerable() {
    let field = json!({"id": "z", "title": "Z", "type": "zone", "strict": true});
    if let Some(step) = settle_one(field, json!({"z": "Europe/Paris"})) {
        assert!(
            matches!(step, Step::Settled(Outcome::Accepted { .. })),
            "{step:?}"
        );
    }
}

#[test]
fn a_multiple_choice_never_lists_a_value_twice() {
    let field = json!({"id": "c", "title": "C", "type": "choice", "multiple": true, "strict": false,
        "options": [{"value": "a", "label": "A"}, {"value": "b", "label": "B"}]});
    let step = settle_one(field, json!({"c": ["a"], "c.other": " a "})).expect("askable");
    let Step::Settled(Outcome::Accepted { values }) = &step else {
        panic!("\"a\" picked twice is still a valid answer: {step:?}");
    };
    assert_eq!(
        values.get("c").map(|s| s.value.to_json()),
        Some(json!(["a"]))
    );
}

#[test]
fn every_option_on_offer_can_be_picked() {
    let field = json!({"id": "c", "title": "C", "type": "choice",
        "options": [{"value": " ", "label": "Blank"}, {"value": "b", "label": "B"}]});
    if let Some(step) = settle_one(field, json!({"c": " "})) {
        assert!(
            matches!(step, Step::Settled(Outcome::Accepted { .. })),
            "{step:?}"
        );
    }
}
