//! The example upstream's tools as it lists them: one per risk level,
//! each annotated truthfully (see [`super::TOOLS`] for the risks they are
//! meant to have).

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value as Json, json};

use super::{LONG_NAMED, WITHDRAWING, asks, wait};

/// An object schema with `properties`, all required.
fn schema(properties: &[(&str, &str)]) -> Arc<Map<String, Json>> {
    let props: Map<String, Json> = properties
        .iter()
        .map(|(name, description)| {
            let property = json!({"type": "string", "description": description});
            ((*name).to_owned(), property)
        })
        .collect();
    let required: Vec<&str> = properties.iter().map(|(name, _)| *name).collect();
    let mut object = Map::new();
    object.insert("type".into(), json!("object"));
    object.insert("properties".into(), Json::Object(props));
    object.insert("required".into(), json!(required));
    Arc::new(object)
}

/// What a tool that only reads says of itself.
fn reads(open_world: bool) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .open_world(open_world)
}

/// What a tool that writes says of itself.
fn writes(destructive: bool, idempotent: bool, open_world: bool) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(false)
        .destructive(destructive)
        .idempotent(idempotent)
        .open_world(open_world)
}

/// The tools, annotated truthfully.
pub(super) fn tools() -> Vec<Tool> {
    let name = ("name", "The note's name: A-Z, a-z, 0-9, _ and -");
    let text = ("text", "The text");
    let deploy = [
        ("service", "The service to deploy"),
        ("env", "The environment: staging or production"),
    ];
    [
        (
            "read_note",
            "Returns a note's text (risk: read)",
            schema(&[name]),
            reads(false),
        ),
        (
            "append_note",
            "Appends text to a note, creating it if needed (risk: low_write)",
            schema(&[name, text]),
            writes(false, false, false),
        ),
        (
            "write_note",
            "Replaces a note's text (risk: medium_write)",
            schema(&[name, text]),
            writes(true, true, false),
        ),
        (
            "deploy",
            "Deploys a service to an environment (risk: high_write)",
            schema(&deploy),
            writes(true, false, true),
        ),
        (
            "delete_all_notes",
            "Deletes every note (risk: destructive)",
            schema(&[]),
            writes(true, true, false),
        ),
        (
            "ask_name",
            "Asks the person their name and greets them (classic elicitation)",
            schema(&[]),
            reads(false),
        ),
        (
            "sign_in",
            "Sends the person to a sign-in link and says when they are back (URL-mode elicitation)",
            schema(&[]),
            reads(true),
        ),
        (
            wait::NAME,
            "Returns a note's text once it exists, waiting for it at most wait_ms milliseconds (risk: read)",
            wait::schema(),
            reads(false),
        ),
        (
            "ask_name_later",
            "Answers at once, then after after_ms milliseconds (default 200) asks the person their name outside any call (classic elicitation)",
            asks::later_schema(),
            reads(false),
        ),
        (
            LONG_NAMED,
            "Lists the notes' names, one per line, in alphabetical order (risk: read)",
            schema(&[]),
            reads(false),
        ),
        (
            WITHDRAWING,
            "Asks the person their name, and withdraws the question if no answer came within within_ms milliseconds (classic elicitation)",
            schema(&[("within_ms", "How long to wait for the answer (default 300)")]),
            reads(false),
        ),
    ]
    .into_iter()
    .map(|(name, description, schema, annotations)| {
        Tool::new(name, description, schema).with_annotations(annotations)
    })
    .collect()
}
