//! What a JSON-RPC message too long to read says of itself: its `id`, and
//! whether it is a request (`method`) or an answer (`result`, `error`).
//!
//! A message over the longest line the gateway reads is not kept, but the
//! peer that sent it waits on it: a call whose answer was too long would
//! hang, and so would a client whose request was. So while such a line
//! goes by, an [`Envelope`] reads its top level (the keys of its outer
//! object, and the `id`'s value) a chunk at a time, in constant memory,
//! and the gateway answers for it (see [`super::tap`]).

/// The longest `id` value kept, as written: ids are short.
const LONGEST_ID: usize = 256;

/// What the top level of a message said, read a chunk at a time.
#[derive(Debug, Default)]
pub(crate) struct Envelope {
    /// How deep in objects and arrays the scan is.
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At the top level, where the next string is a key.
    key_next: bool,
    /// The key being read (the first bytes of it), when a string is one.
    key: Option<Vec<u8>>,
    /// The last key read at the top level.
    last_key: Vec<u8>,
    /// The `id`'s value as written, while it is read.
    reading_id: Option<Vec<u8>>,
    /// The `id`'s value as written, once read.
    id: Option<Vec<u8>>,
    /// Whether the top level has a `method`.
    method: bool,
    /// Whether it has a `result` or an `error`.
    answer: bool,
}

impl Envelope {
    /// Read on through `bytes`.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    /// The `id`, as written (a number, a string with its quotes), when
    /// the top level had one.
    pub(crate) fn id(&self) -> Option<&str> {
        self.id
            .as_deref()
            .and_then(|id| std::str::from_utf8(id).ok())
            .map(str::trim)
            .filter(|id| !id.is_empty() && *id != "null")
    }

    /// Whether it is a request (it has a `method` and an `id`).
    pub(crate) fn is_request(&self) -> bool {
        self.method && self.id().is_some()
    }

    /// Whether it is an answer (a `result` or an `error`, an `id`, no
    /// `method`).
    pub(crate) fn is_answer(&self) -> bool {
        self.answer && !self.method && self.id().is_some()
    }

    fn step(&mut self, byte: u8) {
        if let Some(id) = &mut self.reading_id {
            let ends = !self.in_string && self.depth == 1 && matches!(byte, b',' | b'}');
            if ends {
                self.id = self.reading_id.take().filter(|id| id.len() <= LONGEST_ID);
            } else if id.len() <= LONGEST_ID {
                id.push(byte);
            }
        }
        if self.in_string {
            if self.escaped {
                self.escaped = false;
                // An escaped character: not a key askgate looks for (kept
                // short, like every key: memory stays constant).
                if let Some(key) = &mut self.key
                    && key.len() < 8
                {
                    key.push(b'\\');
                }
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
                if let Some(key) = self.key.take() {
                    self.last_key = key;
                }
            } else if let Some(key) = &mut self.key
                && key.len() < 8
            {
                key.push(byte);
            }
            return;
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.key_next {
                    self.key = Some(Vec::new());
                    self.key_next = false;
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.key_next = byte == b'{';
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => self.key_next = true,
            b':' if self.depth == 1 => match self.last_key.as_slice() {
                b"id" => self.reading_id = Some(Vec::new()),
                b"method" => self.method = true,
                b"result" | b"error" => self.answer = true,
                _ => {}
            },
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, chunk: usize) -> Envelope {
        let mut envelope = Envelope::default();
        for part in text.as_bytes().chunks(chunk) {
            envelope.feed(part);
        }
        envelope
    }

    #[test]
    fn the_id_of_an_answer_is_found_wherever_it_is_and_however_it_is_cut() {
        let big = "x".repeat(10_000);
        for (text, id) in [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{big}"}}}}"#),
                "7",
            ),
            // The TypeScript SDK writes the id last.
            (
                format!(r#"{{"result":{{"a":["{big}",{{"id":3}}]}},"jsonrpc":"2.0","id":"r-9"}}"#),
                r#""r-9""#,
            ),
            (
                format!(r#"{{ "error" : {{"message":"{big}"}}, "id" : 12 }}"#),
                "12",
            ),
        ] {
            for chunk in [1, 7, 4096] {
                let envelope = read(&text, chunk);
                assert!(envelope.is_answer(), "{chunk}");
                assert!(!envelope.is_request(), "{chunk}");
                assert_eq!(envelope.id(), Some(id), "{chunk}");
            }
        }
    }

    #[test]
    fn an_endless_escaped_key_is_read_in_constant_memory() {
        let mut envelope = Envelope::default();
        envelope.feed(b"{\"");
        for _ in 0..10_000 {
            envelope.feed(b"\\\\");
        }
        assert!(envelope.key.as_ref().is_some_and(|key| key.len() <= 8));
    }

    #[test]
    fn a_request_is_told_from_an_answer_and_a_notification_has_no_id() {
        let request = read(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"id":2}}"#,
            3,
        );
        assert!(request.is_request() && !request.is_answer());
        assert_eq!(request.id(), Some("1"));
        let note = read(
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":5}}"#,
            5,
        );
        assert!(!note.is_request() && !note.is_answer());
        // Keys and strings with quotes and braces inside them mislead nothing.
        let tricky = read(
            r#"{"method\"":"x","s":"},\"id\":9,{","id":4,"result":{}}"#,
            2,
        );
        assert_eq!(tricky.id(), Some("4"));
        assert!(tricky.is_answer());
        assert!(read("not json at all", 4).id().is_none());
    }
}
