//! Answering by policy, with nobody at the keyboard (CI, batch runs):
//! accept, every property filled from the server's defaults or from values
//! configured up front.

use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{Map, Value as Json};

use super::requested::{Elicitation, Requested};

/// Accept every form with its defaults filled in.
///
/// Each property gets, in order: the value configured for its name
/// ([`Policy::with_value`]), else the server's `default`, else — when it is
/// optional — nothing. A required property with neither, or a configured
/// value or default that does not fit the property, declines the whole
/// form: a policy never invents an answer. URL mode is always declined
/// (there is nobody to open the page).
///
/// # Example
/// ```
/// use askgate_mcp::client::{Policy, Requested};
/// use serde_json::json;
///
/// let form = Requested::from_json("Deploy?", &json!({
///     "type": "object",
///     "properties": {
///         "env": {"type": "string", "enum": ["staging", "prod"], "default": "staging"},
///         "ticket": {"type": "string"}
///     },
///     "required": ["ticket"]
/// }))?;
/// // `ticket` has no default: without a configured value, the form is declined.
/// assert_eq!(Policy::accept_defaults().content(&form), None);
/// let policy = Policy::accept_defaults().with_value("ticket", json!("OPS-1"));
/// assert_eq!(
///     policy.content(&form).map(serde_json::Value::Object),
///     Some(json!({"env": "staging", "ticket": "OPS-1"}))
/// );
/// # Ok::<(), askgate_mcp::client::SchemaError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Policy {
    values: Map<String, Json>,
}

impl Policy {
    /// Accept with the server's defaults; no configured values.
    pub fn accept_defaults() -> Policy {
        Policy::default()
    }

    /// Answer the property `name` (of any form) with `value`, ahead of the
    /// server's default.
    #[must_use]
    pub fn with_value(mut self, name: impl Into<String>, value: Json) -> Policy {
        self.values.insert(name.into(), value);
        self
    }

    /// The content this policy accepts `form` with, or `None` when it
    /// declines.
    pub fn content(&self, form: &Requested) -> Option<Map<String, Json>> {
        let mut content = Map::new();
        for property in &form.properties {
            let given = self
                .values
                .get(&property.name)
                .or(property.default.as_ref());
            match given {
                Some(value) => {
                    let value = property.check(value).ok()?;
                    content.insert(property.name.clone(), value);
                }
                None if property.required => return None,
                None => {}
            }
        }
        Some(content)
    }

    /// The answer to `elicitation`.
    pub fn answer(&self, elicitation: &Elicitation) -> ElicitResult {
        let Elicitation::Form(form) = elicitation else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        match self.content(form) {
            Some(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(Json::Object(content))
            }
            None => ElicitResult::new(ElicitationAction::Decline),
        }
    }
}
