//! What a server asks, read from its `elicitation/create` params: a form of
//! typed properties (form mode) or a link to open (URL mode).
//!
//! rmcp hands the client a typed `ElicitationSchema`; it is written back to
//! JSON and read here, dispatching on each property's `type` (and, for
//! strings, on `oneOf` / `enum`), so every revision's shape — titled
//! `oneOf`, legacy `enum` + `enumNames`, plain `enum`, multi-select arrays
//! with `items.enum` or `items.anyOf` — lands on one model.

use rmcp::model::{ElicitRequestParams, ElicitationSchema};
use serde_json::{Map, Number, Value as Json};

/// One incoming `elicitation/create`, read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Elicitation {
    /// Form mode: typed properties to fill in.
    Form(Requested),
    /// URL mode: a page the person opens to answer there.
    Url {
        /// What the person reads.
        message: String,
        /// The page to open.
        url: String,
        /// The server's id for this elicitation.
        elicitation_id: String,
    },
}

impl Elicitation {
    /// Read the params rmcp delivered.
    ///
    /// # Errors
    /// [`SchemaError`] when the requested schema has a property no form can
    /// ask (an unknown type, an empty choice).
    pub fn read(params: &ElicitRequestParams) -> Result<Elicitation, SchemaError> {
        match params {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => Requested::read(message, requested_schema).map(Elicitation::Form),
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => Ok(Elicitation::Url {
                message: message.clone(),
                url: url.clone(),
                elicitation_id: elicitation_id.clone(),
            }),
            // A mode this client does not know: nothing it could show.
            _ => Err(SchemaError {
                property: String::new(),
                reason: "an elicitation mode other than form or url".into(),
            }),
        }
    }
}

/// A requested schema the client cannot ask from. Never carries a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the requested schema cannot be asked: property {property:?} has {reason}")]
pub struct SchemaError {
    /// The property's name (empty for the schema as a whole).
    pub property: String,
    /// What is wrong with it.
    pub reason: String,
}

/// A form elicitation: the message and the properties, in the server's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Requested {
    /// What the person reads first.
    pub message: String,
    /// The properties, in the order the server listed them.
    pub properties: Vec<Property>,
}

impl Requested {
    /// Read a form elicitation's message and schema.
    ///
    /// # Errors
    /// [`SchemaError`] for a property no form can ask.
    pub fn read(message: &str, schema: &ElicitationSchema) -> Result<Requested, SchemaError> {
        let json = serde_json::to_value(schema).map_err(|e| SchemaError {
            property: String::new(),
            reason: format!("no JSON form ({e})"),
        })?;
        Requested::from_json(message, &json)
    }

    /// Read a form elicitation from its `requestedSchema` as JSON.
    ///
    /// # Errors
    /// [`SchemaError`] for a property no form can ask.
    pub fn from_json(message: &str, schema: &Json) -> Result<Requested, SchemaError> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Json::as_array)
            .map(|names| names.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Json::as_object)
            .unwrap_or(&empty)
            .iter()
            .map(|(name, json)| Property::read(name, json, required.contains(&name.as_str())))
            .collect::<Result<_, _>>()?;
        Ok(Requested {
            message: message.to_owned(),
            properties,
        })
    }
}

/// One property of a requested schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    /// Its name: the key of its value in the answer's `content`.
    pub name: String,
    /// Its label, if the server gave one.
    pub title: Option<String>,
    /// Help shown beside it.
    pub description: Option<String>,
    /// Whether the answer must hold it.
    pub required: bool,
    /// The server's pre-picked value, as sent.
    pub default: Option<Json>,
    /// Its type and constraints.
    pub kind: Kind,
}

