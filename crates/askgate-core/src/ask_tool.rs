//! The `ask` tool a gateway can offer a model: its definition, and its input
//! checked with errors addressed to the model that say exactly what to fix.

use serde_json::{Map, Value as Json, json};

pub use crate::error::ModelInputError;

use crate::error::{Error, FormError};
use crate::form::{
    BooleanSpec, ChoiceOption, DateSpec, FieldKind, InstantSpec, IntegerSpec, NumberSpec, TextSpec,
    ZoneSpec, usable_id,
};
use crate::question::{MAX_QUESTIONS, Question, QuestionSet, Source};

/// The tool's name.
pub const NAME: &str = "ask";

/// What the model reads about the tool.
pub const DESCRIPTION: &str = "Put up to five short questions to the person you are working for, and wait for the answers. \
Use it only when an answer would materially change what you do next — which target to touch, \
whether a risky step may go ahead, a choice you cannot infer from the conversation. Do not ask \
what you can find out yourself, or to confirm what you were already told. For every question, \
pre-pick in `defaults` the answer you would choose yourself: the person can confirm it in one \
step, or skip the questions and let you proceed on those assumptions. Offer options with short \
labels; allow free text only when the options cannot cover the answer.";

/// The types a question may take instead of options.
const INPUTS: [&str; 7] = [
    "text", "number", "integer", "boolean", "date", "instant", "zone",
];

/// The tool definition: name, description and input JSON Schema, as an MCP
/// `Tool` object.
pub fn definition() -> Json {
    json!({
        "name": NAME,
        "description": DESCRIPTION,
        "inputSchema": input_schema(),
    })
}

