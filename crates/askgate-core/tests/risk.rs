//! Risk-gated confirmation: every rule of the decision, as a user of the
//! gateway would see it.

use askgate_core::{
    Ask, CONFIRM_FIELD, Call, FieldKind, Gate, Heard, Method, Outcome, Response, Revision, Risk,
    Step, Unavailable, confirmation_form, decide, gate, threshold,
};

fn call(risk: Risk) -> Call<'static> {
    Call {
        server: "files",
        tool: "delete_tree",
        risk,
        preview: Some("{\"path\": \"/srv/www\"}"),
    }
}

#[test]
fn risk_levels_are_ordered_and_read_back_from_their_names() {
    let mut sorted = Risk::ALL;
    sorted.sort();
    assert_eq!(sorted, Risk::ALL);
    for risk in Risk::ALL {
        assert_eq!(risk.as_str().parse::<Risk>(), Ok(risk));
        assert_eq!(
            serde_json::to_value(risk).expect("serializes"),
            risk.as_str()
        );
    }
    let error = "dangerous".parse::<Risk>().expect_err("not a level");
    let message = error.to_string();
    assert!(message.contains("\"dangerous\"") && message.contains("medium_write"));
}

#[test]
fn at_or_below_the_threshold_proceeds_and_reads_never_prompt() {
    for risk in Risk::ALL {
        for limit in std::iter::once(None).chain(Risk::ALL.map(Some)) {
            let expected = match limit {
                Some(limit) if risk <= limit => Gate::Proceed(Method::AutoApproved),
                _ if risk <= Risk::LowWrite => Gate::Proceed(Method::NotRequired),
                _ => Gate::Ask,
            };
            assert_eq!(gate(risk, limit), expected, "{risk} under {limit:?}");
        }
    }
    assert_eq!(gate(Risk::MediumWrite, None), Gate::Ask);
}

#[test]
fn the_more_restrictive_threshold_wins_unless_raising_is_allowed() {
    assert_eq!(threshold(None, Some(Risk::Destructive), false), None);
    assert_eq!(
        threshold(None, Some(Risk::Destructive), true),
        Some(Risk::Destructive)
    );
    assert_eq!(
        threshold(Some(Risk::HighWrite), None, false),
        Some(Risk::HighWrite)
    );
    assert_eq!(
        threshold(Some(Risk::HighWrite), Some(Risk::LowWrite), true),
        Some(Risk::LowWrite)
    );
}

#[test]
fn the_confirmation_is_one_pre_ticked_checkbox_that_settles_on_accept() {
    let form = confirmation_form(&call(Risk::Destructive));
    assert!(form.message.contains("files") && form.message.contains("delete_tree"));
    assert!(form.message.contains("destructive") && form.message.contains("/srv/www"));
    assert_eq!(form.fields.len(), 1);
    assert_eq!(form.fields[0].id, CONFIRM_FIELD);
    assert!(matches!(form.fields[0].kind, FieldKind::Boolean(_)));
    let ask = Ask::new(form).expect("MCP can carry it");
    // Every revision carries the default, so accepting is enough.
    for revision in [Revision::V2025_06_18, Revision::V2025_11_25] {
        let response: Response =
            serde_json::from_str(r#"{"action": "accept", "content": {}}"#).expect("a response");
        let Step::Settled(Outcome::Accepted { values }) = ask.settle(revision, &response) else {
            panic!("accepting the pre-ticked box settles")
        };
        assert_eq!(
            values.get(CONFIRM_FIELD).expect("confirm").value.to_json(),
            true
        );
    }
}

#[test]
fn a_confirmed_accept_proceeds_as_elicited() {
    let verdict = decide(
        &call(Risk::HighWrite),
        &Heard::Accepted {
            confirm: Some(true),
        },
        false,
    );
    assert!(verdict.proceed);
    assert_eq!(verdict.method, Method::Elicited);
}

#[test]
fn a_persons_no_is_final_and_the_callers_confirm_does_not_override_it() {
    for heard in [
        Heard::Accepted {
            confirm: Some(false),
        },
        Heard::Declined,
        Heard::Cancelled,
    ] {
        for caller_confirmed in [false, true] {
            let verdict = decide(&call(Risk::Destructive), &heard, caller_confirmed);
            assert!(!verdict.proceed, "{heard:?}");
            assert_eq!(verdict.method, Method::Blocked);
            assert!(verdict.final_no);
            assert!(verdict.for_model.contains("do not retry"));
            assert!(
                !verdict
                    .for_model
                    .contains("call it again with confirm: true")
            );
        }
    }
}

#[test]
fn when_nobody_could_be_asked_only_the_callers_confirm_lets_it_through() {
    for heard in [
        Heard::Unavailable(Unavailable::NoElicitation),
        Heard::Unavailable(Unavailable::Failed("timed out after 60 s".into())),
        // Accepted without the field: the client never showed the prompt.
        Heard::Accepted { confirm: None },
    ] {
        let blocked = decide(&call(Risk::MediumWrite), &heard, false);
        assert!(!blocked.proceed);
        assert_eq!(blocked.method, Method::Blocked);
        assert!(!blocked.final_no, "not a person's no: {heard:?}");
        assert!(blocked.for_model.contains("confirm: true"));
        // The audit never calls a client failure a person's decline.
        assert!(
            !blocked.for_audit.contains("declined"),
            "{}",
            blocked.for_audit
        );

        let confirmed = decide(&call(Risk::MediumWrite), &heard, true);
        assert!(confirmed.proceed);
        assert_eq!(confirmed.method, Method::CallerConfirmed);
        assert!(confirmed.for_audit.contains("confirm: true"));
    }
}
