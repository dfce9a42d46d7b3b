use jiff::SignedDuration;
use proptest::prelude::*;

use super::*;

/// Ana, Bo and Cy are SRE; Bo is on call too; Di is on call only; Ed is a
/// developer.
fn team() -> Directory {
    Directory::new([
        ("ana", vec!["sre"]),
        ("bo", vec!["sre", "oncall"]),
        ("cy", vec!["sre"]),
        ("di", vec!["oncall"]),
        ("ed", vec!["dev"]),
    ])
    .expect("a valid team")
}

fn rule(json: &str) -> Approval {
    let rule: Approval = serde_json::from_str(json).expect("the rule deserializes");
    rule.check(&team()).expect("the rule fits the team");
    rule
}

fn asked(risk: Risk, requester: &[String]) -> Asked<'_> {
    Asked {
        risk,
        requester_people: requester,
        escalated: false,
    }
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// The answers `spec` says, in order: `+ana` accepts, `-bo` declines.
fn said(spec: &str) -> Vec<Answer> {
    spec.split_whitespace()
        .map(|word| match word.strip_prefix('+') {
            Some(person) => Answer::accept(person),
            None => Answer::decline(word.trim_start_matches('-')),
        })
        .collect()
}

fn waiting(accepts_needed: u16, declines_needed: u16) -> Progress {
    Progress::Waiting {
        accepts_needed,
        declines_needed,
    }
}

fn accepted(by: &[&str]) -> Progress {
    Progress::Accepted { by: names(by) }
}

fn declined(by: &[&str]) -> Progress {
    Progress::Declined { by: names(by) }
}

