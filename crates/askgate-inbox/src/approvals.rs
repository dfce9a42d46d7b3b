//! Where an ask a team's rule decides stands, on its page: the rule, who
//! has answered and how, and who may still answer — so that a person sees
//! what their answer adds before they give it (see
//! [`askgate_mcp::approvals::standing`]).

use askgate_mcp::approvals::Standing;
use maud::{Markup, html};

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
            @if !standing.waiting_on.is_empty() {
                p { "May still answer: " (standing.waiting_on.join(", ")) "." }
            }
        }
    }
}
