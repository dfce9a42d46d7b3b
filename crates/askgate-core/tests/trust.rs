//! The trust rules over every combination of what they decide on: the
//! call's risk, what the client can show, what came back from asking, the
//! caller's `confirm: true`, and what earlier tries of the same call left —
//! with the texts the audit and the model read snapshotted.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use askgate_core::{
    Answered, Call, Channel, Earlier, Facts, Heard, Method, Reach, Risk, Ruling, Said, Trust, rule,
    withdrawn,
};

const PLACE: &str = "http://127.0.0.1:7878/asks/ask_1";
const RETRY_AS: &str = "files__delete_tree";

fn call(risk: Risk) -> Call<'static> {
    Call {
        server: "files",
        tool: "delete_tree",
        risk,
        why: None,
        preview: None,
        may_have_run: None,
    }
}

/// What the client can show, by name.
fn reaches() -> Vec<(&'static str, Reach)> {
    let reach = |form, url, inbox| Reach { form, url, inbox };
    vec![
        ("form", reach(true, false, true)),
        ("url only", reach(false, true, true)),
        ("nothing", reach(false, false, true)),
        ("nothing, no inbox", reach(false, false, false)),
    ]
}

/// What came back from the client, by name (`None`: not asked).
fn heards() -> Vec<(&'static str, Option<Answered>)> {
    let read = Some(Duration::from_secs(2));
    let instant = Some(Duration::from_millis(3));
    let answered = |heard, after| Some(Answered { heard, after });
    vec![
        ("not asked", None),
        (
            "ticked",
            answered(
                Heard::Accepted {
                    confirm: Some(true),
                },
                read,
            ),
        ),
        (
            "unticked",
            answered(
                Heard::Accepted {
                    confirm: Some(false),
                },
                read,
            ),
        ),
        (
            "accept, no field",
            answered(Heard::Accepted { confirm: None }, read),
        ),
        ("declined", answered(Heard::Declined, read)),
        ("cancelled", answered(Heard::Cancelled, read)),
        ("declined in 3 ms", answered(Heard::Declined, instant)),
        (
            "ticked in 3 ms",
            answered(
                Heard::Accepted {
                    confirm: Some(true),
                },
                instant,
            ),
        ),
        ("gave up", answered(Heard::GaveUp, read)),
        (
            "failed",
            answered(Heard::Failed("the client closed the request".into()), read),
        ),
        (
            "timed out",
            answered(Heard::TimedOut(Duration::from_secs(600)), None),
        ),
    ]
}

fn earliers() -> Vec<(&'static str, Earlier)> {
    vec![
        ("none", Earlier::Nothing),
        ("pending", Earlier::Pending),
        (
            "declined",
            Earlier::Refused {
                said: Said::Declined,
                by: Some("alice".into()),
                via: "web".into(),
            },
        ),
        (
            "approved",
            Earlier::Approved {
                by: Some("bob".into()),
                via: "cli".into(),
            },
        ),
    ]
}

/// A row of the table: what was ruled, and the texts as keys.
fn ruled(ruling: &Ruling, risk: Risk, texts: &mut BTreeMap<(String, String), usize>) -> String {
    let mut text = |audit: String, model: String| {
        let next = texts.len() + 1;
        let n = *texts.entry((audit, model)).or_insert(next);
        format!("T{n}")
    };
    match ruling {
        Ruling::Proceed(v) => format!("proceed {} [{}]", v.method.as_str(), {
            text(v.for_audit.clone(), v.for_model.clone())
        }),
        Ruling::Block(v) => format!(
            "blocked{} [{}]",
            if v.final_no { " final" } else { "" },
            text(v.for_audit.clone(), v.for_model.clone())
        ),
        Ruling::Ask(Channel::Form) => "ask by form".into(),
        Ruling::Ask(Channel::Url) => "ask by url".into(),
        Ruling::Wait(waiting) => {
            let v = waiting.verdict(&call(risk), PLACE, RETRY_AS);
            format!(
                "wait{} [{}]",
                if waiting.not_shown {
                    " (not shown)"
                } else {
                    ""
                },
                text(v.for_audit, v.for_model)
            )
        }
    }
}

/// Every combination at `trust`, as a table, with each distinct text once.
fn table(trust: Trust) -> String {
    let mut rows = String::new();
    let mut texts = BTreeMap::new();
    for risk in Risk::ALL {
        let call = call(risk);
        for (reach_name, reach) in reaches() {
            for (heard_name, answered) in heards() {
                for caller_confirmed in [false, true] {
                    for (earlier_name, earlier) in earliers() {
                        let ruling = rule(&Facts {
                            call: &call,
                            trust,
                            reach,
                            caller_confirmed,
                            earlier: &earlier,
                            answered: answered.as_ref(),
                        });
                        let _ = writeln!(
                            rows,
                            "{risk:<12} | {reach_name:<17} | {heard_name:<16} | {:<9} | {earlier_name:<8} => {}",
                            if caller_confirmed { "confirm" } else { "-" },
                            ruled(&ruling, risk, &mut texts)
                        );
                    }
                }
            }
        }
    }
    let mut by_number: Vec<_> = texts.into_iter().map(|(t, n)| (n, t)).collect();
    by_number.sort();
    let _ = writeln!(rows, "\ntexts (audit / model):");
    for (n, (audit, model)) in by_number {
        let _ = writeln!(rows, "T{n}: {audit}\n    model: {model}");
    }
    rows
}

