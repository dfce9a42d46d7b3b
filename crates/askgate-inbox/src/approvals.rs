//! Where an ask a team's rule decides stands, on its page: the rule, who
//! has answered and how, and who may still answer — so that a person sees
//! what their answer adds before they give it.

use askgate_core::approval::Progress;
use askgate_mcp::approvals::{panel_of, progress_of};
use askgate_store::{AskRow, Error, Store};
use jiff::Timestamp;
use maud::{Markup, html};

/// An ask's standing under its rule.
pub(crate) struct Standing {
    /// The rule, as the panel names it (`approvals[0]: 2 of sre`).
    rule: String,
    /// Each answer so far: who, and whether they approved.
    answers: Vec<(String, bool)>,
    /// Approvals still needed, while it waits.
    needed: Option<u16>,
    /// Who may still answer, by name.
    waiting_on: Vec<String>,
}

/// The standing of `row` at `now`, when a rule decides it.
///
/// # Errors
/// The store failed reading its answers.
pub(crate) async fn standing(
    store: &Store,
    row: &AskRow,
    now: Timestamp,
) -> Result<Option<Standing>, Error> {
    let Ok(Some(panel)) = panel_of(row) else {
        return Ok(None);
    };
    let answers = store.answers(&row.ask.id).await?;
    let escalated = askgate_mcp::approvals::escalated(&panel, row, now);
    let needed = match progress_of(&panel, row, &answers, now) {
        Progress::Waiting { accepts_needed, .. } => Some(accepts_needed),
        _ => None,
    };
    let counted: Vec<askgate_core::approval::Answer> = answers
        .iter()
        .map(|a| askgate_core::approval::Answer {
            person: a.answer.person.clone(),
            accepted: a.answer.accepted,
        })
        .collect();
    let waiting_on = panel
        .yet_to_answer(&counted, escalated)
        .into_iter()
        .map(str::to_owned)
        .collect();
    Ok(Some(Standing {
        rule: format!("{}: {}", panel.rule, panel.describe(escalated)),
        answers: answers
            .into_iter()
            .map(|a| (a.answer.person, a.answer.accepted))
            .collect(),
        needed,
        waiting_on,
    }))
}

/// The standing, as a section of the ask's page.
pub(crate) fn section(standing: &Standing) -> Markup {
    html! {
        section.approvals aria-label="Approvals" {
            h2 { "Approvals" }
            p { "Rule " (standing.rule) "." }
            @if let Some(needed) = standing.needed {
                p.needed { (needed) " more " (if needed == 1 { "approval" } else { "approvals" }) " needed." }
            }
            @if !standing.answers.is_empty() {
                ul {
                    @for (person, approved) in &standing.answers {
                        li { (person) @if *approved { " approved" } @else { " declined" } }
                    }
                }
            }
            @if standing.needed.is_some() && !standing.waiting_on.is_empty() {
                p { "May still answer: " (standing.waiting_on.join(", ")) "." }
            }
        }
    }
}
