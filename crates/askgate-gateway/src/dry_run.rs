//! The operator's dry run (`askgate tools`): every upstream tool under its
//! name downstream, with its risk, the rule that gave it and what a call
//! would do now — and the tools left out, with why.

use askgate_core::{Gate, Method, Risk};

use super::{Collision, Started, proxy, upstream};

/// One upstream tool as the gateway lists it: what the operator's dry run
/// shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its name downstream: the upstream's own, or `<namespace>__<tool>`
    /// when the gateway namespaces it.
    pub name: String,
    /// Its upstream.
    pub server: String,
    /// Its risk.
    pub risk: Risk,
    /// The rule that gave the risk.
    pub rule: String,
    /// What a call would do now: proceed, and how; or ask.
    pub now: Now,
    /// Why its name may be refused by a model API (over 64 characters),
    /// if it may.
    pub warning: Option<String>,
}

/// What a call of a tool would do under the threshold in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Now {
    /// Proceed without asking, so decided.
    Proceed(Method),
    /// Ask a person.
    Ask,
}

/// An upstream tool the gateway does not offer, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedTool {
    /// Its upstream.
    pub server: String,
    /// Its name as the upstream gave it, quoted and escaped (it may hold
    /// anything: control characters, a line that reads like askgate's),
    /// cut at 128 characters.
    pub name: String,
    /// Why it is left out.
    pub why: String,
}

/// What the dry run found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRun {
    /// The tools offered.
    pub tools: Vec<Listed>,
    /// The tools left out.
    pub refused: Vec<RefusedTool>,
}

impl Started {
    /// Every upstream tool under its name downstream, with its risk, the
    /// rule that gave it, and what a call would do now — the operator's
    /// dry run — and the tools left out.
    ///
    /// # Errors
    /// Two upstreams' tools would have one name downstream.
    pub async fn tools(&self) -> Result<DryRun, Collision> {
        // Every upstream's first try: the dry run lists them all.
        let upstreams = self.gateway.upstreams();
        upstreams.release(upstream::Declared::ANY_CLIENT);
        upstreams.settled(proxy::STARTING_WAIT, true).await;
        let threshold = self.gateway.threshold();
        let catalogue = self.gateway.refresh_tools().await;
        if let Some(collision) = catalogue.collisions.into_iter().next() {
            return Err(collision);
        }
        let tools = catalogue
            .tools
            .into_iter()
            .map(|tool| Listed {
                warning: tool.warning(),
                now: match askgate_core::gate(tool.risk, threshold) {
                    Gate::Proceed(method) => Now::Proceed(method),
                    Gate::Ask => Now::Ask,
                },
                name: tool.name,
                server: tool.server,
                risk: tool.risk,
                rule: tool.rule,
            })
            .collect();
        Ok(DryRun {
            tools,
            refused: catalogue.refused,
        })
    }
}
