//! A team's approval rule resolved for one ask, as the gateway keeps it
//! with the ask: what the tests of every surface park and answer.

use askgate_core::Risk;
use askgate_core::approval::{Approval, Asked, Directory, Panel};

/// Alice, Bob and Carol, the group `team`.
pub const TEAM: &[(&str, &[&str])] = &[
    ("alice", &["team"]),
    ("bob", &["team"]),
    ("carol", &["team"]),
];

/// `rule` (the approval part of an `[[approvals]]` entry, as JSON),
/// named `approvals[0]`, resolved against `team` (each person and their
/// groups) for an ask about a call of `risk` by an agent acting for
/// `acts_for`.
///
/// # Panics
/// When the team or the rule is not a valid one (a test's mistake).
pub fn panel(
    rule: serde_json::Value,
    team: &[(&str, &[&str])],
    risk: Risk,
    acts_for: &[String],
) -> Panel {
    let team = Directory::new(team.iter().map(|(name, groups)| (*name, groups.to_vec())))
        .expect("a valid team");
    let rule: Approval = serde_json::from_value(rule).expect("a valid rule");
    rule.check(&team).expect("the rule fits the team");
    let asked = Asked {
        risk,
        requester_people: acts_for,
        escalated: false,
    };
    rule.panel("approvals[0]", &team, &asked)
}
