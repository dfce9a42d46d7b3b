//! The `elicitation/create` params askgate writes: one flat object schema of
//! primitive properties, as every MCP revision defines it.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value as Json;

/// The params of an `elicitation/create` request in form mode.
///
/// Serializes to the JSON the revision expects: `mode: "form"` only from
/// 2025-11-25 on (2025-06-18 has no modes).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitRequest {
    /// `"form"` from 2025-11-25 on; absent for 2025-06-18.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    /// The message the person reads, with any re-ask reasons first.
    pub message: String,
    /// The properties asked.
    pub requested_schema: RequestedSchema,
}

impl ElicitRequest {
    /// The params as a JSON value, ready to send.
    pub fn to_json(&self) -> Json {
        // Serializing plain strings, numbers and maps cannot fail.
        serde_json::to_value(self).unwrap_or(Json::Null)
    }
}

/// `requestedSchema`: `{"type": "object", "properties": {...}, "required": [...]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestedSchema {
    /// The properties, in the order they are shown.
    pub properties: Vec<Property>,
    /// The names of the properties that must be answered.
    pub required: Vec<String>,
}

impl RequestedSchema {
    /// The property names, in the order they are shown.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.properties
            .iter()
            .map(|property| property.name.as_str())
    }

    /// The schema of one property, by name.
    pub fn property(&self, name: &str) -> Option<&PropertySchema> {
        self.properties
            .iter()
            .find(|property| property.name == name)
            .map(|property| &property.schema)
    }
}

/// One property of a [`RequestedSchema`]: its name and its schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// The property name (a field id, or one generated for a field:
    /// `<id>.other`, `<id>.from`, ...).
    pub name: String,
    /// What the property holds.
    pub schema: PropertySchema,
}

impl Serialize for RequestedSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Properties<'a>(&'a [Property]);
        impl Serialize for Properties<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for property in self.0 {
                    map.serialize_entry(&property.name, &property.schema)?;
                }
                map.end()
            }
        }
        let len = if self.required.is_empty() { 2 } else { 3 };
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("type", "object")?;
        map.serialize_entry("properties", &Properties(&self.properties))?;
        if !self.required.is_empty() {
            map.serialize_entry("required", &self.required)?;
        }
        map.end()
    }
}

/// The JSON type of a property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonType {
    /// `"string"`.
    String,
    /// `"number"`.
    Number,
    /// `"integer"`.
    Integer,
    /// `"boolean"`.
    Boolean,
    /// `"array"` (multi-select, 2025-11-25 on).
    Array,
}

/// A `{const, title}` pair of a titled choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Titled {
    /// The value.
    #[serde(rename = "const")]
    pub value: String,
    /// The label.
    pub title: String,
}

/// `items` of a multi-select: `{"anyOf": [{const, title}, ...]}` when the
/// options have labels, `{"type": "string", "enum": [...]}` when every label
/// is its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Items {
    /// `"string"` for untitled options.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<JsonType>,
    /// Untitled options.
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    /// Titled options.
    #[serde(rename = "anyOf", skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<Titled>>,
}

/// One primitive property of a requested schema.
///
/// Which keys are set depends on the field and the revision; the others are
/// left out of the JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PropertySchema {
    /// The JSON type.
    #[serde(rename = "type")]
    pub kind: JsonType,
    /// The label shown for the property.
    pub title: String,
    /// Help shown beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `email`, `uri`, `date` or `date-time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<&'static str>,
    /// Fewest characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_length: Option<u32>,
    /// Most characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u32>,
    /// Smallest number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum: Option<serde_json::Number>,
    /// Largest number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum: Option<serde_json::Number>,
    /// Plain enum values (2025-06-18, and untitled choices).
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
    /// Labels for `enum` (2025-06-18).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enum_names: Option<Vec<String>>,
    /// Titled single choice (2025-11-25 on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Titled>>,
    /// Fewest picks of a multi-select.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_items: Option<u32>,
    /// Most picks of a multi-select.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u32>,
    /// The options of a multi-select.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Items>,
    /// The pre-picked value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Json>,
}

impl PropertySchema {
    /// A property of the given type and title, with no constraints yet.
    pub fn new(kind: JsonType, title: impl Into<String>) -> PropertySchema {
        PropertySchema {
            kind,
            title: title.into(),
            description: None,
            format: None,
            min_length: None,
            max_length: None,
            minimum: None,
            maximum: None,
            values: None,
            enum_names: None,
            one_of: None,
            min_items: None,
            max_items: None,
            items: None,
            default: None,
        }
    }
}
