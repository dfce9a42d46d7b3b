//! What askgate says to whoever started it — where the inbox is, where
//! the operator's token was put, why it stopped — on stderr, beside the
//! logs: a plain line for people, or, once [`as_json`] is called (by
//! `--log-format json`), a JSON object of the logs' own shape, so that a
//! collector reading JSON lines never meets a line of another kind.
//!
//! These lines are not logs: no `ASKGATE_LOG` level filters them out.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

static JSON: AtomicBool = AtomicBool::new(false);

/// Say everything from now on as JSON objects.
pub fn as_json() {
    JSON.store(true, Ordering::Relaxed);
}

/// Say `line`, of news.
pub fn say(line: &str) {
    write("INFO", line);
}

/// Say `line`, of a failure.
pub fn error(line: &str) {
    write("ERROR", line);
}

fn write(level: &str, line: &str) {
    let text = if JSON.load(Ordering::Relaxed) {
        as_object(level, line, jiff::Timestamp::now())
    } else {
        line.to_owned()
    };
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// The JSON object a log line of `level` saying `line` at `at` is, as
/// tracing-subscriber's JSON format writes one.
fn as_object(level: &str, line: &str, at: jiff::Timestamp) -> String {
    serde_json::json!({
        "timestamp": at.to_string(),
        "level": level,
        "fields": {"message": line},
        "target": "askgate",
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_line_said_as_json_is_a_log_object_with_its_message() {
        let at: jiff::Timestamp = "2026-12-03T07:00:00Z".parse().expect("a time");
        let object: serde_json::Value =
            serde_json::from_str(&super::as_object("INFO", "askgate gateway: ready", at))
                .expect("JSON");
        assert_eq!(object["fields"]["message"], "askgate gateway: ready");
        assert_eq!(object["level"], "INFO");
        assert_eq!(object["timestamp"], "2026-12-03T07:00:00Z");
    }
}
