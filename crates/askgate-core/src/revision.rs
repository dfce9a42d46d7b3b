//! The MCP protocol revisions askgate maps asks onto.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An MCP protocol revision, as negotiated with a client.
///
/// The revision decides how a [`Form`](crate::Form) is written on the wire:
/// 2025-06-18 knows only flat primitives and `enum` + `enumNames`, while
/// 2025-11-25 and later carry titled choices, multi-select arrays and
/// defaults on every primitive.
///
/// # Example
/// ```
/// use askgate_core::Revision;
/// let revision: Revision = "2025-11-25".parse()?;
/// assert_eq!(revision, Revision::V2025_11_25);
/// assert_eq!(revision.to_string(), "2025-11-25");
/// # Ok::<(), askgate_core::UnknownRevision>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Revision {
    /// 2025-06-18: form elicitation; `enum` + `enumNames`; defaults only on booleans.
    #[serde(rename = "2025-06-18")]
    V2025_06_18,
    /// 2025-11-25: titled enums, multi-select arrays, defaults on every primitive, URL mode.
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// 2026-07-28: the 2025-11-25 form vocabulary, carried in multi round-trip requests.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl Revision {
    /// Every revision askgate knows, oldest first.
    pub const ALL: [Revision; 3] = [
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ];

    /// The revision's date string, as it appears in `protocolVersion`.
    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// Whether the revision carries titled choices (`oneOf` of `{const, title}`),
    /// multi-select arrays and defaults on every primitive (SEP-1034, SEP-1330).
    pub fn has_rich_enums(self) -> bool {
        self >= Revision::V2025_11_25
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol revision string askgate does not know. Converts into
/// [`Error::UnknownRevision`](crate::Error::UnknownRevision).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown MCP revision {given:?}: expected one of 2025-06-18, 2025-11-25, 2026-07-28")]
pub struct UnknownRevision {
    /// The string that was given.
    pub given: String,
}

impl FromStr for Revision {
    type Err = UnknownRevision;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Revision::ALL
            .into_iter()
            .find(|revision| revision.as_str() == s)
            .ok_or_else(|| UnknownRevision {
                given: s.chars().take(40).collect(),
            })
    }
}
