//! Groups whose members an OpenID provider's sign-in names: rules may name
//! them, and a person's answer counts by the groups their sign-in gave.

use super::*;

/// Ana is a DBA in the config; `sre` and `oncall` are groups whose
/// members the provider names.
fn team() -> Directory {
    Directory::new([("ana", vec!["dba"])])
        .and_then(|d| d.with_signed_in_groups(["sre", "oncall"]))
        .expect("a valid team")
}

fn panel(json: &str, requester: &[String]) -> Panel {
    let rule: Approval = serde_json::from_str(json).expect("the rule deserializes");
    rule.check(&team()).expect("the rule fits the team");
    let asked = Asked {
        risk: Risk::Destructive,
        requester_people: requester,
        escalated: false,
    };
    rule.panel("approvals[0]", &team(), &asked)
}

/// The agent acts for Ana, who is no member of the provider's groups.
fn dba() -> Vec<String> {
    vec!["ana".to_owned()]
}

fn sre(person: &str, accepted: bool) -> Answer {
    let answer = if accepted {
        Answer::accept(person)
    } else {
        Answer::decline(person)
    };
    answer.in_groups(["sre"])
}

#[test]
fn a_quorum_of_a_signed_in_group_is_a_rule_though_no_configured_person_is_in_it() {
    let panel = panel(r#"{"quorum": {"of": "sre", "need": 2}}"#, &dba());
    assert!(panel.approvers.is_empty());
    assert_eq!(panel.groups, BTreeSet::from(["sre".to_owned()]));
    // Nobody known yet: still waiting, never out of reach.
    assert_eq!(
        panel.tally(&[], false),
        Progress::Waiting {
            accepts_needed: 2,
            declines_needed: 1
        }
    );
}

#[test]
fn who_the_sign_in_puts_in_the_group_may_answer_and_nobody_else() {
    let panel = panel(r#"{"quorum": {"of": "sre", "need": 2}}"#, &dba());
    assert_eq!(panel.eligible_in("kim", &["sre".to_owned()], false), Ok(()));
    let refused = panel
        .eligible_in("lou", &["dev".to_owned()], false)
        .expect_err("dev is not sre");
    assert!(refused.to_string().contains("2 of sre"), "{refused}");
    // Without the groups of a sign-in, the name alone is nobody's.
    assert!(panel.eligible("kim", false).is_err());
}

#[test]
fn two_signed_in_people_settle_a_quorum_and_an_outsider_does_not_count() {
    let panel = panel(r#"{"quorum": {"of": "sre", "need": 2}}"#, &dba());
    let answers = [
        sre("kim", true),
        Answer::accept("lou").in_groups(["dev"]),
        sre("kim", true),
    ];
    assert!(!panel.tally(&answers, false).is_settled());
    let answers = [sre("kim", true), sre("max", true)];
    assert_eq!(
        panel.tally(&answers, false),
        Progress::Accepted {
            by: vec!["kim".into(), "max".into()]
        }
    );
    assert_eq!(
        panel.tally(&[sre("kim", true), sre("max", false)], false),
        Progress::Declined {
            by: vec!["max".into()]
        }
    );
}

#[test]
fn the_requesters_own_person_is_kept_out_though_the_sign_in_puts_them_in_the_group() {
    let panel = panel(
        r#"{"quorum": {"of": "sre", "need": 1}}"#,
        &["kim".to_owned()],
    );
    assert!(matches!(
        panel.eligible_in("kim", &["sre".to_owned()], false),
        Err(Ineligible::Requester { .. })
    ));
    assert!(!panel.tally(&[sre("kim", true)], false).is_settled());
}

#[test]
fn a_signed_in_group_escalated_to_answers_only_once_the_ask_escalated() {
    let panel = panel(
        r#"{"any_of": ["ana"], "escalate": {"after": "30m", "to": "sre"}}"#,
        &["lee".to_owned()],
    );
    let kim = ["sre".to_owned()];
    assert!(panel.eligible_in("kim", &kim, false).is_err());
    assert_eq!(panel.eligible_in("kim", &kim, true), Ok(()));
    assert!(panel.tally(&[sre("kim", true)], true).is_settled());
}

#[test]
fn a_signed_in_group_named_like_a_person_is_refused() {
    let named = Directory::new([("sre", Vec::<String>::new())])
        .expect("a team")
        .with_signed_in_groups(["sre"]);
    assert_eq!(named, Err(PolicyError::Ambiguous { name: "sre".into() }));
}

#[test]
fn the_panel_of_a_signed_in_group_is_kept_and_read_back_alike() {
    let panel = panel(
        r#"{"quorum": {"of": "sre", "need": 2}, "escalate": {"after": "1h", "to": "oncall"}}"#,
        &[],
    );
    let kept = serde_json::to_string(&panel).expect("serializes");
    let read: Panel = serde_json::from_str(&kept).expect("reads back");
    assert_eq!(read, panel);
    assert_eq!(
        read.signed_in(true).cloned().collect::<Vec<_>>(),
        ["sre", "oncall"]
    );
}

#[test]
fn a_group_both_of_the_config_and_signed_in_is_refused() {
    // bo with his token, and again as bo.k through the provider, would be
    // two approvals of one sre.
    let both = Directory::new([("bo", vec!["sre"])])
        .expect("a team")
        .with_signed_in_groups(["sre"]);
    assert_eq!(
        both,
        Err(PolicyError::SignedInAndConfigured { name: "sre".into() })
    );
}