#[test]
fn any_of_is_settled_by_the_first_eligible_answer_yes_or_no() {
    let team = team();
    let rule = rule(r#"{"any_of": ["sre"]}"#);
    let ask = asked(Risk::MediumWrite, &[]);
    // Ed is no SRE: his yes does not count, Ana's no settles it.
    for (answers, progress) in [
        ("+ed -ana +bo", declined(&["ana"])),
        ("+cy -ana", accepted(&["cy"])),
        ("+ed", waiting(1, 1)),
    ] {
        assert_eq!(
            rule.tally(&team, &ask, &said(answers)),
            progress,
            "{answers}"
        );
    }
}

#[test]
fn any_of_names_people_and_groups_alike() {
    let team = team();
    let rule = rule(r#"{"any_of": ["ed", "oncall"]}"#);
    let ask = asked(Risk::MediumWrite, &[]);
    for person in ["ed", "bo", "di"] {
        assert_eq!(rule.eligible(&team, person, &ask), Ok(()), "{person}");
    }
    assert!(matches!(
        rule.eligible(&team, "ana", &ask),
        Err(Ineligible::NotAnApprover { approvers, .. }) if approvers == "any of ed, oncall"
    ));
}

#[test]
fn a_quorum_settles_when_enough_distinct_people_accept_and_one_no_vetoes_it() {
    let team = team();
    let rule = rule(r#"{"quorum": {"of": "sre", "need": 2}}"#);
    let ask = asked(Risk::MediumWrite, &[]);
    for (answers, progress) in [
        // Ana twice is Ana once.
        ("+ana +ana", waiting(1, 1)),
        ("+ana +ana +cy", accepted(&["ana", "cy"])),
        ("+ana -bo +cy", declined(&["bo"])),
        // Ana's later no changes nothing: her yes counted first.
        ("+ana -ana", waiting(1, 1)),
        // An outsider's no blocks nothing.
        ("-ed +ana +bo", accepted(&["ana", "bo"])),
    ] {
        assert_eq!(
            rule.tally(&team, &ask, &said(answers)),
            progress,
            "{answers}"
        );
    }
}

#[test]
fn without_a_veto_it_takes_need_noes_or_a_quorum_out_of_reach() {
    let team = team();
    let two = rule(r#"{"quorum": {"of": "sre", "need": 2}, "veto": false}"#);
    // Three of three without a veto: one no leaves too few to accept.
    let three = rule(r#"{"quorum": {"of": "sre", "need": 3}, "veto": false}"#);
    let ask = asked(Risk::MediumWrite, &[]);
    for (rule, answers, progress) in [
        (&two, "-ana +bo", waiting(1, 1)),
        (&two, "-ana +bo +cy", accepted(&["bo", "cy"])),
        (&two, "-ana -cy", declined(&["ana", "cy"])),
        (
            &three,
            "+ana -cy",
            Progress::Unreachable {
                declined_by: names(&["cy"]),
            },
        ),
    ] {
        assert_eq!(
            rule.tally(&team, &ask, &said(answers)),
            progress,
            "{answers}"
        );
    }
}

#[test]
fn the_requesters_people_never_approve_their_own_risky_ask() {
    let team = team();
    let cy = names(&["cy"]);
    let rule = rule(r#"{"any_of": ["sre"]}"#);
    // Off below high_write, on from it.
    assert_eq!(
        rule.eligible(&team, "cy", &asked(Risk::MediumWrite, &cy)),
        Ok(())
    );
    for risk in [Risk::HighWrite, Risk::Destructive] {
        assert_eq!(
            rule.eligible(&team, "cy", &asked(risk, &cy)),
            Err(Ineligible::Requester {
                person: "cy".to_owned(),
                risk
            })
        );
        // Cy's answer does not count; Ana's does.
        assert_eq!(
            rule.tally(&team, &asked(risk, &cy), &said("+cy -ana")),
            declined(&["ana"])
        );
    }
    // The rule may say otherwise, either way.
    let allowed = self::rule(r#"{"any_of": ["sre"], "not_requester": false}"#);
    assert_eq!(
        allowed.eligible(&team, "cy", &asked(Risk::Destructive, &cy)),
        Ok(())
    );
    let kept = self::rule(r#"{"any_of": ["sre"], "not_requester": true}"#);
    assert!(
        kept.eligible(&team, "cy", &asked(Risk::LowWrite, &cy))
            .is_err()
    );
    // The same, as the issue writes it.
    let kept = self::rule(r#"{"any_of": ["sre"], "not": "requester"}"#);
    assert!(
        kept.eligible(&team, "cy", &asked(Risk::LowWrite, &cy))
            .is_err()
    );
}

#[test]
fn a_quorum_the_requesters_people_would_complete_is_out_of_reach_at_once() {
    let team = team();
    let rule = rule(r#"{"quorum": {"of": "sre", "need": 3}}"#);
    let cy = names(&["cy"]);
    assert_eq!(
        rule.tally(&team, &asked(Risk::Destructive, &cy), &[]),
        Progress::Unreachable {
            declined_by: Vec::new()
        }
    );
    assert_eq!(
        rule.tally(&team, &asked(Risk::MediumWrite, &cy), &[]),
        waiting(3, 1)
    );
}

#[test]
fn once_escalated_those_escalated_to_answer_and_count_toward_the_quorum() {
    let team = team();
    let rule = rule(
        r#"{"quorum": {"of": "sre", "need": 2}, "escalate": {"after": "30m", "to": "oncall"}, "expires": "2h"}"#,
    );
    assert_eq!(
        rule.escalate.as_ref().map(|e| e.after),
        Some(SignedDuration::from_mins(30))
    );
    assert_eq!(rule.expires, Some(SignedDuration::from_hours(2)));
    let before = asked(Risk::MediumWrite, &[]);
    let after = Asked {
        escalated: true,
        ..before
    };
    assert!(matches!(
        rule.eligible(&team, "di", &before),
        Err(Ineligible::NotAnApprover { approvers, .. }) if approvers == "2 of sre"
    ));
    assert_eq!(rule.eligible(&team, "di", &after), Ok(()));
    assert_eq!(rule.tally(&team, &before, &said("+ana +di")), waiting(1, 1));
    assert_eq!(
        rule.tally(&team, &after, &said("+ana +di")),
        accepted(&["ana", "di"])
    );
}

#[test]
fn the_agents_own_client_answers_as_its_person_only_where_the_rule_allows() {
    let team = team();
    let rule = rule(r#"{"any_of": ["sre"]}"#);
    let cy = names(&["cy"]);
    let ask = asked(Risk::MediumWrite, &cy);
    assert_eq!(rule.elicitation_counts_as(&team, &ask), Some("cy"));
    // At high_write Cy may not approve Cy's agent's ask.
    assert_eq!(
        rule.elicitation_counts_as(&team, &asked(Risk::HighWrite, &cy)),
        None
    );
    // Ed is not an approver; an agent of two people is nobody in particular.
    assert_eq!(
        rule.elicitation_counts_as(&team, &asked(Risk::Read, &names(&["ed"]))),
        None
    );
    assert_eq!(
        rule.elicitation_counts_as(&team, &asked(Risk::Read, &names(&["ana", "cy"]))),
        None
    );
    assert_eq!(
        rule.elicitation_counts_as(&team, &asked(Risk::Read, &[])),
        None
    );
}

#[test]
fn an_unknown_person_is_refused_by_name() {
    let rule = rule(r#"{"any_of": ["sre"]}"#);
    let error = rule
        .eligible(&team(), "zed", &asked(Risk::Read, &[]))
        .expect_err("zed is nobody");
    assert_eq!(error.to_string(), "zed is not a person askgate knows");
}

#[test]
fn a_rule_that_cannot_work_is_refused_saying_what_is_wrong() {
    let team = team();
    let refused = |json: &str| {
        let rule: Approval = serde_json::from_str(json).expect("deserializes");
        rule.check(&team).expect_err("refused").to_string()
    };
    assert_eq!(
        refused(r#"{"any_of": ["ops"]}"#),
        r#""ops" is neither a person nor a group; known: dev, oncall, sre, ana, bo, cy, di, ed"#
    );
    assert_eq!(
        refused(r#"{"any_of": []}"#),
        "any_of names nobody; name at least one group or person"
    );
    assert_eq!(
        refused(r#"{"quorum": {"of": "sre", "need": 0}}"#),
        "a quorum needs at least 1 acceptance, not 0"
    );
    assert_eq!(
        refused(r#"{"quorum": {"of": "oncall", "need": 3}}"#),
        r#"a quorum of "oncall" needs 3, but "oncall" has 2 people: the ask could never settle"#
    );
    assert!(
        refused(r#"{"any_of": ["sre"], "expires": "0s"}"#)
            .starts_with("expires must be longer than zero")
    );
    assert!(
        refused(
            r#"{"any_of": ["sre"], "escalate": {"after": "2h", "to": "oncall"}, "expires": "1h"}"#
        )
        .starts_with("escalate.after (2h) must be shorter than expires (1h)")
    );
    assert_eq!(
        refused(r#"{"any_of": ["sre"], "escalate": {"after": "1h", "to": "nobody"}}"#),
        r#""nobody" is neither a person nor a group; known: dev, oncall, sre, ana, bo, cy, di, ed"#
    );
    assert_eq!(
        refused(r#"{"any_of": ["sre"], "not": "requester", "not_requester": false}"#),
        r#"not = "requester" and not_requester = false say opposite things; keep one of them"#
    );
    let unknown = serde_json::from_str::<Approval>(r#"{"any_of": ["sre"], "quorom": 2}"#)
        .expect_err("an unknown key")
        .to_string();
    assert!(unknown.contains("quorom"), "{unknown}");
}

#[test]
fn a_directory_refuses_a_name_twice_or_a_group_named_as_a_person() {
    assert_eq!(
        Directory::new([("ana", vec!["sre"]), ("ana", vec!["dev"])]),
        Err(PolicyError::DuplicatePerson {
            name: "ana".to_owned()
        })
    );
    assert_eq!(
        Directory::new([("ana", vec!["sre"]), ("sre", vec![])]),
        Err(PolicyError::Ambiguous {
            name: "sre".to_owned()
        })
    );
}

#[test]
fn a_panel_holds_who_could_answer_when_the_ask_was_parked() {
    let cy = names(&["cy"]);
    let ask = asked(Risk::Destructive, &cy);
    let panel = rule(
        r#"{"quorum": {"of": "sre", "need": 2}, "escalate": {"after": "30m", "to": "oncall"}}"#,
    )
    .panel("approvals[1]", &team(), &ask);
    // Kept with the ask as JSON, and read back later.
    let kept = serde_json::to_string(&panel).expect("a panel serializes");
    let panel: Panel = serde_json::from_str(&kept).expect("a kept panel reads back");
    assert_eq!(panel.rule, "approvals[1]");
    assert_eq!(panel.escalates_after(), Some(SignedDuration::from_mins(30)));

    // Cy asked: kept out. Di is on call: only once it escalated.
    assert_eq!(panel.yet_to_answer(&said("+ana"), false), ["bo"]);
    assert_eq!(panel.yet_to_answer(&said("+ana"), true), ["bo", "di"]);
    assert_eq!(
        panel.eligible("cy", true).map_err(|e| e.to_string()),
        Err("cy acts for the agent that asked, and may not answer its own destructive ask (the rule's not_requester)".to_owned())
    );
    assert_eq!(
        panel.eligible("di", false).map_err(|e| e.to_string()),
        Err("di is not among those who may answer this ask (2 of sre)".to_owned())
    );
    assert_eq!(panel.eligible("di", true), Ok(()));
    assert_eq!(
        panel.tally(&said("+ana +di"), true),
        Progress::Accepted {
            by: names(&["ana", "di"])
        }
    );
    // The team changed since (Fay joined SRE): the ask's panel did not.
    let grown = Directory::new([("ana", vec!["sre"]), ("fay", vec!["sre"])]).expect("a team");
    let now = rule(r#"{"quorum": {"of": "sre", "need": 2}}"#).panel("approvals[1]", &grown, &ask);
    assert!(now.eligible("fay", false).is_ok());
    assert!(panel.eligible("fay", false).is_err());
    assert_eq!(panel.tally(&said("+ana +fay"), false), waiting(1, 1));
}

/// Answers from the team and two outsiders, accepting or declining.
fn answers() -> impl Strategy<Value = Vec<Answer>> {
    let person = prop::sample::select(vec!["ana", "bo", "cy", "di", "ed", "zed"]);
    prop::collection::vec((person, any::<bool>()), 0..12).prop_map(|answers| {
        answers
            .into_iter()
            .map(|(person, accepted)| Answer {
                person: person.to_owned(),
                accepted,
                groups: Vec::new(),
            })
            .collect()
    })
}

fn rules() -> impl Strategy<Value = Approval> {
    prop::sample::select(vec![
        r#"{"any_of": ["sre"]}"#,
        r#"{"any_of": ["ed", "oncall"]}"#,
        r#"{"quorum": {"of": "sre", "need": 2}}"#,
        r#"{"quorum": {"of": "sre", "need": 3}, "veto": false}"#,
        r#"{"quorum": {"of": "sre", "need": 2}, "escalate": {"after": "1m", "to": "oncall"}}"#,
    ])
    .prop_map(rule)
}

proptest! {
    /// A settled ask stays settled as it was, whatever comes after: a
    /// person's no is final, and so is a quorum reached.
    #[test]
    fn a_settled_ask_stays_settled_as_it_was(rule in rules(), answers in answers(), cut in 0usize..12, escalated: bool, risk in prop::sample::select(vec![Risk::MediumWrite, Risk::Destructive])) {
        let team = team();
        let cy = names(&["cy"]);
        let ask = Asked { risk, requester_people: &cy, escalated };
        let cut = cut.min(answers.len());
        let early = rule.tally(&team, &ask, &answers[..cut]);
        if early.is_settled() {
            prop_assert_eq!(rule.tally(&team, &ask, &answers), early);
        }
    }

    /// A person answering again, however often, changes nothing.
    #[test]
    fn answering_again_changes_nothing(rule in rules(), answers in answers(), again in 0usize..12) {
        let team = team();
        let ask = asked(Risk::MediumWrite, &[]);
        let mut repeated = answers.clone();
        if let Some(first) = answers.get(again % answers.len().max(1)).cloned() {
            repeated.push(Answer { accepted: !first.accepted, ..first.clone() });
            repeated.push(first);
        }
        prop_assert_eq!(rule.tally(&team, &ask, &repeated), rule.tally(&team, &ask, &answers));
    }

    /// What settles an ask is only eligible people's answers: an
    /// accepting quorum names `need` distinct eligible people.
    #[test]
    fn an_accepted_ask_names_need_distinct_eligible_people(rule in rules(), answers in answers(), escalated: bool) {
        let team = team();
        let ask = Asked { risk: Risk::MediumWrite, requester_people: &[], escalated };
        if let Progress::Accepted { by } = rule.tally(&team, &ask, &answers) {
            prop_assert_eq!(by.len(), usize::from(rule.need()));
            let distinct: std::collections::BTreeSet<_> = by.iter().collect();
            prop_assert_eq!(distinct.len(), by.len());
            for person in &by {
                prop_assert!(rule.eligible(&team, person, &ask).is_ok());
            }
        }
    }

    /// A panel kept with its ask, as JSON, counts answers as its rule did
    /// when the ask was parked.
    #[test]
    fn a_kept_panel_counts_as_its_rule(rule in rules(), answers in answers(), escalated: bool, risk in prop::sample::select(vec![Risk::MediumWrite, Risk::HighWrite])) {
        let team = team();
        let cy = names(&["cy"]);
        let ask = Asked { risk, requester_people: &cy, escalated };
        let kept = serde_json::to_value(rule.panel("approvals[0]", &team, &ask)).expect("a panel serializes");
        let panel: Panel = serde_json::from_value(kept).expect("a kept panel reads back");
        prop_assert_eq!(panel.tally(&answers, escalated), rule.tally(&team, &ask, &answers));
        for person in ["ana", "bo", "cy", "di", "ed"] {
            prop_assert_eq!(panel.eligible(person, escalated), rule.eligible(&team, person, &ask));
        }
    }
}

#[test]
fn an_agent_acting_for_nobody_has_no_approvable_ask_where_the_rule_keeps_its_people_out() {
    let team = team();
    let rule = rule(r#"{"any_of": ["sre"], "not": "requester"}"#);
    let panel = rule.panel("approvals[0]", &team, &asked(Risk::MediumWrite, &[]));
    // Anyone could be its person: nobody may answer, and the call is
    // refused before anyone is asked.
    assert!(panel.requester_unknown);
    assert_eq!(
        panel.eligible("ana", false),
        Err(Ineligible::RequesterUnknown {
            risk: Risk::MediumWrite
        })
    );
    assert!(matches!(
        panel.unanswerable(),
        Some(Unanswerable::RequesterUnknown { .. })
    ));
    assert_eq!(
        panel.tally(&said("+ana"), false),
        Progress::Unreachable {
            declined_by: Vec::new()
        }
    );
    // The same said as not_requester = true.
    let named = self::rule(r#"{"any_of": ["sre"], "not_requester": true}"#);
    let panel_named = named.panel("approvals[0]", &team, &asked(Risk::LowWrite, &[]));
    assert!(panel_named.unanswerable().is_some());
    // By default (from high_write on), an agent that acts for nobody has
    // nobody to keep out.
    let default = self::rule(r#"{"any_of": ["sre"]}"#);
    let above = default.panel("approvals[0]", &team, &asked(Risk::Destructive, &[]));
    assert_eq!(above.unanswerable(), None);
    assert_eq!(above.eligible("ana", false), Ok(()));
    // An agent that acts for someone is answerable, its person kept out.
    let cy = names(&["cy"]);
    let known = rule.panel("approvals[0]", &team, &asked(Risk::HighWrite, &cy));
    assert_eq!(known.unanswerable(), None);
    assert!(known.eligible("cy", false).is_err());
    // The panel kept with the ask says so, and reads back alike.
    let kept = serde_json::to_value(&panel).expect("serializes");
    assert_eq!(kept["requester_unknown"], true);
    let back: Panel = serde_json::from_value(kept).expect("reads back");
    assert_eq!(back, panel);
}

#[test]
fn a_quorum_short_of_people_waits_while_an_escalation_is_ahead() {
    let team = team();
    let cy = names(&["cy"]);
    // 3 of sre, Cy kept out: Ana and Bo alone cannot; Di (on call) can
    // once it escalates.
    let rule = rule(
        r#"{"quorum": {"of": "sre", "need": 3}, "escalate": {"after": "30m", "to": "oncall"}, "expires": "2h"}"#,
    );
    let panel = rule.panel("approvals[0]", &team, &asked(Risk::Destructive, &cy));
    assert_eq!(panel.unanswerable(), None);
    assert_eq!(panel.tally(&said("+ana"), false), waiting(2, 1));
    assert_eq!(
        panel.tally(&said("+ana +bo +di"), true),
        accepted(&["ana", "bo", "di"])
    );
    // Without the escalation, out of reach from the start, and said so.
    let short = self::rule(r#"{"quorum": {"of": "sre", "need": 3}}"#);
    let panel = short.panel("approvals[1]", &team, &asked(Risk::Destructive, &cy));
    assert_eq!(
        panel.unanswerable(),
        Some(Unanswerable::TooFew {
            rule: "approvals[1]".into(),
            who: "3 of sre".into(),
            need: 3,
            have: 2
        })
    );
    assert_eq!(
        panel.unanswerable().map(|why| why.to_string()),
        Some(
            "approvals[1] (3 of sre) needs 3 approvals, but only 2 of its people may answer this \
             agent's calls (its own people are kept out)"
                .into()
        )
    );
}

#[test]
fn names_that_a_list_or_a_log_line_would_garble_are_refused() {
    for (name, ok) in [
        ("ana", true),
        ("Ana Lopez", true),
        ("ana@corp.example", true),
        ("ana, bo", false),
        ("ana\nINFO bo approved", false),
        ("ana\t", false),
        (" ana", false),
        ("", false),
    ] {
        assert_eq!(name_problem(name).is_none(), ok, "{name:?}");
        let directory = Directory::new([(name, vec!["sre"])]);
        assert_eq!(directory.is_ok(), ok, "{name:?}");
        let group = Directory::new([("zed", vec![name])]);
        assert_eq!(group.is_ok(), ok, "group {name:?}");
    }
    assert!(matches!(
        Directory::default().with_signed_in_groups(["sre,dba"]),
        Err(PolicyError::BadName { .. })
    ));
}
