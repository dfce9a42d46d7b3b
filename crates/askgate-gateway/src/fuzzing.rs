//! Entry points for the fuzz target `stdio_lines` (`fuzz/`), behind the
//! cargo feature `fuzzing`: not part of the gateway's API.
//!
//! Each function takes bytes, drives one piece of the stdio line handling
//! or of the express lane's reading, and panics, naming the invariant,
//! when what it does breaks a promise the gateway makes about it (see
//! `fuzz/README.md` for the list). `ASKGATE_FUZZ_ALLOW=name,name` turns
//! the named invariants into no-ops, to fuzz on past a bug already known.
//!
//! The client's side of the lane (`stdio::express`) decides with a whole
//! gateway; [`client_line`] reads a line with the same types, in the same
//! order, and checks that what the lane would act on is what rmcp reads.
#![cfg(all(unix, not(askgate_portable)))]

use std::sync::OnceLock;

use rmcp::model::{
    CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, CompleteRequestParams,
    GetPromptRequestParams, InitializeRequestParams, JsonRpcMessage, NumberOrString,
    ReadResourceRequestParams, ServerJsonRpcMessage,
};
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::express::{FIRST_ID, Lane};
use crate::lines::{Envelope, Offered, Out};
use crate::stdio::screen;

mod carried;
mod client;
mod splitter;
mod top_level;

pub use carried::carried_line;
pub use client::client_line;

use top_level::TopLevel;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Run every check on `data`, as the fuzz target does: the first byte is
/// the longest line the splitter reads (0: rmcp's own limit), the second
/// how many chunk sizes follow (mod 16), each the size of one read of the
/// splitter (0 is 1); the rest is the stream, whose lines each go through
/// [`envelope`], [`screen`], [`client_line`], [`upstream_line`] and
/// [`carried_line`].
pub fn stdio_lines(data: &[u8]) {
    let (&longest, rest) = data.split_first().unwrap_or((&0, &[]));
    let (&count, rest) = rest.split_first().unwrap_or((&0, &[]));
    let count = usize::from(count % 16).min(rest.len());
    let (sizes, stream) = rest.split_at(count);
    let cuts: Vec<usize> = sizes.iter().map(|&s| usize::from(s).max(1)).collect();
    let longest = match longest {
        0 => crate::lines::MAX_LINE,
        n => usize::from(n),
    };
    tap(stream, &cuts, longest);
    for line in stream.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        envelope(line, &cuts);
        screen(line);
        client_line(line);
        upstream_line(line);
        carried_line(line);
    }
}

/// The [`Envelope`] of `line`, fed in the chunk sizes `cuts` (repeated),
/// says what it said fed whole; on a JSON object, its `id` is the
/// top-level `id` as written (when it is not null and short enough to
/// keep), and it tells a request from an answer as the top-level keys do.
pub fn envelope(line: &[u8], cuts: &[usize]) {
    checking(line);
    let whole = read_envelope(line, &[]);
    let chunked = read_envelope(line, cuts);
    check(
        "envelope-chunks",
        summary(&whole) == summary(&chunked),
        || {
            format!(
                "{:?} whole, {:?} in chunks {cuts:?}",
                summary(&whole),
                summary(&chunked)
            )
        },
    );
    let Some(top) = TopLevel::of(line) else {
        if serde_json::from_slice::<Json>(line).is_ok() {
            check("envelope-id", whole.id().is_none(), || {
                format!("{:?} in JSON that is not an object", whole.id())
            });
        }
        return;
    };
    let id = top.envelope_id(line);
    check("envelope-id", whole.id() == id.as_deref(), || {
        format!("the envelope read id {:?}, the line has {id:?}", whole.id())
    });
    let method = top.literal("method").is_some();
    let answer = top.literal("result").is_some() || top.literal("error").is_some();
    let expected = (method && id.is_some(), answer && !method && id.is_some());
    let got = (whole.is_request(), whole.is_answer());
    check("envelope-kind", got == expected, || {
        format!("(request, answer) read {got:?}, the line is {expected:?}")
    });
}

