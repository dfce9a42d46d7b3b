//! A person's answer, and where an ask stands after its answers so far.

use super::{Approval, Asked, Directory};

/// One person's recorded answer to an ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Who answered.
    pub person: String,
    /// Whether they accepted (else they declined).
    pub accepted: bool,
    /// The groups their sign-in put them in when they answered (an OpenID
    /// provider's groups claim); empty for a person of the directory.
    pub groups: Vec<String>,
}

impl Answer {
    /// `person` accepted.
    pub fn accept(person: impl Into<String>) -> Answer {
        Answer {
            person: person.into(),
            accepted: true,
            groups: Vec::new(),
        }
    }

    /// `person` declined.
    pub fn decline(person: impl Into<String>) -> Answer {
        Answer {
            person: person.into(),
            accepted: false,
            groups: Vec::new(),
        }
    }

    /// This answer, given by someone their sign-in puts in `groups`.
    #[must_use]
    pub fn in_groups<G: Into<String>>(mut self, groups: impl IntoIterator<Item = G>) -> Answer {
        self.groups = groups.into_iter().map(Into::into).collect();
        self
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
    /// recorded: [`Panel::tally`] of this rule's panel for `asked`.
    ///
    /// [`Panel::tally`]: super::Panel::tally
    pub fn tally(&self, directory: &Directory, asked: &Asked<'_>, answers: &[Answer]) -> Progress {
        self.panel("", directory, asked)
            .tally(answers, asked.escalated)
    }
}
