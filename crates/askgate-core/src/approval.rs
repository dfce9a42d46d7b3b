//! Who approves what: the people who may answer an ask, how many of them
//! must, and when their answers settle it.
//!
//! One person's answer settling any ask is the simple case. A team wants
//! more: only the SRE group answers for production deploys, two of them
//! for a destructive one, never the person whose agent asked, and the
//! on-call group once the ask has waited half an hour. An [`Approval`]
//! says that for the asks of one configured rule (the gateway picks the
//! rule, first match wins, as it picks a risk), and [`Approval::tally`]
//! decides, from the answers recorded so far, whether the ask is settled:
//!
//! - **any of** ([`Approvers::AnyOf`]): the first eligible answer settles
//!   it, yes or no;
//! - **a quorum** ([`Approvers::Quorum`]): `need` distinct eligible people
//!   must accept. One eligible "no" blocks it (a veto), unless the rule
//!   says `veto = false`: then it takes `need` no's to block it.
//!
//! Each person counts once, by their first answer: an answer they give
//! again (from a second tab, a second replica) changes nothing. An
//! ineligible person's answer is refused by [`Approval::eligible`], with
//! the reason that excludes them, and never counts. Once settled, an ask
//! stays settled: later answers change nothing (a person's "no" is final).
//!
//! **The requester's own people** (the people an agent acts for) never
//! approve its asks at `high_write` and above, unless the rule says
//! otherwise (`not_requester`); where the rule allows them, the answer the
//! agent's own client gives through MCP elicitation counts as that person's
//! ([`Approval::elicitation_counts_as`]).
//!
//! Like the rest of this crate it has no clock: how long an ask has waited
//! is passed in ([`Asked::escalated`]).

mod names;
mod panel;
mod tally;

use std::collections::{BTreeMap, BTreeSet};

use jiff::SignedDuration;
use serde::Deserialize;

use crate::risk::Risk;

pub use names::name_problem;
pub use panel::{Panel, PanelEscalation, Unanswerable};
pub use tally::{Answer, Progress};

/// The people who may answer asks, with the groups each belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Directory {
    /// Each person's groups, by the person's name.
    people: BTreeMap<String, BTreeSet<String>>,
    /// Each group's people, by the group's name.
    groups: BTreeMap<String, BTreeSet<String>>,
    signed_in: BTreeSet<String>,
}

impl Directory {
    /// The directory of `people`: each a name and the groups they belong to.
    ///
    /// # Errors
    /// [`PolicyError::DuplicatePerson`] when two people share a name, and
    /// [`PolicyError::Ambiguous`] when a group has a person's name (a rule
    /// naming it could mean either).
    ///
    /// # Example
    /// ```
    /// use askgate_core::approval::Directory;
    /// let team = Directory::new([
    ///     ("ana", vec!["sre"]),
    ///     ("bo", vec!["sre", "oncall"]),
    ///     ("cy", vec!["dev"]),
    /// ])?;
    /// assert_eq!(team.members("sre").collect::<Vec<_>>(), ["ana", "bo"]);
    /// # Ok::<(), askgate_core::approval::PolicyError>(())
    /// ```
    pub fn new<P, G>(
        people: impl IntoIterator<Item = (P, Vec<G>)>,
    ) -> Result<Directory, PolicyError>
    where
        P: Into<String>,
        G: Into<String>,
    {
        let mut directory = Directory::default();
        for (name, groups) in people {
            let name = name.into();
            let groups: BTreeSet<String> = groups.into_iter().map(Into::into).collect();
            for named in std::iter::once(&name).chain(&groups) {
                if let Some(why) = name_problem(named) {
                    return Err(PolicyError::BadName {
                        name: named.clone(),
                        why,
                    });
                }
            }
            for group in &groups {
                directory
                    .groups
                    .entry(group.clone())
                    .or_default()
                    .insert(name.clone());
            }
            if directory.people.insert(name.clone(), groups).is_some() {
                return Err(PolicyError::DuplicatePerson { name });
            }
        }
        if let Some(name) = directory
            .groups
            .keys()
            .find(|group| directory.people.contains_key(*group))
        {
            return Err(PolicyError::Ambiguous { name: name.clone() });
        }
        Ok(directory)
    }

