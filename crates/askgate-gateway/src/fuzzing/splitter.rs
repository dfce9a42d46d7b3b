//! The line splitter ([`crate::lines::tap`]) over a stream read in
//! chunks, and what the stream's lines say it should do.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::AsyncReadExt;

use super::{chunks, read_envelope, summary, with_runtime};
use crate::lines::{Envelope, Offered};

/// What the splitter did with a stream.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Tapped {
    /// The lines offered, as offered.
    offered: Vec<Vec<u8>>,
    /// The lines too long, as their envelopes said: id, request, answer,
    /// length.
    too_long: Vec<(Option<String>, bool, bool, usize)>,
    /// What reached rmcp's side.
    rest: Vec<u8>,
}

/// The taker's decision on a line: taken when it starts `T`, mended when
/// it starts `I`, else passed.
fn decide(line: &[u8]) -> Offered {
    match line.first() {
        Some(b'T') => Offered::Taken,
        Some(b'I') => Offered::Instead([b"mended ", line].concat()),
        _ => Offered::Passed,
    }
}

/// What answers for a line too long: a line naming its id, when it has one.
fn answer_for(envelope: &Envelope, length: usize) -> Option<Vec<u8>> {
    envelope
        .id()
        .map(|id| format!("too long: {id} {length}").into_bytes())
}

/// `data` through [`crate::lines::tap`], read in chunks of the sizes `cuts`.
pub(super) fn tapped(data: &[u8], cuts: &[usize], longest: usize) -> Tapped {
    let pieces: Vec<Vec<u8>> = chunks(data, cuts).map(<[u8]>::to_vec).collect();
    let seen = Arc::new(Mutex::new(Tapped::default()));
    let (offers, too_long) = (Arc::clone(&seen), Arc::clone(&seen));
    let rest = with_runtime(|runtime| {
        let reader = tokio_stream_reader(pieces);
        let (mut rmcp, rest) = crate::lines::handover();
        let tapping = crate::lines::tap(
            reader,
            move |line: &[u8]| {
                let mut seen = offers.lock().unwrap_or_else(PoisonError::into_inner);
                seen.offered.push(line.to_vec());
                decide(line)
            },
            rest,
            "fuzz",
            longest,
            move |envelope: &Envelope, length| {
                let mut seen = too_long.lock().unwrap_or_else(PoisonError::into_inner);
                let (id, request, answer) = summary(envelope);
                seen.too_long.push((id, request, answer, length));
                answer_for(envelope, length)
            },
        );
        let mut read = Vec::new();
        let reading = rmcp.read_to_end(&mut read);
        let (_, reading) = runtime.block_on(async { tokio::join!(tapping, reading) });
        reading.expect("an in-memory pipe reads to its end");
        read
    });
    let mut seen = std::mem::take(&mut *seen.lock().unwrap_or_else(PoisonError::into_inner));
    seen.rest = rest;
    seen
}

/// What the splitter should do with `data`, worked out from its lines.
pub(super) fn split(data: &[u8], longest: usize) -> Tapped {
    let mut expected = Tapped::default();
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    // The last piece has no newline: a line not yet ended.
    lines.pop();
    for line in lines {
        let mut line = line.to_vec();
        if line.len() > longest {
            let envelope = read_envelope(&line, &[]);
            let (id, request, answer) = summary(&envelope);
            expected.too_long.push((id, request, answer, line.len()));
            match answer_for(&envelope, line.len()) {
                Some(instead) => line = instead,
                None => continue,
            }
        }
        if line.is_empty() {
            continue;
        }
        let offered = line.strip_suffix(b"\r").unwrap_or(&line).to_vec();
        let passed = match decide(&offered) {
            Offered::Taken => None,
            Offered::Passed => Some(line.clone()),
            Offered::Instead(instead) => Some(instead),
        };
        expected.offered.push(offered);
        if let Some(passed) = passed {
            expected.rest.extend_from_slice(&passed);
            expected.rest.push(b'\n');
        }
    }
    expected
}

/// A reader that gives `pieces` one read at a time, then ends.
fn tokio_stream_reader(pieces: Vec<Vec<u8>>) -> Pieces {
    Pieces {
        pieces: pieces.into_iter(),
        current: Vec::new(),
        at: 0,
    }
}

/// Reads its pieces one per read (a piece larger than the reader's buffer
/// over several).
struct Pieces {
    pieces: std::vec::IntoIter<Vec<u8>>,
    current: Vec<u8>,
    at: usize,
}

impl tokio::io::AsyncRead for Pieces {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at == this.current.len() {
            this.current = this.pieces.next().unwrap_or_default();
            this.at = 0;
        }
        let n = (this.current.len() - this.at).min(buf.remaining());
        buf.put_slice(&this.current[this.at..this.at + n]);
        this.at += n;
        std::task::Poll::Ready(Ok(()))
    }
}
