//! An ask's panel: its rule resolved, when the ask is parked, to the
//! people who may answer it, and kept with the ask. Answers are counted
//! against the panel, not against the config of the moment: who may
//! approve a pending ask is what it was when it was asked, and the record
//! says so.

use std::collections::BTreeSet;

use jiff::SignedDuration;
use serde::{Deserialize, Serialize};

use super::{Answer, Approval, Asked, Directory, Ineligible, Progress};
use crate::risk::Risk;

/// Who may answer one ask, and how many must: see
/// [`Approval::panel`]. Serializes to the JSON kept with the ask.
///
/// # Example
/// ```
/// use askgate_core::approval::{Answer, Approval, Asked, Directory, Progress};
/// use askgate_core::Risk;
///
/// let team = Directory::new([("ana", vec!["sre"]), ("bo", vec!["sre"]), ("cy", vec!["sre"])])?;
/// let rule: Approval = serde_json::from_str(r#"{"quorum": {"of": "sre", "need": 2}}"#).unwrap();
/// let cy = ["cy".to_owned()];
/// let asked = Asked { risk: Risk::Destructive, requester_people: &cy, escalated: false };
/// let panel = rule.panel("approvals[0]", &team, &asked);
///
/// assert!(panel.eligible("cy", false).is_err());
/// assert_eq!(panel.tally(&[Answer::accept("ana")], false), Progress::Waiting { accepts_needed: 1, declines_needed: 1 });
/// assert_eq!(panel.yet_to_answer(&[Answer::accept("ana")], false), ["bo"]);
/// # Ok::<(), askgate_core::approval::PolicyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    /// The rule that gave it, by its name in the config
    /// (`approvals[2]`).
    pub rule: String,
    /// Who may answer, as the rule says it (`2 of sre`).
    pub who: String,
    /// How many distinct acceptances settle the ask.
    pub need: u16,
    /// How many distinct no's block it.
    pub block: u16,
    /// The people who may answer from the start.
    pub approvers: BTreeSet<String>,
    /// The groups that may answer from the start whose members sign-in
    /// says (see [`Directory::with_signed_in_groups`]): a person whose
    /// sign-in puts them in one of them may answer too.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub groups: BTreeSet<String>,
    /// Who else may answer once the ask has waited long enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<PanelEscalation>,
    /// The requester's own people, kept from answering.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub kept_out: BTreeSet<String>,
    /// The requester's people are kept out — by the rule's own word (`not =
    /// "requester"`, `not_requester = true`), or by default for an agent
    /// the deployment does not know at all (the gateway's OAuth agents) —
    /// but the agent that asked acts for nobody askgate knows: nobody can
    /// be told apart from its person, so nobody may answer (see
    /// [`Panel::unanswerable`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requester_unknown: bool,
    /// The risk of the call asked about.
    pub risk: Risk,
}

/// A panel's escalation: after how long, and to whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PanelEscalation {
    /// How long the ask waits before it escalates.
    pub after: SignedDuration,
    /// The group or person escalated to, as the rule names it.
    pub to: String,
    /// Their people.
    pub people: BTreeSet<String>,
    /// The group escalated to, when sign-in says who is in it.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub groups: BTreeSet<String>,
}

impl Approval {
    /// This rule, named `rule` in the config, resolved for `asked`: the
    /// people who may answer it, how many must, and who is kept out (see
    /// [`Panel`]). `asked.escalated` plays no part: a panel holds both the
    /// approvers and those it escalates to.
    pub fn panel(
        &self,
        rule: impl Into<String>,
        directory: &Directory,
        asked: &Asked<'_>,
    ) -> Panel {
        let excludes = self.excludes_requester(asked.risk);
        let kept_out = if excludes {
            asked.requester_people.iter().cloned().collect()
        } else {
            BTreeSet::new()
        };
        Panel {
            rule: rule.into(),
            who: self.describe(),
            need: self.need(),
            block: self.declines_to_block(),
            approvers: owned(self.approvers(directory)),
            groups: self.signed_in_groups(directory),
            escalation: self.escalate.as_ref().map(|escalation| PanelEscalation {
                after: escalation.after,
                to: escalation.to.clone(),
                people: owned(directory.resolve(&escalation.to).unwrap_or_default()),
                groups: Some(escalation.to.clone())
                    .filter(|to| directory.is_signed_in_group(to))
                    .into_iter()
                    .collect(),
            }),
            kept_out,
            // Kept out by the rule's own word, and nobody to tell apart:
            // the rule cannot be kept. (By default, at high_write and up,
            // an agent that acts for nobody has nobody to keep out.)
            requester_unknown: excludes
                && self.excludes_requester_by_name()
                && asked.requester_people.is_empty(),
            risk: asked.risk,
        }
    }
}