/// A property's type and constraints.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Kind {
    /// A string, perhaps of a format, perhaps bounded in length.
    Text {
        /// The fewest characters.
        min_length: Option<u64>,
        /// The most characters.
        max_length: Option<u64>,
        /// The format it must have.
        format: Option<Format>,
    },
    /// A number, perhaps bounded (inclusive).
    Number {
        /// The smallest accepted.
        minimum: Option<f64>,
        /// The largest accepted.
        maximum: Option<f64>,
    },
    /// A whole number, perhaps bounded (inclusive).
    Integer {
        /// The smallest accepted.
        minimum: Option<f64>,
        /// The largest accepted.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// One of the options.
    Choice {
        /// The options, in order.
        options: Vec<Choice>,
    },
    /// Any number of the options.
    Choices {
        /// The options, in order.
        options: Vec<Choice>,
        /// The fewest picks.
        min_items: Option<u64>,
        /// The most picks.
        max_items: Option<u64>,
    },
}

/// A string format of MCP's form schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `email`.
    Email,
    /// `uri`: absolute, with a scheme.
    Uri,
    /// `date`: `YYYY-MM-DD`.
    Date,
    /// `date-time`: RFC 3339 with an offset.
    DateTime,
}

/// One option of a choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What the answer holds.
    pub value: String,
    /// What the person reads (the value when the server gave no title).
    pub label: String,
}

impl Property {
    /// The label to show: the title, else the name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }

    fn read(name: &str, json: &Json, required: bool) -> Result<Property, SchemaError> {
        let wrong = |reason: &str| SchemaError {
            property: name.to_owned(),
            reason: reason.to_owned(),
        };
        let text = |key: &str| json.get(key).and_then(Json::as_str).map(str::to_owned);
        let uint = |key: &str| json.get(key).and_then(Json::as_u64);
        let float = |key: &str| json.get(key).and_then(Json::as_f64);
        let kind = match json.get("type").and_then(Json::as_str) {
            Some("string") => {
                if let Some(options) = titled(json.get("oneOf")) {
                    Kind::Choice { options }
                } else if let Some(values) = strings(json.get("enum")) {
                    let labels = strings(json.get("enumNames"))
                        .filter(|labels| labels.len() == values.len());
                    let options = match labels {
                        Some(labels) => values
                            .into_iter()
                            .zip(labels)
                            .map(|(value, label)| Choice { value, label })
                            .collect(),
                        None => untitled(values),
                    };
                    Kind::Choice { options }
                } else {
                    let format = match text("format").as_deref() {
                        None => None,
                        Some("email") => Some(Format::Email),
                        Some("uri") => Some(Format::Uri),
                        Some("date") => Some(Format::Date),
                        Some("date-time") => Some(Format::DateTime),
                        Some(_) => return Err(wrong("a string format no form knows")),
                    };
                    Kind::Text {
                        min_length: uint("minLength"),
                        max_length: uint("maxLength"),
                        format,
                    }
                }
            }
            Some("number") => Kind::Number {
                minimum: float("minimum"),
                maximum: float("maximum"),
            },
            Some("integer") => Kind::Integer {
                minimum: float("minimum"),
                maximum: float("maximum"),
            },
            Some("boolean") => Kind::Boolean,
            Some("array") => {
                let items = json.get("items");
                let options = titled(items.and_then(|i| i.get("anyOf").or_else(|| i.get("oneOf"))))
                    .or_else(|| strings(items.and_then(|i| i.get("enum"))).map(untitled))
                    .ok_or_else(|| wrong("an array type without options"))?;
                Kind::Choices {
                    options,
                    min_items: uint("minItems"),
                    max_items: uint("maxItems"),
                }
            }
            _ => return Err(wrong("a type no form can ask")),
        };
        if let Kind::Choice { options } | Kind::Choices { options, .. } = &kind
            && options.is_empty()
        {
            return Err(wrong("no options"));
        }
        Ok(Property {
            name: name.to_owned(),
            title: text("title"),
            description: text("description"),
            required,
            default: json.get("default").filter(|d| !d.is_null()).cloned(),
            kind,
        })
    }

