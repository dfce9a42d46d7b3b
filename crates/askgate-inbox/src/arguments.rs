//! A call's arguments on its ask's page, in full: what the person approves.
//!
//! The gateway keeps a parked call's arguments sealed with its ask
//! (askgate-core's `ArgumentSeal`, under the deployment key, bound to the
//! ask's id); the store erases them when the ask settles or expires, and
//! its page then says so — only when there were some to erase. The page
//! opens them only for someone who may answer the ask — anyone who
//! may see an ask no rule decides; for a rule's ask, the people it lets
//! answer — and shows them as a tree: every key and value, long strings
//! folded (a file's content opens in place), values that look like
//! credentials (by askgate-core's `looks_secret`, or a key that names one)
//! hidden. Nothing here is logged.

use askgate_core::{looks_secret, names_secret};
use askgate_store::{AskRow, AskStatus, SealedArguments};
use maud::{Markup, html};
use serde_json::{Map, Value as Json};

use crate::Inbox;
use crate::auth::Session;

/// A string longer than this, or of more than one line, is folded.
const FOLD_CHARS: usize = 160;
/// How much of a folded string its summary shows.
const SUMMARY_CHARS: usize = 60;
/// Nesting deeper than this is shown as JSON text.
const MOST_DEPTH: usize = 24;

/// The arguments kept with the pending ask `row`, opened, when `session`
/// may answer it and the inbox holds the key; `None` otherwise, or when
/// none were kept (an ask parked before they were, or by `askgate ask`).
///
/// # Errors
/// The store failed reading them.
pub(crate) async fn opened(
    inbox: &Inbox,
    session: &Session,
    row: &AskRow,
) -> Result<Option<Map<String, Json>>, askgate_store::Error> {
    let Some(seal) = inbox.argument_seal() else {
        return Ok(None);
    };
    if row.status != AskStatus::Pending || !may_answer(session, row, inbox.now()) {
        return Ok(None);
    }
    let SealedArguments::Held(sealed) = inbox.store().sealed_arguments(&row.ask.id).await? else {
        return Ok(None);
    };
    match seal.open(&row.ask.id, &sealed) {
        Ok(arguments) => Ok(Some(arguments)),
        Err(error) => {
            tracing::warn!(ask = %row.ask.id, %error, "inbox: a call's sealed arguments did not open; the page shows its preview only");
            Ok(None)
        }
    }
}

/// Whether `session`'s person may answer `row` at `now`: anyone who may
/// see it, unless a rule decides it; then only those the rule lets answer.
fn may_answer(session: &Session, row: &AskRow, now: jiff::Timestamp) -> bool {
    match askgate_mcp::approvals::panel_of(row) {
        Ok(None) => true,
        Ok(Some(panel)) => {
            let escalated = askgate_mcp::approvals::escalated(&panel, row, now);
            let person = &session.person;
            panel
                .eligible_in(&person.name, &person.groups, escalated)
                .is_ok()
        }
        Err(_) => false,
    }
}

/// The arguments' section of a pending ask's page.
pub(crate) fn section(arguments: &Map<String, Json>) -> Markup {
    html! {
        section.arguments aria-labelledby="arguments-title" {
            h2 #arguments-title { "What it runs with" }
            @if arguments.is_empty() {
                p.hint { "No arguments." }
            } @else {
                (object(arguments, 0))
            }
            p.hint { "In full, as the agent sent them. Values that look like secrets are hidden." }
        }
    }
}

/// Whether the settled or expired ask `row` had its call's arguments kept
/// with it, erased as it ended: what its page says of them. An ask that
/// never had any (parked before they were kept, or by `askgate ask`) says
/// nothing of them.
///
/// # Errors
/// The store failed reading them.
pub(crate) async fn were_erased(inbox: &Inbox, row: &AskRow) -> Result<bool, askgate_store::Error> {
    let kept = inbox.store().sealed_arguments(&row.ask.id).await?;
    Ok(kept == SealedArguments::Erased)
}

/// What a settled or expired call's page says of its arguments, when they
/// were erased (see [`were_erased`]).
pub(crate) fn erased() -> Markup {
    html! {
        p.hint.arguments-erased {
            "The call's arguments were erased from the store when this ask ended; the audit keeps their digest."
        }
    }
}