/// Why nobody could ever settle an ask of a panel by approving it: the
/// call is refused before anyone is asked (see [`Panel::unanswerable`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unanswerable {
    /// The rule keeps the requester's people out, and the agent acts for
    /// nobody askgate knows.
    #[error(
        "{rule} ({who}) keeps the requesting agent's own people from approving its {risk} calls, but this agent acts for nobody in [[people]], so anyone who answered could be its person; give the agent acts_for (on its [[principals]] entry; in [listen.oauth.acts_for] for an agent an OAuth token names; or the top-level acts_for for a caller without a token)"
    )]
    RequesterUnknown {
        /// The rule, by its name in the config.
        rule: String,
        /// Who may answer, as the rule says it.
        who: String,
        /// The risk of the call.
        risk: Risk,
    },
    /// Fewer people may ever answer than must approve.
    #[error(
        "{rule} ({who}) needs {need} approvals, but only {have} of its people may answer this agent's calls (its own people are kept out)"
    )]
    TooFew {
        /// The rule, by its name in the config.
        rule: String,
        /// Who may answer, as the rule says it.
        who: String,
        /// Approvals needed.
        need: u16,
        /// The people who may ever answer.
        have: usize,
    },
}

impl Panel {
    /// Whether `person` may answer, the ask `escalated` or not.
    ///
    /// # Errors
    /// [`Ineligible`], naming what excludes them.
    pub fn eligible(&self, person: &str, escalated: bool) -> Result<(), Ineligible> {
        self.eligible_in(person, &[], escalated)
    }

    /// Whether `person`, whose sign-in puts them in `groups`, may answer,
    /// the ask `escalated` or not.
    ///
    /// # Errors
    /// [`Ineligible`], naming what excludes them.
    pub fn eligible_in(
        &self,
        person: &str,
        groups: &[String],
        escalated: bool,
    ) -> Result<(), Ineligible> {
        if self.requester_unknown {
            return Err(Ineligible::RequesterUnknown { risk: self.risk });
        }
        if self.kept_out.contains(person) {
            return Err(Ineligible::Requester {
                person: person.to_owned(),
                risk: self.risk,
            });
        }
        if self.approvers.contains(person)
            || self.escalated_to(escalated).any(|p| p == person)
            || self.signed_in(escalated).any(|g| groups.contains(g))
        {
            return Ok(());
        }
        Err(Ineligible::NotAnApprover {
            person: person.to_owned(),
            approvers: self.describe(escalated),
        })
    }

    /// Why no answers could ever approve an ask of this panel, if none
    /// could: then the call is refused before anyone is asked. Counts the
    /// people escalated to, and never gives up on a group whose members
    /// sign-in says.
    pub fn unanswerable(&self) -> Option<Unanswerable> {
        if self.requester_unknown {
            return Some(Unanswerable::RequesterUnknown {
                rule: self.rule.clone(),
                who: self.who.clone(),
                risk: self.risk,
            });
        }
        let have = self.people(true).len();
        (self.signed_in(true).next().is_none() && have < usize::from(self.need)).then(|| {
            Unanswerable::TooFew {
                rule: self.rule.clone(),
                who: self.describe(true),
                need: self.need,
                have,
            }
        })
    }

    /// When the ask escalates, after it was parked; `None`: never.
    pub fn escalates_after(&self) -> Option<SignedDuration> {
        self.escalation.as_ref().map(|e| e.after)
    }

    /// Who may answer, as the rule says it, and once `escalated` whom it
    /// escalated to.
    pub fn describe(&self, escalated: bool) -> String {
        match self.escalation.as_ref().filter(|_| escalated) {
            Some(escalation) => format!("{}, or {} since it escalated", self.who, escalation.to),
            None => self.who.clone(),
        }
    }