fn trust(caller_confirm: Option<Risk>) -> Trust {
    Trust {
        caller_confirm,
        ..Trust::DEFAULT
    }
}

#[test]
fn every_combination_with_caller_confirm_at_medium_write() {
    insta::assert_snapshot!(table(trust(Some(Risk::MediumWrite))));
}

#[test]
fn by_default_only_a_person_approves() {
    for risk in Risk::ALL {
        for (_, reach) in reaches() {
            for (_, answered) in heards() {
                for (_, earlier) in earliers() {
                    let ruling = rule(&Facts {
                        call: &call(risk),
                        trust: Trust::DEFAULT,
                        reach,
                        caller_confirmed: true,
                        earlier: &earlier,
                        answered: answered.as_ref(),
                    });
                    if let Ruling::Proceed(verdict) = &ruling {
                        assert_ne!(verdict.method, Method::CallerConfirmed, "{ruling:?}");
                    }
                }
            }
        }
    }
}

/// Every fact but the risk and the caller's word, over every combination.
fn each(mut check: impl FnMut(Risk, Reach, Option<&Answered>, &Earlier, bool, Trust, Ruling)) {
    for trust in [
        trust(None),
        trust(Some(Risk::MediumWrite)),
        trust(Some(Risk::Destructive)),
    ] {
        for risk in Risk::ALL {
            for (_, reach) in reaches() {
                for (_, answered) in heards() {
                    for (_, earlier) in earliers() {
                        for caller_confirmed in [false, true] {
                            let ruling = rule(&Facts {
                                call: &call(risk),
                                trust,
                                reach,
                                caller_confirmed,
                                earlier: &earlier,
                                answered: answered.as_ref(),
                            });
                            check(
                                risk,
                                reach,
                                answered.as_ref(),
                                &earlier,
                                caller_confirmed,
                                trust,
                                ruling,
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_persons_no_is_final_whatever_the_caller_says() {
    each(|risk, _, answered, earlier, _, _, ruling| {
        if risk <= Risk::LowWrite {
            return;
        }
        let said_no = match answered {
            Some(answered) => {
                answered.after >= Some(Duration::from_millis(250))
                    && matches!(
                        answered.heard,
                        Heard::Declined
                            | Heard::Cancelled
                            | Heard::Accepted {
                                confirm: Some(false)
                            }
                    )
            }
            None => matches!(earlier, Earlier::Refused { .. }),
        };
        if said_no {
            let Ruling::Block(verdict) = &ruling else {
                panic!("a person's no let the call through: {ruling:?}");
            };
            assert!(verdict.final_no);
            assert!(verdict.for_model.contains("do not retry"));
            assert!(
                !verdict
                    .for_model
                    .contains("call it again with confirm: true")
            );
        }
    });
}

#[test]
fn the_callers_word_stands_in_only_where_no_ask_can_be_shown() {
    each(
        |risk, reach, answered, earlier, caller_confirmed, trust, ruling| {
            let Ruling::Proceed(verdict) = &ruling else {
                return;
            };
            if verdict.method == Method::CallerConfirmed {
                assert!(caller_confirmed);
                assert!(reach.shows_nothing(), "{reach:?}");
                assert!(answered.is_none());
                assert_eq!(*earlier, Earlier::Nothing);
                assert!(trust.caller_confirm.is_some_and(|most| risk <= most));
            }
        },
    );
}

#[test]
fn what_no_person_saw_never_runs_the_call_nor_reads_as_a_decision() {
    each(|risk, reach, answered, _, _, _, ruling| {
        let Some(answered) = answered else { return };
        if risk <= Risk::LowWrite {
            return;
        }
        let too_fast =
            answered.after < Some(Duration::from_millis(250)) && answered.after.is_some();
        let unseen = too_fast
            || matches!(
                answered.heard,
                Heard::Accepted { confirm: None }
                    | Heard::GaveUp
                    | Heard::Failed(_)
                    | Heard::TimedOut(_)
            );
        if !unseen {
            return;
        }
        match &ruling {
            Ruling::Wait(waiting) => {
                assert!(reach.inbox);
                assert!(waiting.not_shown);
                let verdict = waiting.verdict(&call(risk), PLACE, RETRY_AS);
                assert!(
                    verdict.for_audit.starts_with("not shown: "),
                    "{}",
                    verdict.for_audit
                );
                assert!(!verdict.for_audit.contains("the person"));
                assert!(!verdict.for_model.contains("confirm: true"));
            }
            Ruling::Block(verdict) => {
                assert!(!reach.inbox);
                assert!(!verdict.final_no);
            }
            other => panic!("an unseen answer decided {other:?}"),
        }
    });
}

#[test]
fn the_waiting_text_names_where_to_answer_and_nothing_that_approves() {
    let Ruling::Wait(waiting) = rule(&Facts {
        call: &call(Risk::Destructive),
        trust: Trust::DEFAULT,
        reach: Reach {
            form: false,
            url: false,
            inbox: true,
        },
        caller_confirmed: true,
        earlier: &Earlier::Nothing,
        answered: None,
    }) else {
        panic!("waits for the inbox")
    };
    let verdict = waiting.verdict(&call(Risk::Destructive), PLACE, RETRY_AS);
    assert!(verdict.for_model.contains(PLACE));
    assert!(verdict.for_model.contains("call files__delete_tree again"));
    assert!(!verdict.for_model.contains("askgate asks"));
    assert!(!verdict.for_model.contains("confirm: true"));
    assert!(
        verdict
            .for_audit
            .ends_with("the caller's confirm: true was not taken: caller_confirm is none, so only a person approves"),
        "{}",
        verdict.for_audit
    );
}

#[test]
fn a_cancelled_call_is_withdrawn_not_refused_by_a_person() {
    let verdict = withdrawn(&call(Risk::HighWrite));
    assert!(!verdict.proceed && !verdict.final_no);
    assert_eq!(verdict.method, Method::Blocked);
    assert!(verdict.for_audit.contains("cancelled by the caller"));
}

#[test]
fn an_answer_of_unknown_timing_is_taken_as_given() {
    let answered = Answered {
        heard: Heard::Declined,
        after: None,
    };
    let ruling = rule(&Facts {
        call: &call(Risk::MediumWrite),
        trust: Trust::DEFAULT,
        reach: Reach {
            form: true,
            url: false,
            inbox: true,
        },
        caller_confirmed: false,
        earlier: &Earlier::Nothing,
        answered: Some(&answered),
    });
    assert!(matches!(ruling, Ruling::Block(v) if v.final_no));
}

#[test]
fn a_call_that_may_have_run_goes_again_only_on_a_persons_word() {
    let at: jiff::Timestamp = "2026-12-02T10:31:07Z".parse().expect("a time");
    let mut checked = 0;
    each(
        |risk, reach, answered, earlier, caller_confirmed, trust, _| {
            let ran = Call {
                may_have_run: Some(at),
                ..call(risk)
            };
            let facts = Facts {
                call: &ran,
                trust,
                reach,
                caller_confirmed,
                earlier,
                answered,
            };
            let ruling = rule(&facts);
            if let Ruling::Proceed(verdict) = &ruling {
                // Only a person's answer lets it run again: in this round, or
                // in the inbox before it.
                assert_eq!(
                    verdict.method,
                    Method::Elicited,
                    "{risk} {reach:?} {answered:?} {earlier:?} caller {caller_confirmed}: {ruling:?}"
                );
                assert!(
                    answered.is_some() || matches!(earlier, Earlier::Approved { .. }),
                    "{ruling:?}"
                );
            }
            if let Ruling::Block(verdict) = &ruling
                && !verdict.final_no
            {
                assert!(
                    verdict
                        .for_model
                        .contains("may already have run at 2026-12-02 10:31:07 UTC"),
                    "{}",
                    verdict.for_model
                );
            }
            checked += 1;
        },
    );
    assert!(checked > 100, "{checked} combinations");
    // A call no person would be asked about is not sent again, and the
    // model is told why; it is no person's no.
    let read = Call {
        may_have_run: Some(at),
        ..call(Risk::LowWrite)
    };
    let facts = Facts {
        call: &read,
        trust: Trust::DEFAULT,
        reach: Reach {
            form: true,
            url: false,
            inbox: true,
        },
        caller_confirmed: false,
        earlier: &Earlier::Nothing,
        answered: None,
    };
    let Ruling::Block(verdict) = rule(&facts) else {
        panic!("not sent again")
    };
    assert!(!verdict.final_no);
    assert!(
        verdict.for_model.contains("was not sent again"),
        "{}",
        verdict.for_model
    );
    // The person who is asked reads it in the confirmation.
    let form = askgate_core::confirmation_form(&Call {
        may_have_run: Some(at),
        ..call(Risk::Destructive)
    });
    assert!(
        form.message.ends_with(
            "This exact call may already have run at 2026-12-02 10:31:07 UTC (it was sent and \
             its answer never came: askgate or its server stopped while it was in flight, so \
             whether it ran is not known). Run it again?"
        ),
        "{}",
        form.message
    );
}
