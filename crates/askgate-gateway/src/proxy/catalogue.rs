//! The catalogue: every upstream's tools under their names downstream —
//! exactly as the server names them when it is the only upstream,
//! `<namespace><separator><tool>` (`notes__read_note`) when there are
//! several — each with its risk from the rules, listed with the risk noted
//! and `confirm` offered only where the caller's word may count.

use std::collections::HashMap;
use std::sync::Arc;

use askgate_core::Risk;
use rmcp::model::{JsonObject, Prompt, Tool};
use serde_json::{Map, Value as Json, json};

use super::Gateway;
use crate::Collision;
use crate::config::MODEL_NAME_LIMIT;
use crate::rules::{Hints, Judged, Rules};
use crate::upstream::Upstream;

/// The longest tool name MCP allows (2025-11-25).
const MOST_TOOL_NAME: usize = 128;

/// Whether `name` is a tool name as MCP has it: 1 to 128 characters of
/// A-Z, a-z, 0-9, `_`, `-` and `.`.
fn tool_name(name: &str) -> bool {
    (1..=MOST_TOOL_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Decides a tool's risk.
pub(crate) trait Judge: Send + Sync + 'static {
    /// The risk of calling `tool` of `server` with `arguments`, and the
    /// rule that gave it (for the operator).
    fn judge(&self, server: &str, tool: &Tool, arguments: &JsonObject) -> Judged;
}

impl Judge for Rules {
    fn judge(&self, server: &str, tool: &Tool, arguments: &JsonObject) -> Judged {
        self.risk_with_hints(server, &tool.name, Hints::of(tool), arguments)
    }
}

/// An upstream tool as the gateway lists it.
pub(crate) struct Catalogued {
    /// Its name downstream (see [`Gateway::downstream_name`]).
    pub(crate) name: String,
    /// Its upstream.
    pub(crate) server: String,
    /// The tool as its upstream lists it.
    pub(crate) tool: Tool,
    /// Its risk.
    pub(crate) risk: Risk,
    /// The rule that gave it.
    pub(crate) rule: String,
}

impl Catalogued {
    /// Why its name may be refused by a model API, if it may: longer than
    /// the 64 characters some allow a function's name.
    pub(crate) fn warning(&self) -> Option<String> {
        let length = self.name.chars().count();
        (length > MODEL_NAME_LIMIT).then(|| {
            format!(
                "its name is {length} characters, over the {MODEL_NAME_LIMIT} some model APIs \
                 allow a tool name; shorten the upstream's namespace (namespace = \"<prefix>\")"
            )
        })
    }
}

/// An upstream tool, as a call finds it: its upstream, by index, and the
/// tool as that upstream lists it.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The upstream, by index.
    pub(crate) index: usize,
    /// The tool (shared: every call of it finds it).
    pub(crate) tool: Arc<Tool>,
}

/// Every upstream tool as listed, and the names two upstreams both gave.
pub(crate) struct Catalogue {
    /// The tools, in upstream order.
    pub(crate) tools: Vec<Catalogued>,
    /// Each tool left out because an earlier upstream's has its name.
    pub(crate) collisions: Vec<Collision>,
    /// Each tool left out for its name (see [`tool_name`]).
    pub(crate) refused: Vec<crate::RefusedTool>,
}

impl Gateway {
    /// `name` of upstream `upstream` as the client sees it: prefixed with
    /// its namespace, if it has one (see [`crate::config::Namespace`]).
    pub(crate) fn downstream_name(&self, upstream: &Upstream, name: &str) -> String {
        match &upstream.prefix {
            Some(prefix) => format!("{prefix}{}{name}", self.inner.settings.separator),
            None => name.to_owned(),
        }
    }