/// The screen of a client's `line`: a line passed is not answered; one
/// taken is answered with one JSON-RPC error line carrying its id; one
/// mended is a JSON-RPC error with its id that rmcp reads; a leading byte
/// order mark changes nothing; a request rmcp reads is never refused, and
/// one rmcp cannot read, with an id, is never passed to it.
pub fn screen(line: &[u8]) {
    checking(line);
    let (offered, reply) = screened(line);
    if !line.starts_with(BOM) {
        let mut marked = BOM.to_vec();
        marked.extend_from_slice(line);
        let (again, again_reply) = screened(&marked);
        check(
            "screen-bom",
            shown(&offered) == shown(&again) && reply == again_reply,
            || {
                format!(
                    "{} / {reply:?} without a BOM, {} / {again_reply:?} with",
                    shown(&offered),
                    shown(&again)
                )
            },
        );
    }
    // What the screen reads: the line without its byte order mark.
    let bare = line.strip_prefix(BOM).unwrap_or(line);
    let rmcp = serde_json::from_slice::<ClientJsonRpcMessage>(bare);
    let top = TopLevel::of(bare);
    let id = top.as_ref().and_then(|top| top.envelope_id(bare));
    // The id the screen answers with, as written: is it JSON at all?
    let written = read_envelope(bare, &[]).id().map(str::to_owned);
    let id_is_json = written
        .as_deref()
        .is_none_or(|id| serde_json::from_str::<Json>(id).is_ok());
    if !matches!(offered, Offered::Passed) {
        check("screen-id-json", id_is_json, || {
            format!(
                "{} with the id {written:?}, which is not JSON: the line written is not JSON either",
                shown(&offered)
            )
        });
        if !id_is_json {
            return;
        }
    }
    match &offered {
        Offered::Passed => {
            check("screen-passed", reply.is_empty(), || {
                format!("passed, yet answered {reply:?}")
            });
            let unread_with_id = rmcp.is_err() && id.is_some();
            let known = top.as_ref().is_some_and(|t| {
                t.literal("method").is_some()
                    || t.literal("result").is_some()
                    || t.literal("error").is_some()
            });
            check("screen-unread", !(unread_with_id && known), || {
                "rmcp cannot read it, it has an id, and it was passed: its sender waits for ever"
                    .into()
            });
        }
        Offered::Taken => {
            let answer = std::str::from_utf8(&reply)
                .ok()
                .and_then(|r| r.strip_suffix('\n'));
            let answer = answer
                .filter(|a| !a.contains('\n'))
                .and_then(|a| serde_json::from_str::<Json>(a).ok());
            let Some(answer) = answer else {
                check("screen-answer-json", false, || {
                    format!(
                        "answered {:?}: not one JSON line",
                        String::from_utf8_lossy(&reply)
                    )
                });
                return;
            };
            let code = answer["error"]["code"].as_i64();
            check(
                "screen-answer-json",
                answer["jsonrpc"] == "2.0"
                    && answer["error"]["message"].is_string()
                    && matches!(code, Some(-32602 | -32600)),
                || format!("answered {answer}"),
            );
            match (&rmcp, &id) {
                (Ok(JsonRpcMessage::Request(request)), _) => {
                    let theirs = serde_json::to_value(&request.id).ok();
                    check(
                        "screen-answer-id",
                        Some(&answer["id"]) == theirs.as_ref() && code == Some(-32602),
                        || format!("answered {answer} to a request rmcp reads with id {theirs:?}"),
                    );
                    match &request.request {
                        ClientRequest::CustomRequest(custom) => check(
                            "screen-misfit",
                            !params_fit(&custom.method, custom.params.as_ref()),
                            || format!("refused {answer}, yet its params fit {}", custom.method),
                        ),
                        known => check("screen-refused", false, || {
                            format!("refused {answer}, a {} rmcp reads", known.method())
                        }),
                    }
                }
                (Ok(_), _) => check("screen-answer-id", false, || {
                    format!("answered {answer} to a message rmcp reads")
                }),
                (Err(_), Some(id)) => {
                    let ours = serde_json::from_str::<Json>(id).ok();
                    check(
                        "screen-answer-id",
                        Some(&answer["id"]) == ours.as_ref() && code == Some(-32600),
                        || format!("answered {answer} to a line whose id is {id}"),
                    );
                }
                (Err(_), None) => {}
            }
        }
        Offered::Instead(mended) => {
            check("screen-mended", reply.is_empty(), || {
                format!("mended, yet answered {reply:?}")
            });
            let Ok(json) = serde_json::from_slice::<Json>(mended) else {
                check("screen-mended-json", false, || {
                    format!("mended as {:?}: not JSON", String::from_utf8_lossy(mended))
                });
                return;
            };
            check(
                "screen-mended-json",
                json["jsonrpc"] == "2.0" && json["error"]["code"] == -32603,
                || format!("mended as {json}"),
            );
            if let Some(id) = &id {
                let ours = serde_json::from_str::<Json>(id).ok();
                check(
                    "screen-mended-id",
                    Some(&json["id"]) == ours.as_ref(),
                    || format!("mended as {json}, its id is {id}"),
                );
            }
            if serde_json::from_value::<NumberOrString>(json["id"].clone()).is_ok() {
                let read = serde_json::from_slice::<ClientJsonRpcMessage>(mended);
                check(
                    "screen-mended-read",
                    matches!(read, Ok(JsonRpcMessage::Error(_))),
                    || format!("rmcp reads the mended {json} as {read:?}"),
                );
            }
        }
    }
}

