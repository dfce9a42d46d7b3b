//! One call's life, as a deterministic state machine in the style of
//! quinn-proto: a driver — the rmcp path or the express lane — tells it
//! what happened (`handle_*`) and carries out what it says ([`Lifecycle::
//! poll`]). No I/O, no clock: every path moves the ledger, counts, audits
//! and answers the same way, and every order of events is tested here.
//!
//! ```text
//!            decided, proceeds          recorded           ended
//! Deciding ─────────────────▶ Recording ───────▶ Sent ──────────▶ Over
//!     │   (recorded first)        │ cancelled: the client is    ▲
//!     │   decided, proceeds       │ answered now; once the      │
//!     │   (recorded when ended)   │ record is written, the end  │
//!     ├──────────────────────────────────────────▶ Sent ────────┘
//!     │ refused, or cancelled     │ is "not sent"
//!     └──▶ audited, answered ─▶ Over ◀───────────────┘
//! ```

use std::collections::VecDeque;

use askgate_core::{Method, Risk};

use crate::record::Ended;

/// When a call's audit entry and ledger record are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recorded {
    /// Durable before the request leaves: a crash never forgets a call
    /// that may have run.
    BeforeSent,
    /// In one write when it ends (or as `sent` if it never does).
    WhenEnded,
}

/// When a call of `risk`, let through by `method`, is recorded: before it
/// is sent for every call above `read`, for a call a person decided, and
/// when the operator asked for it (`durable_reads`); else when it ends —
/// replaying a read nobody decided is harmless.
pub(crate) fn when_recorded(risk: Risk, method: Method, durable_reads: bool) -> Recorded {
    let nobody_decided = matches!(method, Method::NotRequired | Method::AutoApproved);
    if durable_reads || risk > Risk::Read || !nobody_decided {
        Recorded::BeforeSent
    } else {
        Recorded::WhenEnded
    }
}

/// What a call's decision came to, as the lifecycle takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// How it was decided (counted).
    pub(crate) method: Method,
    /// Whether the call may go.
    pub(crate) proceeds: bool,
    /// When it is recorded, if it goes.
    pub(crate) recorded: Recorded,
    /// The caller withdrew the call while it was decided.
    pub(crate) cancelled: bool,
}

/// Which audit entry is written alone, for a call that is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audited {
    /// The decision's: the call was refused.
    Decision,
    /// The withdrawal's: the caller cancelled the call while it was
    /// decided.
    Withdrawal,
}

/// What the client is answered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// The upstream's result, as it came.
    Result,
    /// A tool result with `isError`, its text for the model: the call was
    /// refused, or withdrawn, and not sent.
    NotSent(Audited),
    /// A JSON-RPC error: how the call ended upstream
    /// ([`Ended::client_error`]).
    Failed(Ended),
    /// A JSON-RPC error: the ledger could not record the call, so it was
    /// not sent.
    Unrecorded,
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    /// Count the decision, by its method.
    CountDecision(Method),
    /// Write this audit entry alone: the call is not sent.
    Audit(Audited),
    /// Write the call as sent, with its decision's audit entry, durably;
    /// then [`Lifecycle::handle_recorded`].
    RecordSent,
    /// Send the request upstream; then [`Lifecycle::handle_ended`].
    Send,
    /// The call ended so: count it, and record its end (queued after a
    /// durable record, else written with its decision in one write).
    RecordEnd(Ended),
    /// Answer the client.
    Answer(Answer),
}

/// Where a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Deciding,
    /// Its record is being written; `withdrawn` once the caller cancelled
    /// meanwhile (and was answered).
    Recording {
        withdrawn: bool,
    },
    Sent,
    Over,
}

/// One call, from its decision to its answer.
#[derive(Debug)]
pub(crate) struct Lifecycle {
    stage: Stage,
    effects: VecDeque<Effect>,
}

impl Default for Lifecycle {
    fn default() -> Lifecycle {
        Lifecycle::new()
    }
}

impl Lifecycle {
    /// A call being decided.
    pub(crate) fn new() -> Lifecycle {
        Lifecycle {
            stage: Stage::Deciding,
            effects: VecDeque::with_capacity(3),
        }
    }

    /// What the driver does next, in order; `None` until something else
    /// happens.
    pub(crate) fn poll(&mut self) -> Option<Effect> {
        self.effects.pop_front()
    }

    /// Whether the call is over: answered, and its end recorded.
    pub(crate) fn is_over(&self) -> bool {
        self.stage == Stage::Over && self.effects.is_empty()
    }

    /// The call was decided.
    pub(crate) fn handle_decided(&mut self, decision: Decision) {
        if self.stage != Stage::Deciding {
            return;
        }
        self.effects
            .push_back(Effect::CountDecision(decision.method));
        let not_sent = match (decision.proceeds, decision.cancelled) {
            (false, _) => Some(Audited::Decision),
            (true, true) => Some(Audited::Withdrawal),
            (true, false) => None,
        };
        if let Some(audited) = not_sent {
            self.effects.push_back(Effect::Audit(audited));
            self.answer(Answer::NotSent(audited));
            self.stage = Stage::Over;
            return;
        }
        match decision.recorded {
            Recorded::BeforeSent => {
                self.effects.push_back(Effect::RecordSent);
                self.stage = Stage::Recording { withdrawn: false };
            }
            Recorded::WhenEnded => self.send(),
        }
    }

    /// The caller cancelled the call. Before it is sent, it never is: the
    /// client is answered now, and a record being written says so once
    /// written. After it is sent, the upstream is told by the transport;
    /// its end is still recorded.
    pub(crate) fn handle_cancelled(&mut self) {
        if let Stage::Recording { withdrawn: false } = self.stage {
            self.stage = Stage::Recording { withdrawn: true };
            self.answer(Answer::NotSent(Audited::Withdrawal));
        }
    }

    /// The record of the call as sent was written (`written`), or failed.
    pub(crate) fn handle_recorded(&mut self, written: bool) {
        let Stage::Recording { withdrawn } = self.stage else {
            return;
        };
        match (written, withdrawn) {
            (true, false) => self.send(),
            (true, true) => {
                self.effects.push_back(Effect::RecordEnd(Ended::Cancelled));
                self.stage = Stage::Over;
            }
            (false, withdrawn) => {
                // Nothing says it was sent, and it is not.
                if !withdrawn {
                    self.answer(Answer::Unrecorded);
                }
                self.stage = Stage::Over;
            }
        }
    }

    /// The call ended upstream so.
    pub(crate) fn handle_ended(&mut self, ended: Ended) {
        if self.stage != Stage::Sent {
            return;
        }
        // The end is recorded before the answer goes: a client that stops
        // the gateway as soon as it has its answer finds it among the
        // writes a clean stop keeps.
        self.effects.push_back(Effect::RecordEnd(ended.clone()));
        let answer = if ended.answered() {
            Answer::Result
        } else {
            Answer::Failed(ended)
        };
        self.answer(answer);
        self.stage = Stage::Over;
    }

    fn send(&mut self) {
        self.effects.push_back(Effect::Send);
        self.stage = Stage::Sent;
    }

    fn answer(&mut self, answer: Answer) {
        self.effects.push_back(Effect::Answer(answer));
    }
}

#[cfg(test)]
mod tests;
