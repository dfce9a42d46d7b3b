//! Asks: parked, then settled once — first answer wins, or, for an ask a
//! panel decides, the answers that settle it under its rule — or expired.

mod moves;
mod panel;
mod row;

pub use panel::{Count, Counted, PersonAnswer, RecordedAnswer};

use std::sync::Arc;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// What the store holds of the arguments of the call an ask was parked
/// for (see [`Store::park_with_arguments`](crate::Store::park_with_arguments)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SealedArguments {
    /// Kept while the ask is pending: the sealed text, for its page.
    Held(String),
    /// The ask had them, and they were erased when it settled or expired.
    Erased,
    /// None were kept with it (parked before they were, or by `askgate
    /// ask`), or there is no such ask.
    None,
}

/// Where an ask stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AskStatus {
    /// Waiting for a person.
    Pending,
    /// Answered (accepted).
    Answered,
    /// Declined.
    Declined,
    /// Cancelled.
    Cancelled,
    /// Skipped (a question set: proceed on assumptions).
    Skipped,
    /// Expired before an answer came; no default was applied.
    Expired,
}

impl AskStatus {
    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            AskStatus::Pending => "pending",
            AskStatus::Answered => "answered",
            AskStatus::Declined => "declined",
            AskStatus::Cancelled => "cancelled",
            AskStatus::Skipped => "skipped",
            AskStatus::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Option<AskStatus> {
        [
            AskStatus::Pending,
            AskStatus::Answered,
            AskStatus::Declined,
            AskStatus::Cancelled,
            AskStatus::Skipped,
            AskStatus::Expired,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// An ask to park.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAsk {
    /// Its id (made by the caller: the store has no randomness).
    pub id: String,
    /// `tool:<run_id>:<call_id>`: the call that waits on it.
    pub resume_key: String,
    /// The call it is about, across every ask for it: the same principal,
    /// tool and arguments (see [`Store::asks_of_call`]). Unlike
    /// `resume_key`, several asks may share it (one after another).
    ///
    /// [`Store::asks_of_call`]: crate::Store::asks_of_call
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_key: Option<String>,
    /// Who the ask is for.
    pub principal: String,
    /// The form or question set, as JSON.
    pub request: Json,
    /// The upstream server, when the ask guards a tool call.
    pub server: Option<String>,
    /// The tool.
    pub tool: Option<String>,
    /// The tool's risk.
    pub risk: Option<String>,
    /// When it was parked.
    pub created_at: Timestamp,
    /// When it expires, if ever.
    pub expires_at: Option<Timestamp>,
    /// The panel that decides it, as JSON, when a team's approval rule
    /// does (askgate-core's `approval::Panel`): then only
    /// [`Store::answer_as`] settles it, by its people's answers (a caller
    /// may still withdraw it as `cancelled`). `None`: the first answer
    /// settles it.
    ///
    /// [`Store::answer_as`]: crate::Store::answer_as
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub panel: Option<Json>,
}

/// A stored ask.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AskRow {
    /// The ask as parked.
    #[serde(flatten)]
    pub ask: NewAsk,
    /// Where it stands.
    pub status: AskStatus,
    /// The reply that settled it.
    pub reply: Option<Json>,
    /// The settled outcome.
    pub outcome: Option<Json>,
    /// Who answered.
    pub answered_by: Option<String>,
    /// Through which surface.
    pub answered_via: Option<String>,
    /// When it settled.
    pub settled_at: Option<Timestamp>,
}

/// News that an ask settled (answered, declined, expired...).
#[derive(Debug, Clone)]
pub struct AskSettled {
    /// The ask's id.
    pub id: Arc<str>,
    /// The ask as it settled, when it settled in this process; `None` when
    /// the news came from another process (read the ask to see it).
    pub row: Option<Arc<AskRow>>,
}

/// News that an ask was parked (a new one: parking an ask again is not
/// news).
#[derive(Debug, Clone)]
pub struct AskParked {
    /// The ask's id.
    pub id: Arc<str>,
    /// The ask as parked, when it was parked in this process; `None` when
    /// the news came from another process (read the ask to see it).
    pub row: Option<Arc<AskRow>>,
}

/// News that a person's answer to an ask a panel decides was counted
/// (see [`Store::answer_as`](crate::Store::answer_as)).
#[derive(Debug, Clone)]
pub struct AskAnswered {
    /// The ask's id.
    pub id: Arc<str>,
    /// Who answered.
    pub person: Arc<str>,
    /// Whether they approved (else they declined).
    pub accepted: bool,
    /// The ask after the answer, when it was counted in this process;
    /// `None` when the news came from another process (read the ask).
    pub row: Option<Arc<AskRow>>,
}

/// An answer to apply to a pending ask.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settlement {
    /// The status it settles to (not `pending` or `expired`).
    pub status: AskStatus,
    /// The reply as given.
    pub reply: Json,
    /// The settled outcome.
    pub outcome: Json,
    /// Who answered.
    pub answered_by: Option<String>,
    /// Through which surface (`mcp`, `web`, `cli`, ...).
    pub answered_via: String,
}