    /// Every upstream tool under its name downstream, with its risk and
    /// the rule that gave it — re-read from the upstreams. An upstream
    /// that fails is left out (and logged), not fatal; a tool whose name
    /// an earlier upstream's has is left out and reported.
    pub(crate) async fn refresh_tools(&self) -> Catalogue {
        let mut catalogue = Catalogue {
            tools: Vec::new(),
            collisions: Vec::new(),
            refused: Vec::new(),
        };
        let mut map: HashMap<String, Found> = HashMap::new();
        for (index, upstream) in self.inner.upstreams.iter() {
            let tools = match crate::upstream::listed(upstream, upstream.service.list_all_tools())
                .await
            {
                Ok(tools) => tools,
                Err(error) => {
                    tracing::warn!(upstream = %upstream.name, %error, "listing tools failed; its tools are left out");
                    continue;
                }
            };
            for tool in tools {
                if !tool_name(&tool.name) {
                    // Its name reaches the person's question: one that can
                    // say anything ("delete (Risk: read)") is not listed.
                    let shown = format!(
                        "{:?}",
                        tool.name.chars().take(MOST_TOOL_NAME).collect::<String>()
                    );
                    tracing::warn!(
                        upstream = %upstream.name,
                        name = %shown,
                        "a tool whose name is not 1 to {MOST_TOOL_NAME} characters of A-Z, a-z, 0-9, _, - and . (MCP's tool names) is left out"
                    );
                    catalogue.refused.push(crate::RefusedTool {
                        server: upstream.name.clone(),
                        name: shown,
                        why: format!(
                            "not an MCP tool name (1 to {MOST_TOOL_NAME} characters of A-Z, a-z, \
                             0-9, _, - and .): it would reach the person's question as written"
                        ),
                    });
                    continue;
                }
                let name = self.downstream_name(upstream, &tool.name);
                if let Some(first) = map.get(&name) {
                    let collision = Collision {
                        kind: "tool",
                        name,
                        first: self.upstream_name(first.index),
                        first_name: first.tool.name.to_string(),
                        second: upstream.name.clone(),
                        second_name: tool.name.to_string(),
                    };
                    tracing::error!("{collision}; the second is left out");
                    catalogue.collisions.push(collision);
                    continue;
                }
                let Judged { risk, rule } =
                    self.inner
                        .settings
                        .judge
                        .judge(&upstream.name, &tool, &JsonObject::new());
                map.insert(
                    name.clone(),
                    Found {
                        index,
                        tool: Arc::new(tool.clone()),
                    },
                );
                catalogue.tools.push(Catalogued {
                    name,
                    server: upstream.name.clone(),
                    tool,
                    risk,
                    rule: rule.to_string(),
                });
            }
        }
        *self
            .inner
            .tools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = map;
        catalogue
    }

