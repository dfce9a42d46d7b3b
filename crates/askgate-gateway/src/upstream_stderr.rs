//! A stdio upstream's own stderr: passed on as it is (the gateway's
//! stderr is the child's), or, once [`as_events`] is called (by
//! `--log-format json`), read line by line and logged, so that a
//! collector reading the gateway's JSON lines never meets a line of
//! another kind.
//!
//! Each line becomes one INFO event of this module's target
//! (`askgate_gateway::upstream_stderr`, which `ASKGATE_LOG` may filter),
//! with the upstream's name in `server` and the line in `line`: taken as
//! text lossily (bytes that are not UTF-8 replaced), without its line end
//! (`\n` or `\r\n`), and cut at [`MAX_LINE`] bytes (the event says so), so
//! that a child cannot make the gateway hold an endless line. Blank lines
//! are not logged. What the upstream writes is its own, as it is when
//! passed on; the gateway's logs still keep the config's secrets out of
//! it.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Whether upstreams' stderr is logged as events (else passed on).
static AS_EVENTS: AtomicBool = AtomicBool::new(false);

/// The longest stderr line logged whole, in bytes: the rest of a longer
/// one is dropped.
pub(crate) const MAX_LINE: usize = 16 * 1024;

/// Log every stdio upstream started from now on its stderr as events, one
/// per line, instead of passing it on as it is: for logs of one format
/// (`--log-format json`). Call it once, at start-up.
///
/// # Example
/// ```
/// askgate_gateway::upstream_stderr::as_events();
/// ```
pub fn as_events() {
    AS_EVENTS.store(true, Ordering::Relaxed);
}

/// What a child's stderr is given: a pipe to read when its lines are
/// logged, else the gateway's own stderr.
pub(crate) fn stdio() -> Stdio {
    if AS_EVENTS.load(Ordering::Relaxed) {
        Stdio::piped()
    } else {
        Stdio::inherit()
    }
}

/// Log each line of upstream `server`'s `stderr`, until it ends.
pub(crate) async fn log(stderr: impl AsyncRead + Unpin, server: String) {
    read_lines(stderr, |line, cut| {
        if cut {
            tracing::info!(
                server = %server,
                line = %line,
                cut_at = MAX_LINE,
                "the upstream wrote to its stderr (a longer line, cut)"
            );
        } else {
            tracing::info!(server = %server, line = %line, "the upstream wrote to its stderr");
        }
    })
    .await;
}

/// Read `stderr` until it ends (or fails), handing each line that is not
/// blank to `each` as text, and whether it was cut at [`MAX_LINE`]. At
/// most `MAX_LINE` bytes (and a `\r`) of a line are held.
async fn read_lines(stderr: impl AsyncRead + Unpin, mut each: impl FnMut(String, bool)) {
    // Room for a `\r` after a line of `MAX_LINE` bytes: it is not cut.
    const HELD: usize = MAX_LINE + 1;
    let mut reader = BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let mut over = false;
    // A read that fails ends the pipe as its end does.
    while let Ok(chunk) = reader.fill_buf().await {
        if chunk.is_empty() {
            break;
        }
        let newline = chunk.iter().position(|&byte| byte == b'\n');
        let body = &chunk[..newline.unwrap_or(chunk.len())];
        let room = HELD - line.len();
        if body.len() > room {
            over = true;
        }
        line.extend_from_slice(&body[..body.len().min(room)]);
        let taken = newline.map_or(chunk.len(), |at| at + 1);
        reader.consume(taken);
        if newline.is_some() {
            hand(&mut line, over, &mut each);
            over = false;
        }
    }
    hand(&mut line, over, &mut each);
}

/// Hand `line` (read whole, unless `over`) to `each`, and empty it.
fn hand(line: &mut Vec<u8>, over: bool, each: &mut impl FnMut(String, bool)) {
    if !over && line.last() == Some(&b'\r') {
        line.pop();
    }
    let cut = over || line.len() > MAX_LINE;
    line.truncate(MAX_LINE);
    if !line.iter().all(u8::is_ascii_whitespace) {
        each(String::from_utf8_lossy(line.as_slice()).into_owned(), cut);
    }
    line.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines read from `bytes`, and whether each was cut.
    async fn lines_of(bytes: &[u8]) -> Vec<(String, bool)> {
        let mut lines = Vec::new();
        read_lines(bytes, |line, cut| lines.push((line, cut))).await;
        lines
    }

    #[tokio::test]
    async fn each_line_is_read_without_its_line_end_and_the_last_without_one_too() {
        assert_eq!(
            lines_of(b"starting\r\nlistening on stdio\n\nbye").await,
            [
                ("starting".to_owned(), false),
                ("listening on stdio".to_owned(), false),
                ("bye".to_owned(), false),
            ]
        );
    }

    #[tokio::test]
    async fn bytes_that_are_not_utf8_are_replaced() {
        assert_eq!(
            lines_of(b"caf\xe9 \xff\n").await,
            [("caf\u{fffd} \u{fffd}".to_owned(), false)]
        );
    }

    #[tokio::test]
    async fn a_long_line_is_cut_and_the_next_read_whole() {
        let mut bytes = vec![b'a'; 3 * MAX_LINE];
        bytes.extend_from_slice(b"\nnext\n");
        let lines = lines_of(&bytes).await;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], ("a".repeat(MAX_LINE), true));
        assert_eq!(lines[1], ("next".to_owned(), false));
    }

    #[tokio::test]
    async fn a_line_just_at_the_limit_with_a_crlf_is_not_cut() {
        let mut bytes = vec![b'a'; MAX_LINE];
        bytes.extend_from_slice(b"\r\n");
        assert_eq!(lines_of(&bytes).await, [("a".repeat(MAX_LINE), false)]);
        let mut over = vec![b'a'; MAX_LINE + 1];
        over.push(b'\n');
        assert_eq!(lines_of(&over).await, [("a".repeat(MAX_LINE), true)]);
    }

    #[tokio::test]
    async fn a_line_across_many_reads_is_one_line() {
        let (mut writer, reader) = tokio::io::duplex(8);
        let written = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for part in [&b"one li"[..], b"ne in ", b"parts\r", b"\nand another\n"] {
                writer.write_all(part).await.expect("writes");
            }
        });
        let mut lines = Vec::new();
        read_lines(reader, |line, cut| lines.push((line, cut))).await;
        written.await.expect("the writer ran");
        assert_eq!(
            lines,
            [
                ("one line in parts".to_owned(), false),
                ("and another".to_owned(), false),
            ]
        );
    }
}