/// A page of asks, newest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    /// The asks.
    pub asks: Vec<AskRow>,
    /// Pass back to get the next page; `None` on the last.
    pub next: Option<String>,
}

/// The columns of an ask, in the order [`Store::read`](crate::Store::read) expects them.
macro_rules! ask_columns {
    () => {
        "id, resume_key, principal, request, server, tool, risk, created_at, expires_at, \
         status, reply, outcome, answered_by, answered_via, settled_at, call_key, panel"
    };
}

/// The columns of an ask, in the order [`Store::read`](crate::Store::read) expects them.
pub(crate) const ASK_COLUMNS: &str = ask_columns!();

const BY_ID: &str = concat!("SELECT ", ask_columns!(), " FROM asks WHERE id = $1");
const BY_RESUME_KEY: &str = concat!(
    "SELECT ",
    ask_columns!(),
    " FROM asks WHERE resume_key = $1"
);

/// The asks of a call key, newest first, at most `$2`. The limit is an
/// expression, not the bare parameter: SQLite (3.47 on) plans a bare
/// `LIMIT $2` for the value bound, and so compiles the statement again
/// every time it is bound — on the read before each confirmation, some
/// 160,000 instructions by callgrind, more than the read itself. The
/// index on `(call_key, created_at, id)` gives the order without a sort
/// whatever the limit.
pub(crate) const BY_CALL_KEY: &str = concat!(
    "SELECT ",
    ask_columns!(),
    " FROM asks WHERE call_key = $1 ORDER BY created_at DESC, id DESC LIMIT $2 + 0"
);

const PARK: &str = concat!(
    "INSERT INTO asks (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, panel, sealed_arguments, status) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending') ON CONFLICT DO NOTHING RETURNING ",
    ask_columns!()
);

/// Settle an ask. This statement, like every one that ends an ask, leaves
/// its sealed arguments to the store, which erases them as the status
/// leaves `pending` (schema v18).
const SETTLE: &str = concat!(
    "UPDATE asks SET status = $1, reply = $2, outcome = $3, answered_by = $4, answered_via = $5, settled_at = $6 \
     WHERE id = $7 AND status = 'pending' AND (expires_at IS NULL OR expires_at > $6) \
     AND (panel IS NULL OR $1 = 'cancelled') RETURNING ",
    ask_columns!()
);

/// [`PARK`] returning only the id: an ask it returns is stored as given.
const PARK_NEW: &str = "INSERT INTO asks (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, panel, sealed_arguments, status) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending') ON CONFLICT DO NOTHING RETURNING id";

/// [`PARK_NEW`] for many asks at once (PostgreSQL): one array per parameter.
const PARK_MANY: &str = "INSERT INTO asks (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, panel, sealed_arguments, status) \
     SELECT id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, panel, sealed_arguments, 'pending' \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
     $8::int8[], $9::int8[], $10::text[], $11::text[], $12::text[]) AS p (id, resume_key, principal, request, server, tool, risk, created_at, expires_at, call_key, panel, sealed_arguments) \
     ON CONFLICT DO NOTHING RETURNING id";

/// [`SETTLE`] for many asks at once (PostgreSQL): one array per parameter.
const SETTLE_MANY: &str = concat!(
    "UPDATE asks SET status = s.new_status, reply = s.new_reply, outcome = s.new_outcome, \
     answered_by = s.new_by, answered_via = s.new_via, settled_at = s.new_at \
     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int8[], $7::text[]) \
     AS s (new_status, new_reply, new_outcome, new_by, new_via, new_at, target) \
     WHERE asks.id = s.target AND asks.status = 'pending' \
     AND (asks.expires_at IS NULL OR asks.expires_at > s.new_at) \
     AND (asks.panel IS NULL OR s.new_status = 'cancelled') RETURNING ",
    ask_columns!()
);

/// [`BY_ID`], the row locked until the write ends (PostgreSQL; SQLite's
/// writer holds the file's write lock already): one answer to a panel's
/// ask is counted at a time, whichever replica takes it.
const LOCK_BY_ID: &str = concat!(
    "SELECT ",
    ask_columns!(),
    " FROM asks WHERE id = $1 FOR UPDATE"
);

/// [`SETTLE`] for the ask a panel's count settled (see `panel`), in the
/// write that counted it.
const SETTLE_COUNTED: &str = concat!(
    "UPDATE asks SET status = $1, reply = $2, outcome = $3, answered_by = $4, answered_via = $5, settled_at = $6 \
     WHERE id = $7 AND status = 'pending' RETURNING ",
    ask_columns!()
);

/// Expire an ask (its sealed arguments erased by the store, see [`SETTLE`]).
const EXPIRE_ONE: &str = concat!(
    "UPDATE asks SET status = 'expired', settled_at = $1 \
     WHERE id = $2 AND status = 'pending' \
     RETURNING ",
    ask_columns!()
);