/// The input JSON Schema (1 to 5 questions, each with defaults), strict
/// enough for providers to constrain generation with.
pub fn input_schema() -> Json {
    json!({
        "type": "object",
        "properties": {
            "preamble": {"type": "string", "description": "One sentence of context shown before the questions."},
            "questions": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_QUESTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$", "description": "Unique within this call."},
                        "prompt": {"type": "string", "minLength": 1, "description": "The question, as the person reads it."},
                        "description": {"type": "string"},
                        "options": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "value": {"type": "string", "minLength": 1},
                                    "label": {"type": "string", "minLength": 1}
                                },
                                "required": ["value", "label"],
                                "additionalProperties": false
                            }
                        },
                        "multiple": {"type": "boolean", "description": "Several options may be picked."},
                        "defaults": {"type": "array", "items": {"type": "string"}, "description": "Your pre-picked answer: option values, or the typed value."},
                        "allow_free_text": {"type": "boolean", "description": "The person may type an answer not among the options."},
                        "input": {"type": "string", "enum": INPUTS, "description": "A typed answer instead of options."}
                    },
                    "required": ["id", "prompt", "defaults"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

/// Check the model's input and turn it into a question set (`source: ask`).
///
/// # Errors
/// [`ModelInputError`] listing every problem found, addressed to the model.
pub fn parse_input(input: &Json) -> Result<QuestionSet, ModelInputError> {
    let mut fixes = Vec::new();
    let set = read_set(input, &mut fixes);
    if fixes.is_empty()
        && let Some(set) = set
    {
        match set.check() {
            Ok(()) => return Ok(set),
            Err(error) => fixes.push(explain(&set, &error)),
        }
    }
    Err(ModelInputError { fixes })
}

fn read_set(input: &Json, fixes: &mut Vec<String>) -> Option<QuestionSet> {
    let Some(object) = input.as_object() else {
        fixes.push("the input must be a JSON object with a `questions` list.".into());
        return None;
    };
    unknown_keys("the input", object, &["preamble", "questions"], fixes);
    let preamble = optional_string(object.get("preamble"), "`preamble`", fixes);
    let Some(list) = object.get("questions").and_then(Json::as_array) else {
        fixes.push("`questions` is missing or not a list: give 1 to 5 questions.".into());
        return None;
    };
    if list.is_empty() || list.len() > MAX_QUESTIONS {
        fixes.push(format!(
            "`questions` has {} entries: give 1 to {MAX_QUESTIONS}, and keep only the questions whose answers change what you do.",
            list.len()
        ));
    }
    let mut questions = Vec::new();
    for (index, entry) in list.iter().enumerate() {
        let at = format!("questions[{index}]");
        if let Some(question) = read_question(&at, entry, fixes) {
            if questions.iter().any(|q: &Question| q.id == question.id) {
                fixes.push(format!(
                    "{at}.id {:?} is used twice: give each question its own id.",
                    question.id
                ));
            }
            questions.push(question);
        }
    }
    Some(QuestionSet {
        preamble,
        questions,
        source: Source::Ask,
    })
}

fn read_question(at: &str, entry: &Json, fixes: &mut Vec<String>) -> Option<Question> {
    let Some(object) = entry.as_object() else {
        fixes.push(format!(
            "{at} must be an object with `id`, `prompt` and `defaults`."
        ));
        return None;
    };
    let allowed = [
        "id",
        "prompt",
        "description",
        "options",
        "multiple",
        "defaults",
        "allow_free_text",
        "input",
    ];
    unknown_keys(at, object, &allowed, fixes);
    let id = required_string(object, "id", at, fixes).unwrap_or_default();
    if !id.is_empty() && !usable_id(&id) {
        fixes.push(format!(
            "{at}.id may use only letters, digits, `_`, `-` and `.` (1 to 64 characters)."
        ));
    }
    let prompt = required_string(object, "prompt", at, fixes).unwrap_or_default();
    let description = optional_string(
        object.get("description"),
        &format!("{at}.description"),
        fixes,
    );
    let multiple = optional_bool(object, "multiple", at, fixes);
    let allow_free_text = optional_bool(object, "allow_free_text", at, fixes);
    let options = read_options(at, object.get("options"), fixes);
    let input = read_input(at, object.get("input"), fixes);
    let defaults = read_defaults(at, object.get("defaults"), fixes);
    let has_defaults = defaults.is_some();
    let question = Question {
        id,
        prompt,
        description,
        options,
        input,
        multiple,
        defaults: defaults.unwrap_or_default(),
        allow_free_text,
    };
    check_picks(at, &question, has_defaults, fixes);
    Some(question)
}

/// The question's `input`: a type to answer in instead of options.
fn read_input(at: &str, input: Option<&Json>, fixes: &mut Vec<String>) -> Option<FieldKind> {
    match input {
        None => None,
        Some(Json::String(name)) => match input_kind(name) {
            Some(kind) => Some(kind),
            None => {
                fixes.push(format!(
                    "{at}.input {name:?} is not a type: use one of {}.",
                    INPUTS.join(", ")
                ));
                None
            }
        },
        Some(_) => {
            fixes.push(format!(
                "{at}.input must be a string, one of {}.",
                INPUTS.join(", ")
            ));
            None
        }
    }
}

/// The question's `defaults`: the answer pre-picked for the person.
fn read_defaults(
    at: &str,
    defaults: Option<&Json>,
    fixes: &mut Vec<String>,
) -> Option<Vec<String>> {
    match defaults {
        None => {
            fixes.push(format!(
                "{at}.defaults is missing: pre-pick the answer you would choose yourself."
            ));
            None
        }
        Some(Json::Array(items)) if items.iter().all(Json::is_string) => Some(
            items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
        ),
        Some(_) => {
            fixes.push(format!(
                "{at}.defaults must be a list of strings (option values, or the typed value)."
            ));
            None
        }
    }
}

/// Whether the question offers something to pick or type, and its
/// defaults (when given, `has_defaults`) are picks it takes.
fn check_picks(at: &str, question: &Question, has_defaults: bool, fixes: &mut Vec<String>) {
    let Question {
        options,
        input,
        multiple,
        allow_free_text,
        ..
    } = question;
    let (multiple, allow_free_text) = (*multiple, *allow_free_text);
    if options.is_empty() && input.is_none() && !allow_free_text {
        fixes.push(format!(
            "{at} offers no options: add `options`, set `input` to a type, or set `allow_free_text` to true."
        ));
    }
    if options.is_empty() && multiple {
        fixes.push(format!("{at}.multiple needs `options` to pick from."));
    }
    if has_defaults {
        let defaults = &question.defaults;
        if defaults.is_empty() && !multiple {
            fixes.push(format!(
                "{at}.defaults is empty: pre-pick exactly one answer."
            ));
        }
        if defaults.len() > 1 && !multiple {
            fixes.push(format!("{at}.defaults has {} values but the question takes one: keep one, or set `multiple` to true.", defaults.len()));
        }
        let offered: Vec<&str> = options.iter().map(|o| o.value.as_str()).collect();
        if !options.is_empty() && !allow_free_text && input.is_none() {
            for default in defaults {
                if !offered.contains(&default.as_str()) {
                    fixes.push(format!(
                        "{at}.defaults has {default:?}, which is not an option value: use one of {}.",
                        offered.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
}

/// A form error of a well-shaped set, told in terms of the model's input.
fn explain(set: &QuestionSet, error: &Error) -> String {
    let at = |id: &str| {
        set.questions
            .iter()
            .position(|q| q.id == id)
            .map_or_else(|| "questions".to_owned(), |i| format!("questions[{i}]"))
    };
    match error {
        Error::Form(FormError::BadDefault { field, problem }) => {
            format!("{}.defaults: {}", at(field), problem.kind)
        }
        Error::Form(FormError::BadOption { field, problem }) => {
            format!("{}.options: {}", at(field), problem.kind)
        }
        other => format!("the questions cannot be shown: {other}."),
    }
}

fn read_options(at: &str, json: Option<&Json>, fixes: &mut Vec<String>) -> Vec<ChoiceOption> {
    let Some(json) = json else { return Vec::new() };
    let Some(items) = json.as_array() else {
        fixes.push(format!(
            "{at}.options must be a list of {{\"value\", \"label\"}} objects."
        ));
        return Vec::new();
    };
    let mut options: Vec<ChoiceOption> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let here = format!("{at}.options[{index}]");
        let Some(object) = item.as_object() else {
            fixes.push(format!(
                "{here} must be an object with `value` and `label`."
            ));
            continue;
        };
        unknown_keys(&here, object, &["value", "label"], fixes);
        let value = required_string(object, "value", &here, fixes).unwrap_or_default();
        let label = required_string(object, "label", &here, fixes).unwrap_or_default();
        if options.iter().any(|o| o.value == value) {
            fixes.push(format!(
                "{here}.value {value:?} is offered twice: give each option its own value."
            ));
        }
        options.push(ChoiceOption {
            value,
            label,
            hotkey: None,
        });
    }
    options
}

fn input_kind(name: &str) -> Option<FieldKind> {
    Some(match name {
        "text" => FieldKind::Text(TextSpec::default()),
        "number" => FieldKind::Number(NumberSpec::default()),
        "integer" => FieldKind::Integer(IntegerSpec::default()),
        "boolean" => FieldKind::Boolean(BooleanSpec::default()),
        "date" => FieldKind::Date(DateSpec::default()),
        "instant" => FieldKind::Instant(InstantSpec::default()),
        "zone" => FieldKind::Zone(ZoneSpec::default()),
        _ => return None,
    })
}

fn unknown_keys(at: &str, object: &Map<String, Json>, allowed: &[&str], fixes: &mut Vec<String>) {
    for key in object.keys().filter(|k| !allowed.contains(&k.as_str())) {
        let key: String = key.chars().take(40).collect();
        fixes.push(format!(
            "{at} has the key {key:?}, which `ask` does not take: remove it (allowed: {}).",
            allowed.join(", ")
        ));
    }
}

/// The text at `key`, which must be there and not blank.
fn required_string(
    object: &Map<String, Json>,
    key: &str,
    at: &str,
    fixes: &mut Vec<String>,
) -> Option<String> {
    let what = format!("{at}.{key}");
    let Some(json) = object.get(key) else {
        fixes.push(format!("{what} is missing."));
        return None;
    };
    let text = string(json, &what, fixes)?;
    if text.trim().is_empty() {
        fixes.push(format!("{what} is empty: write it out."));
        return None;
    }
    Some(text)
}

/// Text that may be left out (absent or null).
fn optional_string(json: Option<&Json>, what: &str, fixes: &mut Vec<String>) -> Option<String> {
    match json {
        None | Some(Json::Null) => None,
        Some(json) => string(json, what, fixes),
    }
}

/// `json` (`what`, for the fix) as text.
fn string(json: &Json, what: &str, fixes: &mut Vec<String>) -> Option<String> {
    match json {
        Json::String(s) => Some(s.clone()),
        _ => {
            fixes.push(format!("{what} must be a string."));
            None
        }
    }
}

fn optional_bool(object: &Map<String, Json>, key: &str, at: &str, fixes: &mut Vec<String>) -> bool {
    match object.get(key) {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(_) => {
            fixes.push(format!("{at}.{key} must be true or false."));
            false
        }
    }
}