    /// Add groups whose members are whoever sign-in says belongs to them
    /// (the groups claim of an OpenID provider's id token): a rule may name
    /// them though no person of the directory is in them, and a person
    /// signed in with one of them may answer what the rule lets that group
    /// answer.
    ///
    /// # Errors
    /// [`PolicyError::Ambiguous`] when one has a person's name.
    pub fn with_signed_in_groups<G: Into<String>>(
        mut self,
        groups: impl IntoIterator<Item = G>,
    ) -> Result<Directory, PolicyError> {
        for group in groups {
            let group = group.into();
            if let Some(why) = name_problem(&group) {
                return Err(PolicyError::BadName { name: group, why });
            }
            if self.people.contains_key(&group) {
                return Err(PolicyError::Ambiguous { name: group });
            }
            // A person of the config who also signs in with the provider
            // (under another name) would count twice in one group.
            if self.groups.contains_key(&group) {
                return Err(PolicyError::SignedInAndConfigured { name: group });
            }
            self.signed_in.insert(group);
        }
        Ok(self)
    }

    /// Whether sign-in says who is in `group` (see
    /// [`Directory::with_signed_in_groups`]).
    pub fn is_signed_in_group(&self, group: &str) -> bool {
        self.signed_in.contains(group)
    }

    /// Whether `name` is a person here.
    pub fn is_person(&self, name: &str) -> bool {
        self.people.contains_key(name)
    }

    /// The people of group `group`, by name (none for a group nobody is in).
    pub fn members(&self, group: &str) -> impl Iterator<Item = &str> {
        self.groups
            .get(group)
            .into_iter()
            .flat_map(|people| people.iter().map(String::as_str))
    }

    /// The people `name` stands for: the person, or the group's people.
    fn resolve(&self, name: &str) -> Result<BTreeSet<&str>, PolicyError> {
        if let Some((person, _)) = self.people.get_key_value(name) {
            return Ok(BTreeSet::from([person.as_str()]));
        }
        if self.groups.contains_key(name) || self.signed_in.contains(name) {
            return Ok(self.members(name).collect());
        }
        Err(PolicyError::Unknown {
            name: name.to_owned(),
            known: self
                .groups
                .keys()
                .chain(
                    self.signed_in
                        .iter()
                        .filter(|g| !self.groups.contains_key(*g)),
                )
                .chain(self.people.keys())
                .cloned()
                .collect(),
        })
    }
}

/// Who may answer the asks of a rule.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approvers {
    /// Any one of these groups or people: the first eligible answer settles
    /// the ask.
    AnyOf(Vec<String>),
    /// `need` distinct people of group `of` must accept.
    Quorum {
        /// The group (or person) whose people answer.
        of: String,
        /// How many distinct acceptances settle it; at least 1.
        need: u16,
    },
}

/// Who else may answer once an ask has waited long enough.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Escalation {
    /// How long the ask waits before it escalates (`"30m"`, `"PT30M"`).
    pub after: SignedDuration,
    /// The group (or person) who may answer from then on, besides the
    /// rule's approvers; they count toward a quorum like them.
    pub to: String,
}

/// The approval rule of some asks: who may answer, how many must, and how
/// long the ask may wait. Deserializes from the approval part of a
/// `[[approvals]]` entry (its matching part is the gateway's).
///
/// # Example
/// ```
/// use askgate_core::approval::{Answer, Approval, Asked, Directory, Progress};
/// use askgate_core::Risk;
///
/// let team = Directory::new([("ana", vec!["sre"]), ("bo", vec!["sre"]), ("cy", vec!["sre"])])?;
/// let rule: Approval = toml_like(r#"{"quorum": {"of": "sre", "need": 2}}"#);
/// rule.check(&team)?;
/// let asked = Asked { risk: Risk::Destructive, requester_people: &["cy".to_owned()], escalated: false };
///
/// // Cy's agent asked: Cy may not approve it.
/// assert!(rule.eligible(&team, "cy", &asked).is_err());
/// let answers = [Answer::accept("ana")];
/// assert_eq!(rule.tally(&team, &asked, &answers), Progress::Waiting { accepts_needed: 1, declines_needed: 1 });
/// let answers = [Answer::accept("ana"), Answer::accept("bo")];
/// assert_eq!(
///     rule.tally(&team, &asked, &answers),
///     Progress::Accepted { by: vec!["ana".to_owned(), "bo".to_owned()] },
/// );
/// # fn toml_like(json: &str) -> Approval { serde_json::from_str(json).unwrap() }
/// # Ok::<(), askgate_core::approval::PolicyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// Who may answer.
    #[serde(flatten)]
    pub approvers: Approvers,
    /// Whether the requester's own people are kept from answering; when
    /// not set, they are at `high_write` and above.
    #[serde(default)]
    pub not_requester: Option<bool>,
    /// `not = "requester"`: the requester's own people are kept from
    /// answering at every risk (as `not_requester = true`).
    #[serde(default)]
    pub not: Option<Excluded>,
    /// Whether one eligible "no" blocks a quorum ask (the default); when
    /// `false`, it takes `need` no's.
    #[serde(default = "veto_by_default")]
    pub veto: bool,
    /// Who else may answer once the ask has waited long enough.
    #[serde(default)]
    pub escalate: Option<Escalation>,
    /// How long the ask may wait for its answers before it expires.
    #[serde(default)]
    pub expires: Option<SignedDuration>,
}

