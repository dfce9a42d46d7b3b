//! When a configured intake is due, decided from the thread's recorded
//! state — never from process memory, so a restart changes nothing.

use serde::{Deserialize, Serialize};

/// How often an intake question set is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntakeWhen {
    /// Once, at the start of a thread.
    Once,
    /// Before every turn.
    EveryTurn,
}

/// What the store recorded about a thread's intake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ThreadState {
    /// The thread's current turn, counting from 0.
    pub turn: u64,
    /// The turn at which the intake last settled, if ever.
    pub intake_settled_turn: Option<u64>,
    /// Whether an intake ask is parked and not yet settled.
    pub intake_pending: bool,
}

impl IntakeWhen {
    /// Whether the intake must be asked now.
    ///
    /// # Example
    /// ```
    /// use askgate_core::{IntakeWhen, ThreadState};
    /// let fresh = ThreadState::default();
    /// assert!(IntakeWhen::Once.is_due(fresh));
    /// let later = ThreadState { turn: 3, intake_settled_turn: Some(0), intake_pending: false };
    /// assert!(!IntakeWhen::Once.is_due(later));
    /// assert!(IntakeWhen::EveryTurn.is_due(later));
    /// ```
    pub fn is_due(self, thread: ThreadState) -> bool {
        if thread.intake_pending {
            return false;
        }
        match (self, thread.intake_settled_turn) {
            (_, None) => true,
            (IntakeWhen::Once, Some(_)) => false,
            (IntakeWhen::EveryTurn, Some(settled)) => settled < thread.turn,
        }
    }
}
