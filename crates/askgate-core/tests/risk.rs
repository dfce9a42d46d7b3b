//! Risk levels, the auto-approve threshold and the confirmation form, as a
//! user of the gateway would see them (what an answer decides is
//! `tests/trust.rs`).

use askgate_core::{
    Ask, CONFIRM_FIELD, Call, FieldKind, Gate, Method, Outcome, Response, Revision, Risk, Step,
    confirmation_form, gate, threshold,
};

fn call(risk: Risk) -> Call<'static> {
    Call {
        server: "files",
        tool: "delete_tree",
        risk,
        why: None,
        preview: Some("{\"path\": \"/srv/www\"}"),
        may_have_run: None,
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
fn a_confirmation_says_what_gave_the_call_its_risk() {
    let why = r#"rules[0] (tool = "delete_*")"#;
    let form = confirmation_form(&Call {
        why: Some(why),
        ..call(Risk::Destructive)
    });
    let lines: Vec<&str> = form.message.lines().collect();
    assert_eq!(
        lines[0],
        "Allow files to run delete_tree? Risk: destructive."
    );
    assert_eq!(lines[1], r#"Risk from: rules[0] (tool = "delete_*")."#);
    assert!(lines[2].starts_with("Arguments: "));
    // Without a reason, no line for it.
    let plain = confirmation_form(&call(Risk::Destructive));
    assert!(!plain.message.contains("Risk from"));
}