    /// The upstream and tool listed as `name`, as last listed.
    pub(crate) fn listed_tool(&self, name: &str) -> Option<Found> {
        self.inner
            .tools
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    /// The upstream and tool listed as `name`, listing again if it was not
    /// there last time.
    pub(crate) async fn tool(&self, name: &str) -> Option<Found> {
        if let Some(found) = self.listed_tool(name) {
            return Some(found);
        }
        self.refresh_tools().await;
        if let Some(found) = self.listed_tool(name) {
            return Some(found);
        }
        // Perhaps a tool of an upstream still on its first try: wait for
        // it (one that failed is tried again in the background; a call
        // does not wait on its retries).
        if !self.inner.upstreams.tried_all() {
            self.inner
                .upstreams
                .settled(super::STARTING_WAIT, true)
                .await;
            self.refresh_tools().await;
        }
        self.listed_tool(name)
    }

    /// That no server lists `what` (`unknown tool "x"`), and which
    /// servers are not running when some are not: the thing may be one of
    /// theirs, and an agent should not take it for gone. With all running,
    /// `hint` (where to look instead), if any, follows.
    pub(crate) fn unlisted(&self, what: &str, hint: Option<&str>) -> String {
        match (self.inner.upstreams.not_running(), hint) {
            (Some(servers), _) => {
                format!("{what}: no server behind askgate lists it now; not running: {servers}")
            }
            (None, Some(hint)) => format!("{what}: no server behind askgate lists it {hint}"),
            (None, None) => format!("{what}: no server behind askgate lists it"),
        }
    }

    /// The name of upstream `index`, once it has started (else empty).
    pub(crate) fn upstream_name(&self, index: usize) -> String {
        self.inner
            .upstreams
            .get(index)
            .map(|u| u.name.clone())
            .unwrap_or_default()
    }

    /// Whether the model is offered askgate's own `ask` tool: when the
    /// config says so and no upstream tool has its name (the upstream's
    /// is the one a client of it would call).
    pub(crate) fn offers_ask_tool(&self) -> bool {
        self.inner.settings.offer_ask_tool
            && self.listed_tool(askgate_core::ask_tool::NAME).is_none()
    }
}

impl Gateway {
    /// Every upstream prompt under its name downstream, re-read from the
    /// upstreams (which prompt a name stands for is noted for
    /// `prompts/get`). As with tools, a name an earlier upstream's prompt
    /// has leaves the later one out, reported.
    pub(crate) async fn refresh_prompts(&self) -> Vec<Prompt> {
        let mut prompts = Vec::new();
        let mut map: HashMap<String, (usize, String)> = HashMap::new();
        for (index, upstream) in self.inner.upstreams.iter() {
            let listed = match crate::upstream::listed(
                upstream,
                upstream.service.list_all_prompts(),
            )
            .await
            {
                Ok(listed) => listed,
                Err(error) => {
                    tracing::debug!(upstream = %upstream.name, %error, "no prompts");
                    continue;
                }
            };
            for mut prompt in listed {
                let name = self.downstream_name(upstream, &prompt.name);
                if let Some((first, first_name)) = map.get(&name) {
                    let collision = Collision {
                        kind: "prompt",
                        name,
                        first: self.upstream_name(*first),
                        first_name: first_name.clone(),
                        second: upstream.name.clone(),
                        second_name: prompt.name.clone(),
                    };
                    tracing::error!("{collision}; the second is left out");
                    continue;
                }
                map.insert(name.clone(), (index, prompt.name.clone()));
                prompt.name = name;
                prompts.push(prompt);
            }
        }
        *self
            .inner
            .prompts
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = map;
        prompts
    }

    /// The upstream (by index) and its name of the prompt listed as
    /// `name`, listing again if it was not there last time.
    pub(crate) async fn prompt(&self, name: &str) -> Option<(usize, String)> {
        let listed = |gateway: &Gateway| {
            gateway
                .inner
                .prompts
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(name)
                .cloned()
        };
        if let Some(found) = listed(self) {
            return Some(found);
        }
        self.refresh_prompts().await;
        listed(self)
    }
}

/// The tool as listed downstream: under its name there, with `confirm` offered only
/// where the caller's word may stand in for a person (`caller_confirm`):
/// elsewhere it would only tempt the model.
pub(crate) fn listed(name: String, tool: &Tool, risk: Risk, caller_confirm: Option<Risk>) -> Tool {
    let mut tool = tool.clone();
    tool.name = name.into();
    if risk > Risk::LowWrite && caller_confirm.is_some_and(|most| risk <= most) {
        let mut schema: Map<String, Json> = (*tool.input_schema).clone();
        let properties = schema
            .entry("properties")
            .or_insert_with(|| Json::Object(Map::new()));
        if let Json::Object(properties) = properties
            && !properties.contains_key("confirm")
        {
            properties.insert(
                "confirm".into(),
                json!({"type": "boolean", "description":
                    "Pass true only if the user already confirmed this exact call in the conversation and this client cannot show askgate's confirmation."}),
            );
        }
        tool.input_schema = Arc::new(schema);
    }
    let note = format!("[askgate: risk {risk}]");
    tool.description = Some(match tool.description.take() {
        Some(text) => format!("{text} {note}").into(),
        None => note.into(),
    });
    tool
}
