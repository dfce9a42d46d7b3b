//! askgate-mcp's error: one enum over every failure the crate reports,
//! with the caller's own mistakes ([`Misuse`]) apart from what the peer,
//! the person, the store or the system did.
//!
//! Each function returns the most specific type that says what can go
//! wrong there ([`RoundError`], [`AnswerError`], ...); all of them convert
//! into [`Error`] with `?`, for a caller that wants one type.

use crate::ask::Unanswered;
use crate::client::{AnswerError, Mismatch, SchemaError};
use crate::inbox::LinkFailed;
use crate::input::InputError;
use crate::misuse::Misuse;
use crate::replay::Unwatched;
use crate::round::RoundError;
use crate::stored::{Refused, StoredError};

/// Any failure of askgate-mcp.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API was used in a way that cannot work: a bug in the calling
    /// code, not the doing of the peer or the person. Fix the call.
    #[error(transparent)]
    Misuse(#[from] Misuse),
    /// A server's round could not go on.
    #[error(transparent)]
    Round(#[from] RoundError),
    /// No person could be asked.
    #[error(transparent)]
    Unanswered(#[from] Unanswered),
    /// An input request or its answer is not what the protocol says.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A client got no answer to an elicitation.
    #[error(transparent)]
    Answer(#[from] AnswerError),
    /// A requested schema no form can ask.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// A value does not fit its property.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// A stored ask cannot be read back.
    #[error(transparent)]
    Stored(#[from] StoredError),
    /// An answer to a stored ask was refused by its checks.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// An upstream call was refused before it was sent (the replay
    /// contract).
    #[error(transparent)]
    Unwatched(#[from] Unwatched),
    /// The system's random source failed (no nonce, no id).
    #[error("the system's random source failed: {0}")]
    Random(#[source] getrandom::Error),
}

impl From<LinkFailed> for Error {
    fn from(failed: LinkFailed) -> Error {
        match failed {
            LinkFailed::Random(why) => Error::Random(why),
            LinkFailed::Misuse(misuse) => Error::Misuse(misuse),
        }
    }
}
