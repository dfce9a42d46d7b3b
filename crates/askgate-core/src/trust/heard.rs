//! What an answer that came back through the client decides: a person's
//! yes or no (rule 1), or what no person saw (rule 3).

use std::time::Duration;

use super::{Answered, Facts, Heard, Ruling, Said, Verdict, wait};
use crate::risk::Method;

/// What an answer from the client decides (rules 1 and 3).
pub(super) fn heard(facts: &Facts<'_>, answered: &Answered) -> Ruling {
    let call = facts.call;
    let too_fast = answered
        .after
        .filter(|after| *after < facts.trust.min_answer);
    let not_shown = |why: String| wait(facts, why, true);
    if let Some(after) = too_fast {
        let did = match answered.heard {
            Heard::Accepted { .. } => "accepted",
            Heard::Declined => "declined",
            Heard::Cancelled => "cancelled",
            Heard::GaveUp => "sent unreadable answers",
            Heard::Failed(_) => "failed",
            Heard::TimedOut(_) => "gave up",
        };
        return not_shown(format!(
            "the client {did} {} after asking, before a person could have read it",
            millis(after)
        ));
    }
    let person_said = |said: Said| {
        Ruling::Block(Verdict {
            proceed: false,
            method: Method::Blocked,
            final_no: true,
            for_model: format!(
                "The person {} the call to {} on {}. This is final: do not retry it, and do not \
                 pass confirm: true to get around it. Ask the user how to go on.",
                said.words(),
                call.tool,
                call.server
            ),
            for_audit: format!("the person {}", said.alone()),
        })
    };
    match &answered.heard {
        Heard::Accepted {
            confirm: Some(true),
        } => Ruling::Proceed(Verdict::proceed(
            Method::Elicited,
            "the person confirmed".into(),
        )),
        Heard::Accepted {
            confirm: Some(false),
        } => person_said(Said::Unticked),
        Heard::Declined => person_said(Said::Declined),
        Heard::Cancelled => person_said(Said::Cancelled),
        Heard::Accepted { confirm: None } => not_shown(
            "the client accepted without the confirm field, so no person saw the prompt".into(),
        ),
        Heard::GaveUp => {
            not_shown("the client's answers could not be read after the last re-ask".into())
        }
        Heard::Failed(what) => not_shown(format!("asking through the client failed ({what})")),
        Heard::TimedOut(after) => not_shown(format!(
            "nobody answered in the client within {}",
            seconds(*after)
        )),
    }
}

fn millis(duration: Duration) -> String {
    format!("{} ms", duration.as_millis())
}

fn seconds(duration: Duration) -> String {
    let secs = duration.as_secs();
    if secs == 0 {
        millis(duration)
    } else if secs >= 60 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}
