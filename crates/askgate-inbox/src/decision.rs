//! A confirmation as one decision: "Run write_note" in the risk's colour
//! or "Don't run", and what happens after each — no checkbox to tick
//! besides a button to press (an unticked box and Accept used to mean
//! stop, which nobody reads that way).

use askgate_core::{Ask, CONFIRM_FIELD};
use askgate_store::AskRow;
use maud::{Markup, html};

use crate::auth::Session;

/// Whether `ask` is a confirmation: one `confirm` checkbox.
pub(crate) fn is_confirmation(ask: &Ask) -> bool {
    matches!(ask.form().fields.as_slice(), [field] if field.id == CONFIRM_FIELD)
}

/// The risk's class for colour (`risk-destructive`), `risk-unknown` when
/// the ask names none.
pub(crate) fn risk_class(row: &AskRow) -> String {
    format!("risk-{}", row.ask.risk.as_deref().unwrap_or("unknown"))
}

/// The confirmation's form: the decision's two buttons, and what each
/// leads to.
pub(crate) fn form(session: &Session, row: &AskRow) -> Markup {
    let tool = row.ask.tool.as_deref().unwrap_or("the call");
    let server = row.ask.server.as_deref().unwrap_or("its server");
    html! {
        form.answer.decision method="post" action=(format!("/asks/{}", row.ask.id)) {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name=(format!("f.{CONFIRM_FIELD}.shown")) value="1";
            input type="hidden" name=(format!("f.{CONFIRM_FIELD}")) value="true";
            ul.next aria-label="What happens next" {
                li { strong { "Run " (tool) } ": the waiting call goes on to " (server) ", and its answer returns to the agent." }
                li { strong { "Don't run" } ": the call is not sent; the agent is told a person said no." }
            }
            div.actions {
                button type="submit" name="action" value="accept" class=(format!("run {}", risk_class(row)))
                    data-hotkey="y" aria-keyshortcuts="y" {
                    "Run " (tool) " " kbd { "y" }
                }
                button type="submit" name="action" value="decline" formnovalidate class="stop"
                    data-hotkey="n" aria-keyshortcuts="n" { "Don't run " kbd { "n" } }
            }
        }
    }
}
