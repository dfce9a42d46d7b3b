//! What a webhook post says: the facts of one ask — title, origin, risk,
//! status, inbox link — in the generic JSON shape or Slack's. Never an
//! answer value, never a tool argument, never the words a model or an
//! upstream wrote: the facts are read from the ask's columns, and the
//! title is askgate's own ([`super::title`]).

use askgate_store::AskRow;
use jiff::Timestamp;
use serde::Serialize;
use serde_json::{Value as Json, json};

/// When a post is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// A new ask waits for a person.
    Parked,
    /// One person answered an ask a team's rule decides; it may wait for
    /// more answers (`needed`).
    Answered,
    /// An ask a team's rule decides waited as long as its rule's
    /// `escalate.after`: those it escalates to may answer it now.
    Escalated,
    /// An ask settled: answered, declined, skipped or cancelled.
    Settled,
    /// An ask expired before enough answers came.
    Expired,
}

impl Event {
    /// The event as posted and logged.
    pub fn as_str(self) -> &'static str {
        match self {
            Event::Parked => "parked",
            Event::Answered => "answered",
            Event::Escalated => "escalated",
            Event::Settled => "settled",
            Event::Expired => "expired",
        }
    }
}

/// The generic body: one flat JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Facts {
    /// `parked` or `settled`.
    pub(crate) event: Event,
    /// The ask's id.
    pub(crate) id: String,
    /// What the ask is, in askgate's words ([`super::title::of`]).
    pub(crate) title: String,
    /// The upstream server (or the `--server` of `askgate ask`).
    pub(crate) server: Option<String>,
    /// The tool.
    pub(crate) tool: Option<String>,
    /// The tool's risk.
    pub(crate) risk: Option<String>,
    /// Where the ask stands: `pending`, `answered`, `declined`, ...
    pub(crate) status: &'static str,
    /// Its inbox page; `None` where no inbox page is served (it is
    /// answered with `askgate asks`).
    pub(crate) link: Option<String>,
    /// When it was parked (`parked`), answered by the person (`answered`)
    /// or settled (`settled`, `expired`).
    pub(crate) at: Timestamp,
    /// Who answered (`answered`): a name, never what they answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) person: Option<String>,
    /// How many more approvals the ask waits for (`answered`, while it
    /// waits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) needed: Option<u16>,
    /// The group or person it escalated to (`escalated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) escalated_to: Option<String>,
}

impl Facts {
    /// The facts of `row` for `event`, linking to `link`.
    pub(crate) fn of(event: Event, row: &AskRow, link: Option<String>) -> Facts {
        let at = match event {
            Event::Parked => row.ask.created_at,
            Event::Answered | Event::Escalated => Timestamp::now(),
            Event::Settled | Event::Expired => row.settled_at.unwrap_or_else(Timestamp::now),
        };
        Facts {
            event,
            id: row.ask.id.clone(),
            title: super::title::of(&row.ask),
            server: row.ask.server.clone(),
            tool: row.ask.tool.clone(),
            risk: row.ask.risk.clone(),
            status: row.status.as_str(),
            link,
            at,
            person: None,
            needed: None,
            escalated_to: None,
        }
    }

    /// The generic body.
    pub(crate) fn generic(&self) -> Json {
        // Plain strings and options: serializing cannot fail.
        serde_json::to_value(self).unwrap_or(Json::Null)
    }

    /// Slack's incoming-webhook body: `text` (the notification) and
    /// `blocks` (what the channel shows).
    pub(crate) fn slack(&self) -> Json {
        let what = match (self.event, &self.person, self.needed) {
            (Event::Parked, ..) => "An ask waits for a person".to_owned(),
            (Event::Answered, Some(person), Some(needed)) => {
                let s = if needed == 1 { "" } else { "s" };
                format!("{person} answered an ask; it waits for {needed} more approval{s}")
            }
            (Event::Answered, Some(person), None) => format!("{person} answered an ask"),
            (Event::Answered, None, _) => "A person answered an ask".to_owned(),
            (Event::Escalated, ..) => match &self.escalated_to {
                Some(to) => format!("An ask escalated: {to} may answer it now"),
                None => "An ask escalated".to_owned(),
            },
            (Event::Settled | Event::Expired, ..) => format!("An ask was {}", self.status),
        };
        let origin = match (&self.server, &self.tool) {
            (Some(server), Some(tool)) => format!("{server}/{tool}"),
            (Some(one), None) | (None, Some(one)) => one.clone(),
            (None, None) => "-".to_owned(),
        };
        let risk = self.risk.as_deref().unwrap_or("-");
        // The title is askgate's words, but it quotes names: escaped here
        // too, so that `<!channel>` or a link in one is only text.
        let text = format!("{what}: {}", escape(&self.title));
        json!({
            "text": text,
            "blocks": [
                {
                    "type": "section",
                    "text": {
                        "type": "mrkdwn",
                        "text": format!("*{}*\n{}", escape(&what), escape(&self.title)),
                    },
                },
                {
                    "type": "context",
                    "elements": [{
                        "type": "mrkdwn",
                        "text": format!(
                            "{} · risk {} · {} · `{}`",
                            escape(&origin),
                            escape(risk),
                            self.status,
                            escape(&self.id)
                        ),
                    }],
                },
                {
                    "type": "section",
                    "text": {
                        "type": "mrkdwn",
                        "text": match &self.link {
                            Some(link) => format!("<{}|Open in the askgate inbox>", escape(link)),
                            None => format!("Answer it with `askgate asks answer {}`", escape(&self.id)),
                        },
                    },
                },
            ],
        })
    }
}

/// Slack's mrkdwn control characters, escaped as Slack asks.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_cannot_mention_the_channel_or_make_a_link_in_slack() {
        let facts = Facts {
            event: Event::Parked,
            id: "ask_1".into(),
            title: "Deploy <!channel> <https://evil.example|the runbook> & more".into(),
            server: Some("ops".into()),
            tool: Some("deploy".into()),
            risk: Some("high_write".into()),
            status: "pending",
            link: None,
            at: Timestamp::UNIX_EPOCH,
            person: None,
            needed: None,
            escalated_to: None,
        };
        let body = facts.slack();
        let escaped = "Deploy &lt;!channel&gt; &lt;https://evil.example|the runbook&gt; &amp; more";
        assert_eq!(
            body["text"],
            format!("An ask waits for a person: {escaped}").as_str()
        );
        let shown = body["blocks"][0]["text"]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(shown.ends_with(escaped), "{shown}");
        assert!(!body.to_string().contains("<!channel>"), "{body}");
    }
}