/// Who a rule keeps from answering (`not = "requester"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Excluded {
    /// The people the requesting agent acts for.
    Requester,
}

fn veto_by_default() -> bool {
    true
}

/// What the rule needs to know of one ask.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// The risk of the call asked about.
    pub risk: Risk,
    /// The people the requesting agent acts for.
    pub requester_people: &'a [String],
    /// Whether the ask has waited past the rule's `escalate.after`.
    pub escalated: bool,
}

/// Why a person may not answer an ask. A person told this learns which
/// part of the rule excludes them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Ineligible {
    /// Not one of the rule's approvers (nor, once escalated, of those it
    /// escalates to).
    #[error("{person} is not among those who may answer this ask ({approvers})")]
    NotAnApprover {
        /// Who answered.
        person: String,
        /// Who may, as the rule says it.
        approvers: String,
    },
    /// One of the requester's own people, at a risk where they may not
    /// approve their own ask.
    #[error(
        "{person} acts for the agent that asked, and may not answer its own {risk} ask (the rule's not_requester)"
    )]
    Requester {
        /// Who answered.
        person: String,
        /// The risk of the call.
        risk: Risk,
    },
    /// The rule keeps the requester's people out, but the agent that
    /// asked acts for nobody askgate knows: anyone could be its person.
    #[error(
        "the agent that asked acts for nobody askgate knows, and the rule keeps its own people from answering its {risk} ask: nobody can be told apart from them (give the agent acts_for in the config)"
    )]
    RequesterUnknown {
        /// The risk of the call.
        risk: Risk,
    },
    /// Not a person of this deployment.
    #[error("{person} is not a person askgate knows")]
    Unknown {
        /// Who answered.
        person: String,
    },
}

/// A rule that cannot be applied as configured. Each names what is wrong
/// and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// Two people share a name.
    #[error("two people are named {name:?}; each person's name must be their own")]
    DuplicatePerson {
        /// The name.
        name: String,
    },
    /// A name that cannot be told apart in a list or a log line.
    #[error("{name:?} cannot be a person's or a group's name: {why}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A group with a person's name.
    #[error("{name:?} names both a person and a group; rename one of them")]
    Ambiguous {
        /// The name.
        name: String,
    },
    /// A rule names nobody known.
    #[error("{name:?} is neither a person nor a group; known: {}", if known.is_empty() { "none".to_owned() } else { known.join(", ") })]
    Unknown {
        /// The name.
        name: String,
        /// The groups and people there are.
        known: Vec<String>,
    },
    /// A group both of the config's people and signed in.
    #[error(
        "{name:?} is both a group of [[people]] and a group the provider names ([inbox.oidc] groups): a person who also signs in with the provider could count twice in it; keep it in one of them"
    )]
    SignedInAndConfigured {
        /// The group.
        name: String,
    },
    /// `any_of` with nobody in it.
    #[error("any_of names nobody; name at least one group or person")]
    NobodyNamed,
    /// `not = "requester"` with `not_requester = false`.
    #[error("not = \"requester\" and not_requester = false say opposite things; keep one of them")]
    Contradicts,
    /// A quorum of none.
    #[error("a quorum needs at least 1 acceptance, not 0")]
    ZeroQuorum,
    /// A quorum larger than its group.
    #[error(
        "a quorum of {of:?} needs {need}, but {of:?} has {have} people: the ask could never settle"
    )]
    QuorumTooLarge {
        /// The group.
        of: String,
        /// The acceptances needed.
        need: u16,
        /// The people in it.
        have: usize,
    },
    /// A duration of zero or less.
    #[error("{what} must be longer than zero, not {value:#}")]
    NotPositive {
        /// `expires` or `escalate.after`.
        what: &'static str,
        /// The value given.
        value: SignedDuration,
    },
    /// Escalation after the ask has expired.
    #[error(
        "escalate.after ({after:#}) must be shorter than expires ({expires:#}), or nobody is ever escalated to"
    )]
    EscalatesTooLate {
        /// `escalate.after`.
        after: SignedDuration,
        /// `expires`.
        expires: SignedDuration,
    },
}

