//! The catalogue: every upstream's tools under namespaced names
//! (`<server>__<tool>`), each with its risk from the rules, listed
//! downstream with the risk noted and `confirm` offered only where the
//! caller's word may count.

use std::collections::HashMap;
use std::sync::Arc;

use askgate_core::Risk;
use rmcp::model::{JsonObject, Tool};
use serde_json::{Map, Value as Json, json};

use super::Gateway;
use crate::rules::{Hints, Rules};

/// Between a namespace and a tool or prompt name.
pub(crate) const SEPARATOR: &str = "__";

/// Decides a tool's risk.
pub(crate) trait Judge: Send + Sync + 'static {
    /// The risk of calling `tool` of `server` with `arguments`, and the
    /// rule that gave it (for the operator).
    fn judge(&self, server: &str, tool: &Tool, arguments: &JsonObject) -> (Risk, String);
}

impl Judge for Rules {
    fn judge(&self, server: &str, tool: &Tool, arguments: &JsonObject) -> (Risk, String) {
        let judged = self.risk_with_hints(server, &tool.name, Hints::of(tool), arguments);
        (judged.risk, judged.rule.to_string())
    }
}

/// An upstream tool as the gateway lists it.
pub(crate) struct Catalogued {
    /// Its name downstream: `<server>__<tool>`.
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

/// An upstream tool, as a call finds it: its upstream, by index, and the
/// tool as that upstream lists it.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The upstream, by index.
    pub(crate) index: usize,
    /// The tool.
    pub(crate) tool: Tool,
}

impl Gateway {
    /// Every upstream tool, namespaced, with its risk and the rule that
    /// gave it — re-read from the upstreams. An upstream that fails is
    /// left out (and logged), not fatal.
    pub(crate) async fn refresh_tools(&self) -> Vec<Catalogued> {
        let mut listed = Vec::new();
        let mut map = HashMap::new();
        for (index, upstream) in self.inner.upstreams.iter().enumerate() {
            match upstream.service.list_all_tools().await {
                Ok(tools) => {
                    for tool in tools {
                        let name = format!("{}{SEPARATOR}{}", upstream.name, tool.name);
                        let (risk, rule) = self.inner.settings.judge.judge(
                            &upstream.name,
                            &tool,
                            &JsonObject::new(),
                        );
                        map.insert(
                            name.clone(),
                            Found {
                                index,
                                tool: tool.clone(),
                            },
                        );
                        listed.push(Catalogued {
                            name,
                            server: upstream.name.clone(),
                            tool,
                            risk,
                            rule,
                        });
                    }
                }
                Err(error) => {
                    tracing::warn!(upstream = %upstream.name, %error, "listing tools failed; its tools are left out");
                }
            }
        }
        *self
            .inner
            .tools
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = map;
        listed
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

    pub(crate) async fn tool(&self, name: &str) -> Option<Found> {
        if let Some(found) = self.listed_tool(name) {
            return Some(found);
        }
        self.refresh_tools().await;
        self.listed_tool(name)
    }
}

/// The tool as listed downstream: namespaced, with `confirm` offered only
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
