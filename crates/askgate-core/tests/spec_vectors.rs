//! Every generated `elicitation/create` params object is valid against its
//! revision's schema (modelcontextprotocol/modelcontextprotocol,
//! `schema/<revision>/schema.ts`).
//!
//! The checker below is written from the spec's definitions, not copied:
//! each property must match one `PrimitiveSchemaDefinition` variant of the
//! revision exactly. It is stricter than the spec in one way: keys the spec
//! does not define are refused, since clients in the wild choke on them.

mod common;

use askgate_core::{Ask, Revision};
use serde_json::{Map, Value as Json, json};

type Check = Result<(), String>;

fn check_params(revision: Revision, params: &Json) -> Check {
    let params = params.as_object().ok_or("params: not an object")?;
    let allowed: &[&str] = if revision.has_rich_enums() {
        &["mode", "message", "requestedSchema", "_meta", "task"]
    } else {
        &["message", "requestedSchema"]
    };
    only_keys("params", params, allowed)?;
    if let Some(mode) = params.get("mode")
        && mode != "form"
    {
        return Err(format!("params.mode: {mode} is not \"form\""));
    }
    params
        .get("message")
        .and_then(Json::as_str)
        .ok_or("params.message: missing or not a string")?;
    let schema = params
        .get("requestedSchema")
        .and_then(Json::as_object)
        .ok_or("params.requestedSchema: missing or not an object")?;
    let allowed: &[&str] = if revision.has_rich_enums() {
        &["$schema", "type", "properties", "required"]
    } else {
        &["type", "properties", "required"]
    };
    only_keys("requestedSchema", schema, allowed)?;
    if schema.get("type") != Some(&json!("object")) {
        return Err("requestedSchema.type: not \"object\"".into());
    }
    let properties = schema
        .get("properties")
        .and_then(Json::as_object)
        .ok_or("requestedSchema.properties: missing or not an object")?;
    for (name, property) in properties {
        check_property(revision, property).map_err(|e| format!("property {name:?}: {e}"))?;
    }
    if let Some(required) = schema.get("required") {
        let required = required.as_array().ok_or("required: not an array")?;
        for (i, name) in required.iter().enumerate() {
            let name = name.as_str().ok_or("required: not all strings")?;
            if !properties.contains_key(name) {
                return Err(format!("required: {name:?} is not a property"));
            }
            if required[..i].iter().any(|n| n == name) {
                return Err(format!("required: {name:?} twice"));
            }
        }
    }
    Ok(())
}

fn check_property(revision: Revision, property: &Json) -> Check {
    let object = property.as_object().ok_or("not an object")?;
    let rich = revision.has_rich_enums();
    let kind = object.get("type").and_then(Json::as_str).ok_or("no type")?;
    for key in ["title", "description"] {
        if let Some(value) = object.get(key) {
            value.as_str().ok_or(format!("{key}: not a string"))?;
        }
    }
    match kind {
        "string" if object.contains_key("oneOf") => check_titled_single_select(object, rich),
        "string" if object.contains_key("enum") => check_enum(object, rich),
        "string" => check_string(object, rich),
        "number" | "integer" => check_number(object, rich),
        "boolean" => check_boolean(object),
        "array" => check_multi_select(object, rich),
        other => Err(format!("type {other:?} is not a primitive the spec allows")),
    }
}