/// The line splitter over `data`, read in chunks of the sizes `cuts`
/// (repeated), offers the same lines and hands rmcp the same bytes as
/// reading it whole, and both are what the lines of `data` say: each
/// complete line, its `\r` trimmed, offered; one longer than `longest`
/// answered for from its envelope instead; the last, unended, not at all.
pub fn tap(data: &[u8], cuts: &[usize], longest: usize) {
    checking(data);
    let whole = splitter::tapped(data, &[], longest);
    let chunked = splitter::tapped(data, cuts, longest);
    check("tap-chunks", whole == chunked, || {
        format!("whole: {whole:?}\nin chunks {cuts:?}: {chunked:?}")
    });
    let expected = splitter::split(data, longest);
    check("tap-lines", whole == expected, || {
        format!("read: {whole:?}\nthe lines say: {expected:?}")
    });
}

/// An upstream's `line`, offered to a lane: taken only when it is no
/// request or notification, with an integer id of the lane's (from 2^40);
/// and a response rmcp reads with such an id is always taken (else its
/// call would wait for ever).
pub fn upstream_line(line: &[u8]) {
    checking(line);
    let taken = with_runtime(|_| {
        let (ours, _theirs) =
            tokio::net::UnixStream::pair().expect("a socket pair (nothing else can fail here)");
        Lane::new(
            Out::new(crate::lines::Sink::Socket(ours)),
            crate::relay::Inflight::default(),
        )
        .offer(line)
    });
    // rmcp drops a byte order mark before it reads a line.
    let stripped = line.strip_prefix(BOM).unwrap_or(line);
    // Bytes that are not UTF-8 in what the lane skips (another key's
    // string) do not stop it, as they stop rmcp: read them replaced.
    let top = serde_json::from_str::<Json>(&String::from_utf8_lossy(stripped)).ok();
    if taken {
        let method = top.as_ref().map(|t| &t["method"]);
        check("reply-request", method.is_some_and(Json::is_null), || {
            format!("the lane took a line with method {method:?}")
        });
        let id = top.as_ref().and_then(|t| t["id"].as_u64());
        check("reply-id", id.is_some_and(|id| id >= FIRST_ID), || {
            format!("the lane took a line with id {id:?}")
        });
    }
    let answers = match serde_json::from_slice::<ServerJsonRpcMessage>(stripped) {
        Ok(JsonRpcMessage::Response(response)) => Some(response.id),
        Ok(JsonRpcMessage::Error(error)) => error.id,
        _ => None,
    };
    if let Some(NumberOrString::Number(id)) = answers
        && u64::try_from(id).is_ok_and(|id| id >= FIRST_ID)
    {
        check("reply-answer", taken, || {
            format!(
                "rmcp reads an answer to the lane's call {id}, and the lane left it: the call waits for ever"
            )
        });
    }
}

// ---------------------------------------------------------------------------
// Invariants, named.

thread_local! {
    /// The input being checked, for the panic message.
    static INPUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Note `bytes` as the input being checked.
fn checking(bytes: &[u8]) {
    INPUT.with(|input| bytes.clone_into(&mut input.borrow_mut()));
}

/// Panic, naming `invariant`, when it does not `hold` (unless allowed).
fn check(invariant: &str, holds: bool, why: impl FnOnce() -> String) {
    if !holds && !allowed(invariant) {
        let input = INPUT.with(|input| input.borrow().escape_ascii().to_string());
        panic!(
            "invariant `{invariant}` failed: {}\ninput: b\"{input}\"",
            why()
        );
    }
}

/// Whether `ASKGATE_FUZZ_ALLOW` names `invariant`.
fn allowed(invariant: &str) -> bool {
    static ALLOWED: OnceLock<Vec<String>> = OnceLock::new();
    ALLOWED
        .get_or_init(|| {
            std::env::var("ASKGATE_FUZZ_ALLOW")
                .unwrap_or_default()
                .split(',')
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty())
                .collect()
        })
        .iter()
        .any(|name| name == invariant)
}

// ---------------------------------------------------------------------------
// Driving the gateway's pieces.