fn object(map: &Map<String, Json>, depth: usize) -> Markup {
    html! {
        dl.json {
            @for (key, value) in map {
                dt { (key) }
                dd { (value_of(Some(key), value, depth + 1)) }
            }
        }
    }
}

fn value_of(key: Option<&str>, value: &Json, depth: usize) -> Markup {
    // Whatever sits under a key that names a secret, string or not.
    if key.is_some_and(names_secret) {
        return html! { span.hidden { "(hidden: under a key that names a secret)" } };
    }
    match value {
        Json::Object(map) if depth < MOST_DEPTH && !map.is_empty() => object(map, depth),
        Json::Array(items) if depth < MOST_DEPTH && !items.is_empty() => html! {
            ol.json start="0" {
                @for item in items { li { (value_of(key, item, depth + 1)) } }
            }
        },
        Json::String(text) if looks_secret(text) => html! {
            span.hidden { "(hidden: looks like a secret, " (text.chars().count()) " characters)" }
        },
        Json::String(text) => string(text),
        // Nested past reading: not shown, so nothing in it goes unmasked.
        Json::Object(_) | Json::Array(_) if depth >= MOST_DEPTH => html! {
            span.hidden { "(nested too deep to show)" }
        },
        other => html! { code { (other.to_string()) } },
    }
}

/// A string: in place when short, else folded behind its first line.
fn string(text: &str) -> Markup {
    let chars = text.chars().count();
    let lines = text.lines().count();
    if chars <= FOLD_CHARS && lines <= 1 {
        return html! { code.string { (text) } };
    }
    let first = text.lines().next().unwrap_or_default();
    let summary: String = first.chars().take(SUMMARY_CHARS).collect();
    let s = if lines == 1 { "" } else { "s" };
    html! {
        details.long {
            summary {
                code.string { (summary) "…" }
                " (" (lines) " line" (s) ", " (chars) " characters)"
            }
            pre { (text) }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_value_is_shown_long_ones_folded_and_secrets_hidden() {
        let content = "server {\n  listen 443;\n}\n".repeat(20);
        let arguments = json!({
            "path": "/etc/nginx/nginx.conf",
            "content": content,
            "options": {"backup": true, "mode": 420, "owners": ["root", "www"]},
            "api_token": "plain-looking",
            "note": "sk-live-0123456789abcdefABCDEF",
            "html": "<script>alert(1)</script>",
        });
        let Json::Object(arguments) = arguments else {
            unreachable!("an object")
        };
        let page = section(&arguments).into_string();
        for shown in [
            "/etc/nginx/nginx.conf",
            "<dt>backup</dt><dd><code>true</code>",
            "<code>420</code>",
            "<li><code class=\"string\">www</code></li>",
            "(60 lines, 500 characters)",
            "&lt;script&gt;",
        ] {
            assert!(page.contains(shown), "{shown} missing: {page}");
        }
        // The whole content is there, folded.
        assert!(page.contains("<details class=\"long\">"), "{page}");
        assert_eq!(page.matches("listen 443;").count(), 20, "in full once");
        for hidden in ["plain-looking", "sk-live-0123456789"] {
            assert!(!page.contains(hidden), "{hidden} shown: {page}");
        }
        assert_eq!(page.matches("(hidden: looks like a secret").count(), 1);
        assert_eq!(
            page.matches("(hidden: under a key that names a secret)")
                .count(),
            1
        );
        // A number or an object under such a key, and a token hidden past
        // the deepest nesting shown: none of them on the page.
        let mut deep = json!({"token": "sk-live-0123456789abcdefABCDEF"});
        for _ in 0..40 {
            deep = json!({"inner": deep});
        }
        let Json::Object(more) =
            json!({"pin_password": 123456, "credentials": {"user": "ana"}, "deep": deep})
        else {
            unreachable!("an object")
        };
        let page = section(&more).into_string();
        for hidden in ["123456", "ana", "sk-live"] {
            assert!(!page.contains(hidden), "{hidden} shown: {page}");
        }
        assert!(page.contains("(nested too deep to show)"), "{page}");
        assert!(!page.contains("<script>"), "{page}");
    }
}