/// The keys every property may carry, and `extra`.
fn with(extra: &[&'static str]) -> Vec<&'static str> {
    ["type", "title", "description"]
        .iter()
        .chain(extra)
        .copied()
        .collect()
}

/// A single select with titled options (`oneOf`), in revisions that have it.
fn check_titled_single_select(object: &Map<String, Json>, rich: bool) -> Check {
    if !rich {
        return Err("oneOf is not in this revision".into());
    }
    only_keys("titled single-select", object, &with(&["oneOf", "default"]))?;
    let values = titled_values(object.get("oneOf"))?;
    default_among(object, &values)
}

/// A single select as an `enum`, with `enumNames` as long as it when given.
fn check_enum(object: &Map<String, Json>, rich: bool) -> Check {
    only_keys(
        "enum",
        object,
        &with(if rich {
            &["enum", "enumNames", "default"]
        } else {
            &["enum", "enumNames"]
        }),
    )?;
    let values = strings(object.get("enum")).ok_or("enum: not a list of strings")?;
    if values.is_empty() {
        return Err("enum: empty".into());
    }
    if let Some(names) = object.get("enumNames") {
        let names = strings(Some(names)).ok_or("enumNames: not a list of strings")?;
        if names.len() != values.len() {
            return Err("enumNames: not as long as enum".into());
        }
    }
    default_among(object, &values)
}

/// A string: lengths, a format of the spec's, a string default.
fn check_string(object: &Map<String, Json>, rich: bool) -> Check {
    let keys: &[&'static str] = if rich {
        &["minLength", "maxLength", "format", "default"]
    } else {
        &["minLength", "maxLength", "format"]
    };
    only_keys("string", object, &with(keys))?;
    counts(object, ["minLength", "maxLength"])?;
    if let Some(format) = object.get("format") {
        let format = format.as_str().ok_or("format: not a string")?;
        if !["email", "uri", "date", "date-time"].contains(&format) {
            return Err(format!("format {format:?} is not in the spec"));
        }
    }
    if let Some(default) = object.get("default") {
        default.as_str().ok_or("default: not a string")?;
    }
    Ok(())
}

/// Each of `keys` the property has is a non-negative integer.
fn counts(object: &Map<String, Json>, keys: [&str; 2]) -> Check {
    for key in keys {
        if let Some(n) = object.get(key) {
            n.as_u64()
                .ok_or(format!("{key}: not a non-negative integer"))?;
        }
    }
    Ok(())
}

/// A number or an integer: numeric bounds and default.
fn check_number(object: &Map<String, Json>, rich: bool) -> Check {
    let keys: &[&'static str] = if rich {
        &["minimum", "maximum", "default"]
    } else {
        &["minimum", "maximum"]
    };
    only_keys("number", object, &with(keys))?;
    for key in ["minimum", "maximum", "default"] {
        if let Some(n) = object.get(key) {
            n.as_f64().ok_or(format!("{key}: not a number"))?;
        }
    }
    Ok(())
}

/// A boolean, with a boolean default.
fn check_boolean(object: &Map<String, Json>) -> Check {
    only_keys("boolean", object, &with(&["default"]))?;
    if let Some(default) = object.get("default") {
        default.as_bool().ok_or("default: not a boolean")?;
    }
    Ok(())
}

/// A multi-select (`array` of `enum` or titled `anyOf` items), in revisions
/// that have it: item counts, and a default among the options.
fn check_multi_select(object: &Map<String, Json>, rich: bool) -> Check {
    if !rich {
        return Err("arrays are not in this revision".into());
    }
    only_keys(
        "multi-select",
        object,
        &with(&["minItems", "maxItems", "items", "default"]),
    )?;
    let items = object
        .get("items")
        .and_then(Json::as_object)
        .ok_or("items: missing")?;
    let values = if items.contains_key("anyOf") {
        only_keys("items", items, &["anyOf"])?;
        titled_values(items.get("anyOf"))?
    } else {
        only_keys("items", items, &["type", "enum"])?;
        if items.get("type") != Some(&json!("string")) {
            return Err("items.type: not \"string\"".into());
        }
        strings(items.get("enum")).ok_or("items.enum: not a list of strings")?
    };
    counts(object, ["minItems", "maxItems"])?;
    if let Some(default) = object.get("default") {
        let default = strings(Some(default)).ok_or("default: not a list of strings")?;
        if let Some(stray) = default.iter().find(|d| !values.contains(d)) {
            return Err(format!("default {stray:?} is not an option"));
        }
    }
    Ok(())
}

fn only_keys(what: &str, object: &Map<String, Json>, allowed: &[&str]) -> Check {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!("{what}: key {key:?} is not allowed here")),
        None => Ok(()),
    }
}

fn strings(json: Option<&Json>) -> Option<Vec<String>> {
    json?
        .as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_owned))
        .collect()
}

fn titled_values(json: Option<&Json>) -> Result<Vec<String>, String> {
    let list = json
        .and_then(Json::as_array)
        .ok_or("titled options: not a list")?;
    if list.is_empty() {
        return Err("titled options: empty".into());
    }
    list.iter()
        .map(|entry| {
            let entry = entry.as_object().ok_or("titled option: not an object")?;
            only_keys("titled option", entry, &["const", "title"])?;
            entry
                .get("title")
                .and_then(Json::as_str)
                .ok_or("titled option: no title")?;
            entry
                .get("const")
                .and_then(Json::as_str)
                .map(str::to_owned)
                .ok_or_else(|| "titled option: no const".to_owned())
        })
        .collect()
}

fn default_among(object: &Map<String, Json>, values: &[String]) -> Check {
    match object.get("default") {
        None => Ok(()),
        Some(Json::String(d)) if values.contains(d) => Ok(()),
        Some(d) => Err(format!("default {d} is not an option")),
    }
}