    /// Check a value for this property (a configured one, or one a person
    /// typed), in the JSON shape the answer carries. Integers are written
    /// without a fraction.
    ///
    /// # Errors
    /// [`Mismatch`]: why it does not fit, in words a person reads — never
    /// echoing the value, so the reason is safe to log.
    pub fn check(&self, value: &Json) -> Result<Json, Mismatch> {
        match &self.kind {
            Kind::Text {
                min_length,
                max_length,
                format,
            } => {
                let text = value.as_str().ok_or(Mismatch::NotText)?;
                let length = text.chars().count() as u64;
                if let Some(min) = *min_length
                    && length < min
                {
                    return Err(Mismatch::TooShort { min });
                }
                if let Some(max) = *max_length
                    && length > max
                {
                    return Err(Mismatch::TooLong { max });
                }
                if let Some(format) = *format
                    && !fits_format(format, text)
                {
                    return Err(Mismatch::Format(format));
                }
                Ok(value.clone())
            }
            Kind::Number { minimum, maximum } => {
                let number = value.as_f64().ok_or(Mismatch::NotANumber)?;
                within(number, *minimum, *maximum)?;
                Ok(value.clone())
            }
            Kind::Integer { minimum, maximum } => {
                let number = value.as_f64().ok_or(Mismatch::NotWhole)?;
                if number.fract() != 0.0 || !number.is_finite() {
                    return Err(Mismatch::NotWhole);
                }
                within(number, *minimum, *maximum)?;
                // A whole f64 within i64's range is exact.
                Ok(value
                    .as_i64()
                    .map_or_else(|| Json::from(number as i64), Json::from))
            }
            Kind::Boolean => value.as_bool().map(Json::Bool).ok_or(Mismatch::NotYesOrNo),
            Kind::Choice { options } => {
                let picked = value.as_str().ok_or(Mismatch::NotAPick)?;
                if options.iter().any(|o| o.value == picked) {
                    Ok(value.clone())
                } else {
                    Err(Mismatch::NotAnOption {
                        options: values(options),
                    })
                }
            }
            Kind::Choices {
                options,
                min_items,
                max_items,
            } => check_picks(value, options, *min_items, *max_items),
        }
    }
}

/// Why a value does not fit its property: what was expected, in words a
/// person reads. It never carries the value, so it is safe to log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// Text was expected.
    #[error("expected text")]
    NotText,
    /// Fewer characters than the property takes.
    #[error("too short: at least {min} characters")]
    TooShort {
        /// The fewest characters.
        min: u64,
    },
    /// More characters than the property takes.
    #[error("too long: at most {max} characters")]
    TooLong {
        /// The most characters.
        max: u64,
    },
    /// Text not of the property's format.
    #[error("{}", expected_format(*.0))]
    Format(Format),
    /// A number was expected.
    #[error("expected a number")]
    NotANumber,
    /// A whole number was expected.
    #[error("expected a whole number")]
    NotWhole,
    /// Below the property's minimum.
    #[error("too small: at least {}", show(*.min))]
    TooSmall {
        /// The smallest accepted.
        min: f64,
    },
    /// Above the property's maximum.
    #[error("too large: at most {}", show(*.max))]
    TooLarge {
        /// The largest accepted.
        max: f64,
    },
    /// Yes or no was expected.
    #[error("expected yes or no")]
    NotYesOrNo,
    /// One option was expected.
    #[error("expected one of the options")]
    NotAPick,
    /// A value that is none of the options.
    #[error("not an option; pick one of {options}")]
    NotAnOption {
        /// The options' values, comma-separated.
        options: String,
    },
    /// A list of options was expected.
    #[error("expected a list of options")]
    NotPicks,
    /// A pick that is none of the options.
    #[error("not an option; pick from {options}")]
    NotAmongOptions {
        /// The options' values, comma-separated.
        options: String,
    },
    /// The same option picked twice.
    #[error("an option is picked twice")]
    PickedTwice,
    /// Fewer picks than the property takes.
    #[error("too few: pick at least {min}")]
    TooFew {
        /// The fewest picks.
        min: u64,
    },
    /// More picks than the property takes.
    #[error("too many: pick at most {max}")]
    TooMany {
        /// The most picks.
        max: u64,
    },
}