    /// The person whose answer the requesting agent's own client (MCP
    /// elicitation) gives, if it counts at all: the agent acts for exactly
    /// one person (`requester_people`), who may answer.
    pub fn elicitation_counts_as<'a>(
        &self,
        requester_people: &'a [String],
        escalated: bool,
    ) -> Option<&'a str> {
        match requester_people {
            [person] => self
                .eligible(person, escalated)
                .is_ok()
                .then_some(person.as_str()),
            _ => None,
        }
    }

    /// The eligible people who have not answered yet, by name: who the ask
    /// still waits on.
    pub fn yet_to_answer(&self, answers: &[Answer], escalated: bool) -> Vec<&str> {
        let heard: BTreeSet<&str> = answers.iter().map(|a| a.person.as_str()).collect();
        self.people(escalated)
            .into_iter()
            .filter(|person| !heard.contains(person))
            .collect()
    }

    /// Where the ask stands after `answers`, in the order they were
    /// recorded. Each person counts once, by their first eligible answer;
    /// an ineligible person's answer never counts; the first moment the
    /// answers accept or block the ask settles it, and nothing after
    /// changes that.
    pub fn tally(&self, answers: &[Answer], escalated: bool) -> Progress {
        let (need, block) = (self.need, self.block);
        if self.requester_unknown {
            return Progress::Unreachable {
                declined_by: Vec::new(),
            };
        }
        // Out of reach only when nobody is left to come: while an
        // escalation is ahead, its people may still approve.
        let ahead = escalated || self.escalation.is_some();
        let eligible = self.people(ahead);
        // Who is in a signed-in group is known only as they sign in: an
        // ask they may answer is never given up as out of reach.
        let open = self.signed_in(ahead).next().is_some();
        let mut heard = BTreeSet::new();
        let (mut accepted, mut declined) = (Vec::new(), Vec::new());
        let reachable = |declined: &Vec<String>| {
            open || eligible.len().saturating_sub(declined.len()) >= usize::from(need)
        };
        if !reachable(&declined) {
            return Progress::Unreachable {
                declined_by: declined,
            };
        }
        for answer in answers {
            let person = answer.person.as_str();
            let counts = self.eligible_in(person, &answer.groups, escalated).is_ok();
            if !counts || !heard.insert(person) {
                continue;
            }
            if answer.accepted {
                accepted.push(answer.person.clone());
                if accepted.len() >= usize::from(need) {
                    return Progress::Accepted { by: accepted };
                }
            } else {
                declined.push(answer.person.clone());
                if declined.len() >= usize::from(block) {
                    return Progress::Declined { by: declined };
                }
                if !reachable(&declined) {
                    return Progress::Unreachable {
                        declined_by: declined,
                    };
                }
            }
        }
        Progress::Waiting {
            accepts_needed: need.saturating_sub(count(&accepted)),
            declines_needed: block.saturating_sub(count(&declined)),
        }
    }

    /// Everyone who may answer: the approvers, and once `escalated` those
    /// escalated to, less those kept out.
    fn people(&self, escalated: bool) -> BTreeSet<&str> {
        self.approvers
            .iter()
            .chain(self.escalated_to(escalated))
            .map(String::as_str)
            .filter(|person| !self.kept_out.contains(*person))
            .collect()
    }

    /// The groups whose members sign-in says that may answer, and once
    /// `escalated` the one escalated to: see
    /// [`Directory::with_signed_in_groups`].
    pub fn signed_in(&self, escalated: bool) -> impl Iterator<Item = &String> {
        self.groups.iter().chain(
            self.escalation
                .iter()
                .filter(move |_| escalated)
                .flat_map(|e| e.groups.iter()),
        )
    }

    /// The people escalated to, once `escalated`.
    fn escalated_to(&self, escalated: bool) -> impl Iterator<Item = &String> {
        self.escalation
            .iter()
            .filter(move |_| escalated)
            .flat_map(|e| e.people.iter())
    }
}

/// `people`, owned.
fn owned(people: BTreeSet<&str>) -> BTreeSet<String> {
    people.into_iter().map(str::to_owned).collect()
}

/// `list`'s length, as the counts are kept.
fn count(list: &[String]) -> u16 {
    u16::try_from(list.len()).unwrap_or(u16::MAX)
}
