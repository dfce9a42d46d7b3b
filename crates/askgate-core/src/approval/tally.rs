//! The count of an ask's answers under its rule: settled, or how many
//! answers it still waits for.

use std::collections::BTreeSet;

use super::{Approval, Asked, Directory};

/// One person's recorded answer to an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Who answered.
    pub person: String,
    /// Whether they accepted (else they declined).
    pub accepted: bool,
}

impl Answer {
    /// `person` accepted.
    pub fn accept(person: impl Into<String>) -> Answer {
        Answer {
            person: person.into(),
            accepted: true,
        }
    }

    /// `person` declined.
    pub fn decline(person: impl Into<String>) -> Answer {
        Answer {
            person: person.into(),
            accepted: false,
        }
    }
}

/// Where an ask stands under its rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Not settled: it waits for this many more distinct acceptances, or
    /// this many more no's, whichever comes first.
    Waiting {
        /// Acceptances still needed to settle it as accepted.
        accepts_needed: u16,
        /// No's still needed to block it.
        declines_needed: u16,
    },
    /// Accepted by these people, in the order they answered.
    Accepted {
        /// Who accepted.
        by: Vec<String>,
    },
    /// Blocked by these people's no's, in the order they answered.
    Declined {
        /// Who declined.
        by: Vec<String>,
    },
    /// Blocked because too few eligible people are left to accept it (the
    /// requester's own people excluded, or enough no's without a veto);
    /// the no's so far, in order.
    Unreachable {
        /// Who declined.
        declined_by: Vec<String>,
    },
}

impl Progress {
    /// Whether the ask is settled (nothing more counts).
    pub fn is_settled(&self) -> bool {
        !matches!(self, Progress::Waiting { .. })
    }
}

impl Approval {
    /// Where `asked` stands after `answers`, in the order they were
    /// recorded. Each person counts once, by their first eligible answer;
    /// an ineligible person's answer never counts; the first moment the
    /// answers accept or block the ask settles it, and nothing after
    /// changes that.
    pub fn tally(&self, directory: &Directory, asked: &Asked<'_>, answers: &[Answer]) -> Progress {
        let (need, block) = (self.need(), self.declines_to_block());
        let eligible = self.eligible_people(directory, asked);
        let mut heard = BTreeSet::new();
        let (mut accepted, mut declined) = (Vec::new(), Vec::new());
        let reachable =
            |declined: &Vec<String>| eligible.len() - declined.len() >= usize::from(need);
        if !reachable(&declined) {
            return Progress::Unreachable {
                declined_by: declined,
            };
        }
        for answer in answers {
            let person = answer.person.as_str();
            if !eligible.contains(person) || !heard.insert(person) {
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
}

/// `list`'s length, as the counts are kept.
fn count(list: &[String]) -> u16 {
    u16::try_from(list.len()).unwrap_or(u16::MAX)
}