impl Approval {
    /// Check the rule against `directory`: every name known, a quorum its
    /// group can meet, durations that make sense.
    ///
    /// # Errors
    /// The first [`PolicyError`] found.
    pub fn check(&self, directory: &Directory) -> Result<(), PolicyError> {
        match &self.approvers {
            Approvers::AnyOf(names) if names.is_empty() => return Err(PolicyError::NobodyNamed),
            Approvers::AnyOf(names) => {
                for name in names {
                    directory.resolve(name)?;
                }
            }
            Approvers::Quorum { need: 0, .. } => return Err(PolicyError::ZeroQuorum),
            Approvers::Quorum { of, need } => {
                let have = directory.resolve(of)?.len();
                // Who is in a signed-in group is known only as they sign in.
                if usize::from(*need) > have && !directory.is_signed_in_group(of) {
                    return Err(PolicyError::QuorumTooLarge {
                        of: of.clone(),
                        need: *need,
                        have,
                    });
                }
            }
        }
        if self.not.is_some() && self.not_requester == Some(false) {
            return Err(PolicyError::Contradicts);
        }
        if let Some(expires) = self.expires
            && !expires.is_positive()
        {
            return Err(PolicyError::NotPositive {
                what: "expires",
                value: expires,
            });
        }
        if let Some(escalation) = &self.escalate {
            directory.resolve(&escalation.to)?;
            if !escalation.after.is_positive() {
                return Err(PolicyError::NotPositive {
                    what: "escalate.after",
                    value: escalation.after,
                });
            }
            if let Some(expires) = self.expires
                && escalation.after >= expires
            {
                return Err(PolicyError::EscalatesTooLate {
                    after: escalation.after,
                    expires,
                });
            }
        }
        Ok(())
    }

    /// How many distinct acceptances settle an ask of this rule.
    pub fn need(&self) -> u16 {
        match self.approvers {
            Approvers::AnyOf(_) => 1,
            Approvers::Quorum { need, .. } => need,
        }
    }

    /// How many distinct no's block it.
    pub fn declines_to_block(&self) -> u16 {
        match self.approvers {
            Approvers::AnyOf(_) => 1,
            Approvers::Quorum { need, .. } if !self.veto => need,
            Approvers::Quorum { .. } => 1,
        }
    }

    /// Whether the requester's own people are kept from answering at
    /// `risk`.
    pub fn excludes_requester(&self, risk: Risk) -> bool {
        self.not_requester
            .or(self.not.map(|Excluded::Requester| true))
            .unwrap_or(risk >= Risk::HighWrite)
    }

    /// Whether the rule itself says the requester's people are kept out
    /// (`not = "requester"` or `not_requester = true`), rather than the
    /// default at `high_write` and above.
    pub fn excludes_requester_by_name(&self) -> bool {
        self.not_requester == Some(true) || self.not.is_some()
    }

    /// Whether `person` may answer `asked`.
    ///
    /// # Errors
    /// [`Ineligible`], naming what excludes them.
    pub fn eligible(
        &self,
        directory: &Directory,
        person: &str,
        asked: &Asked<'_>,
    ) -> Result<(), Ineligible> {
        if !directory.is_person(person) {
            return Err(Ineligible::Unknown {
                person: person.to_owned(),
            });
        }
        self.panel("", directory, asked)
            .eligible(person, asked.escalated)
    }

    /// The person the answer of the requesting agent's own client (MCP
    /// elicitation) counts as, if it counts at all: the agent acts for
    /// exactly one person, and the rule lets that person answer.
    pub fn elicitation_counts_as<'a>(
        &self,
        directory: &Directory,
        asked: &Asked<'a>,
    ) -> Option<&'a str> {
        match asked.requester_people {
            [person] => self
                .eligible(directory, person, asked)
                .is_ok()
                .then_some(person.as_str()),
            _ => None,
        }
    }

    /// The rule's approvers, by name. A name the directory does not know
    /// stands for nobody ([`Approval::check`] refuses such a rule).
    fn approvers<'d>(&self, directory: &'d Directory) -> BTreeSet<&'d str> {
        let names: Vec<&str> = match &self.approvers {
            Approvers::AnyOf(names) => names.iter().map(String::as_str).collect(),
            Approvers::Quorum { of, .. } => vec![of.as_str()],
        };
        names
            .into_iter()
            .filter_map(|name| directory.resolve(name).ok())
            .flatten()
            .collect()
    }

    /// The groups the rule names whose members sign-in says.
    fn signed_in_groups(&self, directory: &Directory) -> BTreeSet<String> {
        let names: Vec<&String> = match &self.approvers {
            Approvers::AnyOf(names) => names.iter().collect(),
            Approvers::Quorum { of, .. } => vec![of],
        };
        names
            .into_iter()
            .filter(|name| directory.is_signed_in_group(name))
            .cloned()
            .collect()
    }

    /// Who may answer, as the rule says it.
    fn describe(&self) -> String {
        match &self.approvers {
            Approvers::AnyOf(names) => format!("any of {}", names.join(", ")),
            Approvers::Quorum { of, need } => format!("{need} of {of}"),
        }
    }
}

#[cfg(test)]
mod signed_in_tests;
#[cfg(test)]
mod tests;
