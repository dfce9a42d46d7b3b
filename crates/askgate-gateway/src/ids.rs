//! The gateway's ids: ledger calls, their markers, sessions, held
//! requests. Random, from the system's random source (drawn a block at a
//! time, see [`fill`]); a ledger call's id also begins with the instant it
//! was made (see [`call`]).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use base64::alphabet::Alphabet;
use base64::engine::general_purpose::{GeneralPurpose, NO_PAD, URL_SAFE_NO_PAD};
use jiff::Timestamp;
use rmcp::ErrorData;

/// A random id, `<prefix>_<22 url-safe characters>` (128 bits).
///
/// # Errors
/// The system's random source failed.
pub(crate) fn random(prefix: &str) -> Result<String, ErrorData> {
    let mut bytes = [0u8; 16];
    fill(&mut bytes).map_err(|e| ErrorData::internal_error(format!("no randomness: {e}"), None))?;
    Ok(format!("{prefix}_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// The url-safe characters in ASCII order: text encoded with them sorts as
/// its bytes do.
const SORTABLE: GeneralPurpose = {
    match Alphabet::new("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz") {
        Ok(alphabet) => GeneralPurpose::new(&alphabet, NO_PAD),
        Err(_) => panic!("64 distinct url-safe characters"),
    }
};

/// A new ledger call's id and its marker. The id, `call_<22 url-safe
/// characters>`, is the milliseconds since the Unix epoch of `at` (48
/// bits) and then 80 random bits, so ids sort by the instant they were
/// made; the marker is random, as [`random`] makes them (`m_…`). Both from
/// one read of the random source.
///
/// Why not wholly random: the ledger's index of call ids is a B-tree, and
/// the records of a stream of reads are written together (a batch every
/// few milliseconds). Random ids land on a different page of that index
/// each, so a batch rewrites about as many pages as it has rows to the
/// store's journal; ids that grow with time land on the last page or two. 80 random bits
/// still keep two calls of one millisecond apart and the id unguessable.
///
/// # Errors
/// The system's random source failed.
pub(crate) fn call(at: Timestamp) -> Result<(String, String), ErrorData> {
    let mut bytes = [0u8; 32];
    // Before 1970 (a clock gone wrong) counts as 0; 48 bits of
    // milliseconds last until the year 10889.
    let millis = u64::try_from(at.as_millisecond()).unwrap_or(0);
    bytes[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    fill(&mut bytes[6..])
        .map_err(|e| ErrorData::internal_error(format!("no randomness: {e}"), None))?;
    let (id, marker) = bytes.split_at(16);
    Ok((
        prefixed("call_", &SORTABLE, id),
        prefixed("m_", &URL_SAFE_NO_PAD, marker),
    ))
}

/// `prefix` and then `bytes` in `engine`'s characters, in one allocation.
fn prefixed(prefix: &str, engine: &GeneralPurpose, bytes: &[u8]) -> String {
    // 16 bytes are 22 characters unpadded.
    let mut text = String::with_capacity(prefix.len() + bytes.len().div_ceil(3) * 4);
    text.push_str(prefix);
    engine.encode_string(bytes, &mut text);
    text
}

/// How many bytes of the system's random source a thread draws at once.
const BLOCK: usize = 1024;

/// Random bytes drawn from the system's source and not yet handed out.
struct Drawn {
    bytes: [u8; BLOCK],
    /// How many of `bytes`, from the start, were handed out (and zeroed).
    used: usize,
}

thread_local! {
    static DRAWN: RefCell<Drawn> = const {
        RefCell::new(Drawn { bytes: [0; BLOCK], used: BLOCK })
    };
}

/// Fill `dest` from the system's random source, as `getrandom::fill`
/// does, but drawing [`BLOCK`] bytes at a time for the thread and handing
/// each byte out once: a read made one system call (`getrandom`) for its
/// id and marker, now one in some forty. The bytes are the system's, only
/// read sooner; each is zeroed as it is handed out. The gateway runs no
/// code of its own in a forked child (its upstreams are spawned and
/// exec'd), so no two processes share a block.
fn fill(dest: &mut [u8]) -> Result<(), getrandom::Error> {
    if dest.len() > BLOCK {
        return getrandom::fill(dest);
    }
    DRAWN.with_borrow_mut(|drawn| {
        if BLOCK - drawn.used < dest.len() {
            getrandom::fill(&mut drawn.bytes)?;
            drawn.used = 0;
        }
        let taken = &mut drawn.bytes[drawn.used..drawn.used + dest.len()];
        dest.copy_from_slice(taken);
        taken.fill(0);
        drawn.used += dest.len();
        Ok(())
    })
}

/// A new session's id: random, so no two sessions (nor two runs) share
/// one; if the random source fails, this process's id and a count — still
/// unique among the sessions one gateway serves.
pub(crate) fn session() -> Arc<str> {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let id = random("session").unwrap_or_else(|_| {
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        format!("session_{}_{n}", std::process::id())
    });
    Arc::from(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn random_bytes_are_handed_out_once_across_blocks() {
        // Enough 26-byte draws (a call's id and marker) to refill the
        // block several times: no draw repeats another, none is all zeros
        // (a block's used bytes are zeroed: handing one out again would).
        let mut seen = std::collections::HashSet::new();
        for _ in 0..(super::BLOCK * 4 / 26) {
            let mut bytes = [0u8; 26];
            super::fill(&mut bytes).expect("random bytes");
            assert_ne!(bytes, [0u8; 26]);
            assert!(seen.insert(bytes), "a draw repeated");
        }
        // More than a block at once comes straight from the system.
        let mut large = vec![0u8; super::BLOCK + 1];
        super::fill(&mut large).expect("random bytes");
        assert!(large.iter().any(|b| *b != 0));
    }

    #[test]
    fn ids_carry_their_prefix_and_never_repeat() {
        let (a, b) = (super::random("call"), super::random("call"));
        let (a, b) = (a.expect("random"), b.expect("random"));
        assert!(
            a.starts_with("call_") && a.len() == "call_".len() + 22,
            "{a}"
        );
        assert_ne!(a, b);
    }

    fn call_id(at: jiff::Timestamp) -> Result<String, rmcp::ErrorData> {
        super::call(at).map(|(id, _)| id)
    }

    #[test]
    fn call_ids_sort_by_the_instant_they_were_made_and_never_repeat() {
        let at = |ms: i64| jiff::Timestamp::from_millisecond(ms).expect("an instant");
        let early = call_id(at(1_764_806_400_000)).expect("an id");
        assert!(
            early.starts_with("call_") && early.len() == "call_".len() + 22,
            "{early}"
        );
        let mut ids = Vec::new();
        for ms in [
            1_764_806_400_000,
            1_764_806_400_001,
            1_764_806_400_255,
            1_764_806_400_256,
            1_764_806_465_536,
            1_800_000_000_000,
        ] {
            ids.push(call_id(at(ms)).expect("an id"));
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids, "later calls sort after earlier ones");
        let same = call_id(at(1_764_806_400_000)).expect("an id");
        assert_ne!(same, early, "two calls of one millisecond differ");
        assert!(
            same.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{same}"
        );
        // A clock before 1970 still gives an id.
        assert!(call_id(at(-5)).is_ok());
        // The marker is random, and not the id's.
        let (id, marker) = super::call(at(1_764_806_400_000)).expect("ids");
        let (_, again) = super::call(at(1_764_806_400_000)).expect("ids");
        assert!(
            marker.starts_with("m_") && marker.len() == "m_".len() + 22,
            "{marker}"
        );
        assert_ne!(marker, again);
        assert_ne!(marker[2..], id[5..]);
    }
}