/// A multi-select answer checked against its options and bounds.
fn check_picks(
    value: &Json,
    options: &[Choice],
    min_items: Option<u64>,
    max_items: Option<u64>,
) -> Result<Json, Mismatch> {
    let picks = value.as_array().ok_or(Mismatch::NotPicks)?;
    let mut seen: Vec<&str> = Vec::with_capacity(picks.len());
    for pick in picks {
        let pick = pick.as_str().ok_or(Mismatch::NotPicks)?;
        if !options.iter().any(|o| o.value == pick) {
            return Err(Mismatch::NotAmongOptions {
                options: values(options),
            });
        }
        if seen.contains(&pick) {
            return Err(Mismatch::PickedTwice);
        }
        seen.push(pick);
    }
    match beyond(seen.len() as u64, min_items, max_items) {
        Some(Beyond::Below(min)) => Err(Mismatch::TooFew { min }),
        Some(Beyond::Above(max)) => Err(Mismatch::TooMany { max }),
        None => Ok(value.clone()),
    }
}

fn within(number: f64, minimum: Option<f64>, maximum: Option<f64>) -> Result<(), Mismatch> {
    match beyond(number, minimum, maximum) {
        Some(Beyond::Below(min)) => Err(Mismatch::TooSmall { min }),
        Some(Beyond::Above(max)) => Err(Mismatch::TooLarge { max }),
        None => Ok(()),
    }
}

/// The bound a value is beyond.
enum Beyond<T> {
    /// Below this minimum.
    Below(T),
    /// Above this maximum.
    Above(T),
}

/// Which bound `value` is beyond, if any (the minimum checked first).
fn beyond<T: PartialOrd + Copy>(value: T, min: Option<T>, max: Option<T>) -> Option<Beyond<T>> {
    match (min, max) {
        (Some(min), _) if value < min => Some(Beyond::Below(min)),
        (_, Some(max)) if value > max => Some(Beyond::Above(max)),
        _ => None,
    }
}

/// A bound as a person writes it: `5`, not `5.0`.
pub(crate) fn show(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        format!("{}", number as i64)
    } else {
        Number::from_f64(number).map_or_else(|| number.to_string(), |n| n.to_string())
    }
}

fn fits_format(format: Format, text: &str) -> bool {
    match format {
        Format::Email => text.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && !domain.contains('@')
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !text.contains(char::is_whitespace)
        }),
        Format::Uri => url::Url::parse(text).is_ok() && !text.contains(char::is_whitespace),
        Format::Date => text.len() == 10 && text.parse::<jiff::civil::Date>().is_ok(),
        Format::DateTime => text.parse::<jiff::Timestamp>().is_ok(),
    }
}

/// What a value of `format` looks like.
fn expected_format(format: Format) -> &'static str {
    match format {
        Format::Email => "expected an email address, like name@example.com",
        Format::Uri => "expected an absolute URI, like https://example.com/",
        Format::Date => "expected a date, YYYY-MM-DD",
        Format::DateTime => "expected a date and time with an offset, like 2026-07-01T09:30:00Z",
    }
}

fn values(options: &[Choice]) -> String {
    options
        .iter()
        .map(|o| o.value.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn strings(json: Option<&Json>) -> Option<Vec<String>> {
    json?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_owned))
        .collect()
}

fn titled(json: Option<&Json>) -> Option<Vec<Choice>> {
    json?
        .as_array()?
        .iter()
        .map(|option| {
            let value = option.get("const")?.as_str()?.to_owned();
            let label = option
                .get("title")
                .and_then(Json::as_str)
                .map_or_else(|| value.clone(), str::to_owned);
            Some(Choice { value, label })
        })
        .collect()
}

fn untitled(values: Vec<String>) -> Vec<Choice> {
    values
        .into_iter()
        .map(|value| Choice {
            label: value.clone(),
            value,
        })
        .collect()
}