/// A current-thread runtime, one per thread: the pipes need a reactor.
fn with_runtime<T>(f: impl FnOnce(&tokio::runtime::Runtime) -> T) -> T {
    thread_local! {
        static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .expect("a current-thread runtime (only fails without the OS's resources)");
    }
    RUNTIME.with(|runtime| {
        let _entered = runtime.enter();
        f(runtime)
    })
}

/// What the screen did with `line`, and what it wrote to the client.
fn screened(line: &[u8]) -> (Offered, Vec<u8>) {
    use std::io::Read as _;
    with_runtime(|runtime| {
        let (ours, mut theirs) =
            std::os::unix::net::UnixStream::pair().expect("a socket pair (only fails without fds)");
        let blocking = "a socket made non-blocking (a socket pair's always can)";
        ours.set_nonblocking(true).expect(blocking);
        theirs.set_nonblocking(true).expect(blocking);
        let ours = tokio::net::UnixStream::from_std(ours).expect("a socket on the runtime");
        let reply = Out::new(crate::lines::Sink::Socket(ours));
        let offered = runtime.block_on(async {
            let offered = screen::screen(line, &reply);
            reply.drained().await;
            offered
        });
        let mut written = Vec::new();
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = theirs.read(&mut buffer) {
            written.extend_from_slice(&buffer[..n]);
        }
        (offered, written)
    })
}

/// An [`Offered`], to compare and print.
fn shown(offered: &Offered) -> String {
    match offered {
        Offered::Taken => "taken".into(),
        Offered::Passed => "passed".into(),
        Offered::Instead(line) => format!("instead {:?}", String::from_utf8_lossy(line)),
    }
}

/// Whether `params` read as the params of `method`, for the methods whose
/// params rmcp types.
fn params_fit(method: &str, params: Option<&Json>) -> bool {
    fn fits<T: DeserializeOwned>(params: Option<&Json>) -> bool {
        serde_json::from_value::<T>(params.cloned().unwrap_or(Json::Null)).is_ok()
    }
    match method {
        "tools/call" => fits::<CallToolRequestParams>(params),
        "prompts/get" => fits::<GetPromptRequestParams>(params),
        "resources/read" => fits::<ReadResourceRequestParams>(params),
        "completion/complete" => fits::<CompleteRequestParams>(params),
        "initialize" => fits::<InitializeRequestParams>(params),
        _ => false,
    }
}

/// `line` fed to an [`Envelope`] in chunks of the sizes `cuts` (repeated;
/// none: whole).
fn read_envelope(line: &[u8], cuts: &[usize]) -> Envelope {
    let mut envelope = Envelope::default();
    for part in chunks(line, cuts) {
        envelope.feed(part);
    }
    envelope
}

/// What an envelope said: its id, whether a request, whether an answer.
fn summary(envelope: &Envelope) -> (Option<String>, bool, bool) {
    (
        envelope.id().map(str::to_owned),
        envelope.is_request(),
        envelope.is_answer(),
    )
}

/// `bytes` in pieces of the sizes `cuts`, repeated (none: one piece).
fn chunks<'a>(bytes: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut sizes = cuts.iter().copied().cycle();
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let size = sizes.next().unwrap_or(rest.len()).clamp(1, rest.len());
        let (piece, after) = rest.split_at(size);
        rest = after;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds of the fuzz target (`fuzz/seeds/stdio_lines/`) hold.
    #[test]
    fn the_fuzz_targets_seeds_hold_every_invariant() {
        let seeds = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/stdio_lines");
        let mut count = 0;
        for entry in std::fs::read_dir(seeds).expect("the seeds") {
            let path = entry.expect("a seed").path();
            stdio_lines(&std::fs::read(&path).expect("a seed"));
            count += 1;
        }
        assert!(count > 0, "no seeds in {seeds}");
    }

    /// The inputs of bugs since fixed (`fuzz/reproducers/`) hold every
    /// invariant: an id that is no JSON is not written back; an upstream
    /// answer behind a byte order mark is the lane's; the lane acts on no
    /// line whose `jsonrpc` is not `"2.0"`, nor on an id rmcp cannot read.
    #[test]
    fn the_reproducers_of_fixed_bugs_hold_every_invariant() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/reproducers");
        for name in [
            "stdio-screen-id-not-json.bin",
            "stdio-reply-bom.bin",
            "stdio-lane-jsonrpc.bin",
            "stdio-lane-id.bin",
        ] {
            stdio_lines(&std::fs::read(format!("{dir}/{name}")).expect("a reproducer"));
        }
    }
}