#[test]
fn every_generated_schema_is_valid_for_its_revision() {
    for (name, form) in common::corpus() {
        let ask = Ask::new(form).unwrap_or_else(|e| panic!("{name}: {e}"));
        for revision in Revision::ALL {
            let params = ask
                .request(revision)
                .expect("the corpus forms are askable")
                .to_json();
            if let Err(problem) = check_params(revision, &params) {
                panic!("{name} on {revision}: {problem}\n{params:#}");
            }
        }
    }
}

#[test]
fn the_checker_refuses_what_a_revision_cannot_carry() {
    let on_every_revision = [
        json!({"type": "object"}),
        json!({"type": "string", "format": "time"}),
        json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}),
        json!({"type": "string", "title": 3}),
        json!({"type": "string", "pattern": "^a"}),
        json!({"type": "number", "minimum": "1"}),
        json!({"type": "boolean", "default": "yes"}),
    ];
    for revision in Revision::ALL {
        for property in &on_every_revision {
            assert!(
                check_property(revision, property).is_err(),
                "{revision}: {property}"
            );
        }
    }
    let only_2025_06_18 = [
        json!({"type": "string", "default": "a"}),
        json!({"type": "integer", "default": 1}),
        json!({"type": "string", "oneOf": [{"const": "a", "title": "A"}]}),
        json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}),
        json!({"type": "string", "enum": ["a"], "default": "a"}),
    ];
    for property in &only_2025_06_18 {
        assert!(
            check_property(Revision::V2025_06_18, property).is_err(),
            "{property}"
        );
        assert!(
            check_property(Revision::V2025_11_25, property).is_ok(),
            "{property}"
        );
    }
    let never = [
        json!({"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "default": ["b"]}),
        json!({"type": "string", "oneOf": [{"const": "a"}]}),
        json!({"type": "array", "items": {"type": "number", "enum": [1]}}),
    ];
    for property in &never {
        assert!(
            check_property(Revision::V2025_11_25, property).is_err(),
            "{property}"
        );
    }
    let params = json!({"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {}}});
    assert!(
        check_params(Revision::V2025_06_18, &params).is_err(),
        "2025-06-18 has no mode"
    );
    assert!(check_params(Revision::V2025_11_25, &params).is_ok());
    let dangling = json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}, "required": ["x"]}});
    assert!(check_params(Revision::V2025_11_25, &dangling).is_err());
}

#[test]
fn only_2025_11_25_and_later_carry_multi_select_as_an_array() {
    let ask = Ask::new(common::form("every_kind")).expect("askable");
    let old = ask
        .request(Revision::V2025_06_18)
        .expect("askable")
        .to_json();
    let new = ask
        .request(Revision::V2025_11_25)
        .expect("askable")
        .to_json();
    let props = |p: &Json| {
        p["requestedSchema"]["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default()
    };
    assert!(props(&old).get("checks").is_none());
    assert_eq!(props(&old)["checks.smoke"]["type"], "boolean");
    assert_eq!(props(&new)["checks"]["type"], "array");
    assert_eq!(props(&new)["checks"]["maxItems"], 2);
}

#[test]
fn choices_whose_labels_are_their_values_go_as_a_plain_enum() {
    let form = serde_json::from_value(json!({
        "message": "Pick",
        "fields": [
            {"id": "status", "title": "Status", "type": "choice", "default": "active",
             "options": [{"value": "active", "label": "active"}, {"value": "pending", "label": "pending"}]},
            {"id": "tags", "title": "Tags", "type": "choice", "multiple": true, "required": false,
             "options": [{"value": "a", "label": "a"}, {"value": "b", "label": "b"}]}
        ]
    }))
    .expect("a valid form");
    let ask = Ask::new(form).expect("a valid ask");
    for revision in [
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
    ] {
        let params = ask.request(revision).expect("askable").to_json();
        check_params(revision, &params).unwrap_or_else(|e| panic!("{revision}: {e}"));
        let status = &params["requestedSchema"]["properties"]["status"];
        assert_eq!(status["enum"], json!(["active", "pending"]), "{revision}");
        assert!(
            status.get("oneOf").is_none() && status.get("enumNames").is_none(),
            "{revision}"
        );
    }
    let params = ask
        .request(Revision::V2025_11_25)
        .expect("askable")
        .to_json();
    assert_eq!(
        params["requestedSchema"]["properties"]["tags"]["items"],
        json!({"type": "string", "enum": ["a", "b"]})
    );
}
