//! Fuzz target `stdio_lines`: the gateway's stdio line handling and the
//! express lane's reading of lines, through
//! `askgate_gateway::fuzzing::stdio_lines` (cargo feature `fuzzing`).
//!
//! The input: one byte for the longest line the splitter reads (0: rmcp's
//! limit), one for how many chunk sizes follow (mod 16), the sizes (the
//! splitter's reads), then the stream. The splitter reads the stream
//! whole and in those chunks; each line of it goes through the envelope
//! scanner, the client-line screen, the lane's reading of a client line
//! and a lane's reading of an upstream line. A panic names the invariant
//! that failed (see `fuzz/README.md`); `ASKGATE_FUZZ_ALLOW=name,name`
//! skips known ones.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    askgate_gateway::fuzzing::stdio_lines(data);
});
