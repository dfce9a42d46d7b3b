//! A form's fields as HTML inputs, by type, and a posted form read back
//! into each field's value — which then goes through the same settling as
//! any MCP answer.
//!
//! Input names: `f.<id>` the value; `f.<id>.other` free entry beside
//! choices; `f.<id>.zone` the zone of an instant whose field has none;
//! `f.<id>.from` / `f.<id>.to` a time range's ends; `f.<id>.shown` marks a
//! checkbox that was shown (an unticked box sends nothing); `f.<id>.secret`
//! marks a sensitive field, whose value a page never writes back. Question sets
//! use `q.<id>` and `q.<id>.other`.

use std::collections::BTreeMap;

use askgate_core::{ChoiceOption, Field, FieldKind, Question, QuestionSet, TextFormat, TextSpec};
use maud::{Markup, html};
use serde_json::{Map, Value as Json};

/// What a person posted, by input name (a name may repeat: several ticked
/// options): read from a posted form (`Form<Posted>`), whose name and
/// value pairs it is made from.
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(from = "Vec<(String, String)>")]
pub(crate) struct Posted {
    values: BTreeMap<String, Vec<String>>,
}

impl From<Vec<(String, String)>> for Posted {
    fn from(pairs: Vec<(String, String)>) -> Posted {
        let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in pairs {
            values.entry(name).or_default().push(value);
        }
        Posted { values }
    }
}

impl Posted {
    /// What a person typed, field by field (not the form's own `csrf` and
    /// `action`), each value as posted; empty ones left out.
    pub(crate) fn typed(&self) -> Vec<(&str, &str)> {
        self.values
            .iter()
            .filter(|(name, _)| !matches!(name.as_str(), "csrf" | "action"))
            .flat_map(|(name, values)| {
                values
                    .iter()
                    .filter(|value| !value.trim().is_empty())
                    .map(move |value| (name.as_str(), value.as_str()))
            })
            .collect()
    }

    /// Every name and value as posted, the form's own included, but a
    /// sensitive field's (marked `f.<id>.secret`): what sends the same
    /// answer again without writing a secret into a page.
    pub(crate) fn pairs_but_secrets(&self) -> impl Iterator<Item = (&str, &str)> {
        let secrets: Vec<&str> = self
            .values
            .keys()
            .filter_map(|name| name.strip_suffix(".secret"))
            .collect();
        self.values
            .iter()
            .filter(move |(name, _)| {
                !secrets.iter().any(|secret| {
                    name.strip_prefix(secret)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
                })
            })
            .flat_map(|(name, values)| values.iter().map(move |v| (name.as_str(), v.as_str())))
    }

    /// Whether a sensitive field was posted (and is left out of
    /// [`Posted::pairs_but_secrets`]).
    pub(crate) fn has_secrets(&self) -> bool {
        self.values.keys().any(|name| name.ends_with(".secret"))
    }

    /// The first value of `name`, trimmed, if not empty.
    pub(crate) fn one(&self, name: &str) -> Option<&str> {
        self.values
            .get(name)
            .and_then(|v| v.first())
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
    }

    fn all(&self, name: &str) -> Vec<String> {
        self.values
            .get(name)
            .into_iter()
            .flatten()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect()
    }

    fn has(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }
}

/// What to show in a field's inputs: what the person posted (a re-shown
/// form keeps their answer), else the field's default.
struct Shown<'a> {
    posted: Option<&'a Posted>,
}

impl Shown<'_> {
    fn text(&self, name: &str, default: Option<&Json>, secret: bool) -> String {
        if secret {
            return String::new();
        }
        match self.posted {
            Some(posted) => posted.one(name).unwrap_or_default().to_owned(),
            None => match default {
                Some(Json::String(text)) => text.clone(),
                Some(Json::Number(n)) => n.to_string(),
                _ => String::new(),
            },
        }
    }

    fn picked(&self, name: &str, default: Option<&Json>, value: &str) -> bool {
        match self.posted {
            Some(posted) => posted.all(name).iter().any(|v| v == value),
            None => match default {
                Some(Json::String(text)) => text == value,
                Some(Json::Array(items)) => items.iter().any(|i| i.as_str() == Some(value)),
                _ => false,
            },
        }
    }
}

/// A datetime-local input's value: what was posted (a local time
/// already), else the default instant as the local time in `zone` (UTC
/// without one) — so that a default sent back unchanged is the same
/// instant.
fn local_value(
    shown: &Shown<'_>,
    name: &str,
    default: Option<&Json>,
    zone: Option<&str>,
) -> String {
    if shown.posted.is_some() {
        return local_input(&shown.text(name, None, false));
    }
    let Some(text) = default.and_then(Json::as_str) else {
        return String::new();
    };
    let tz = zone
        .and_then(|zone| jiff::tz::TimeZone::get(zone).ok())
        .unwrap_or(jiff::tz::TimeZone::UTC);
    match text.parse::<jiff::Timestamp>() {
        Ok(at) => tz.to_datetime(at).strftime("%Y-%m-%dT%H:%M").to_string(),
        // A civil time already.
        Err(_) => local_input(text),
    }
}

/// The zone picker's value when a default instant is shown in UTC (the
/// field names no zone): UTC.
fn utc_when(default: Option<&Json>, zone: Option<&str>) -> Option<Json> {
    (zone.is_none() && default.is_some()).then(|| Json::String("UTC".into()))
}

/// A datetime-local input's value from an RFC 3339 or local text.
fn local_input(text: &str) -> String {
    // `2026-12-01T10:00:00+01:00` -> `2026-12-01T10:00`
    text.get(..16).unwrap_or(text).to_owned()
}

/// The inputs of one form field, with its error (if any) beside it.
pub(crate) fn field(field: &Field, posted: Option<&Posted>, error: Option<&str>) -> Markup {
    let input = Input {
        name: format!("f.{}", field.id),
        title: &field.title,
        default: field.default.as_ref(),
        secret: field.sensitive,
        required: field.required,
        error_id: format!("err-{}", field.id),
        shown: Shown { posted },
    };
    html! {
        div.field data-field=(field.id) {
            (title_of(field, &input))
            @if let Some(description) = &field.description {
                p.hint { (description) }
            }
            (inputs(&field.kind, &input))
            @if input.secret {
                input type="hidden" name=(format!("{}.secret", input.name)) value="1";
            }
            p.error id=(input.error_id) role="alert" { @if let Some(error) = error { (error) } }
        }
    }
}

/// What every input of a form field shares.
struct Input<'a> {
    /// The input's name, `f.<id>`.
    name: String,
    /// The field's title.
    title: &'a str,
    default: Option<&'a Json>,
    /// Sensitive: never shown back.
    secret: bool,
    required: bool,
    /// The id of the element its error is shown in.
    error_id: String,
    shown: Shown<'a>,
}

impl Input<'_> {
    /// What to show in its input: what was posted, else the default.
    fn text(&self) -> String {
        self.shown.text(&self.name, self.default, self.secret)
    }
}

/// A field's title: a checkbox's label around it, or a label for its input.
fn title_of(field: &Field, input: &Input<'_>) -> Markup {
    let name = &input.name;
    let ticked = input.shown.picked(name, None, "true")
        || (input.shown.posted.is_none() && input.default == Some(&Json::Bool(true)));
    html! {
        @match &field.kind {
            FieldKind::Boolean(_) => {
                input type="hidden" name=(format!("{name}.shown")) value="1";
                label {
                    input type="checkbox" name=(name) value="true" checked[ticked];
                    " " (field.title)
                }
            }
            // The group of options is named by its legend.
            kind if has_options(kind) => {}
            _ => {
                label for=(name) { (field.title) @if input.required { span.required title="required" { " *" } } }
            }
        }
    }
}

/// A field's inputs, by its type (a boolean's checkbox is its title).
fn inputs(kind: &FieldKind, input: &Input<'_>) -> Markup {
    let (name, error_id, required) = (&input.name, &input.error_id, input.required);
    let shown = &input.shown;
    html! {
        @match kind {
            FieldKind::Text(spec) => (text_input(spec, input)),
            FieldKind::Number(spec) => {
                input id=(name) type="number" step="any" name=(name) value=(input.text())
                    min=[spec.minimum] max=[spec.maximum] required[required] aria-describedby=(error_id);
                (bounds(spec.minimum.map(|m| m.to_string()), spec.maximum.map(|m| m.to_string())))
            }
            FieldKind::Integer(spec) => {
                input id=(name) type="number" step="1" name=(name) value=(input.text())
                    min=[spec.minimum] max=[spec.maximum] required[required] aria-describedby=(error_id);
                (bounds(spec.minimum.map(|m| m.to_string()), spec.maximum.map(|m| m.to_string())))
            }
            FieldKind::Boolean(_) => {}
            FieldKind::Choice(spec) => {
                (options(name, &spec.options, spec.multiple, !spec.strict, shown, input.default, legend(input)))
                @if spec.multiple {
                    @match (spec.min_items, spec.max_items) {
                        (Some(min), Some(max)) => p.hint { "Pick " (min) " to " (max) "." },
                        (Some(min), None) => p.hint { "Pick at least " (min) "." },
                        (None, Some(max)) => p.hint { "Pick at most " (max) "." },
                        (None, None) => {},
                    }
                }
            }
            FieldKind::Date(_) => {
                input id=(name) type="date" name=(name) value=(input.text())
                    required[required] aria-describedby=(error_id);
            }
            FieldKind::Instant(spec) => {
                @if !spec.options.is_empty() {
                    (options(name, &spec.options, false, !spec.strict, shown, input.default, legend(input)))
                } @else {
                    input id=(name) type="datetime-local" name=(name)
                        value=(local_value(shown, name, input.default, spec.zone.as_deref()))
                        required[required] aria-describedby=(error_id);
                    (zone_of(name, spec.zone.as_deref(), shown, utc_when(input.default, spec.zone.as_deref())))
                }
            }
            FieldKind::Zone(spec) => {
                @if !spec.options.is_empty() {
                    (options(name, &spec.options, false, !spec.strict, shown, input.default, legend(input)))
                } @else {
                    input id=(name) type="text" name=(name) list="zones" value=(input.text())
                        placeholder="Europe/Paris" autocomplete="off" required[required] aria-describedby=(error_id);
                    p.hint { "An IANA time zone: type to search." }
                }
            }
            FieldKind::TimeRange(spec) => (range_input(spec.zone.as_deref(), input)),
            _ => {
                input id=(name) type="text" name=(name) value=(input.text());
            }
        }
    }
}

/// A text field's input, and hints for its length and format.
fn text_input(spec: &TextSpec, input: &Input<'_>) -> Markup {
    let kind = match (input.secret, spec.format) {
        (true, _) => "password",
        (false, Some(TextFormat::Email)) => "email",
        (false, Some(TextFormat::Uri)) => "url",
        _ => "text",
    };
    let name = &input.name;
    html! {
        input id=(name) type=(kind) name=(name) value=(input.text())
            minlength=[spec.min_length] maxlength=[spec.max_length] required[input.required]
            autocomplete="off" aria-describedby=(input.error_id);
        @match (spec.min_length, spec.max_length) {
            (Some(min), Some(max)) => p.hint { "Between " (min) " and " (max) " characters." },
            (Some(min), None) => p.hint { "At least " (min) " characters." },
            (None, Some(max)) => p.hint { "At most " (max) " characters." },
            (None, None) => {},
        }
        @match spec.format {
            Some(TextFormat::Email) => p.hint { "An email address, name@example.com." },
            Some(TextFormat::Uri) => p.hint { "An absolute address with its scheme, https://example.com/." },
            None => {},
        }
    }
}

/// A time range's two ends, and the zone they are read in.
fn range_input(zone: Option<&str>, input: &Input<'_>) -> Markup {
    let name = &input.name;
    let range = input.default.and_then(Json::as_object);
    let (from, to) = (
        range.and_then(|r| r.get("from")),
        range.and_then(|r| r.get("to")),
    );
    let end = |which: &str, default: Option<&Json>| {
        let end = format!("{name}.{which}");
        let value = local_value(&input.shown, &end, default, zone);
        (end, value)
    };
    let (from_name, from_value) = end("from", from);
    let (to_name, to_value) = end("to", to);
    html! {
        div.range {
            label { "From " input type="datetime-local" name=(from_name)
                value=(from_value)
                required[input.required]; }
            label { " to " input type="datetime-local" name=(to_name)
                value=(to_value)
                required[input.required]; }
        }
        (zone_of(name, zone, &input.shown, utc_when(input.default, zone)))
        p.hint { "From is included, to is not; from comes first." }
    }
}

fn bounds(min: Option<String>, max: Option<String>) -> Markup {
    html! {
        @match (min, max) {
            (Some(min), Some(max)) => p.hint { "From " (min) " to " (max) "." },
            (Some(min), None) => p.hint { "At least " (min) "." },
            (None, Some(max)) => p.hint { "At most " (max) "." },
            (None, None) => {},
        }
    }
}

/// The zone a local time is read in: the field's (shown), or a picker.
fn zone_of(name: &str, zone: Option<&str>, shown: &Shown<'_>, fallback: Option<Json>) -> Markup {
    let picker = format!("{name}.zone");
    html! {
        @match zone {
            Some(zone) => p.zone { "Time zone: " strong { (zone) } },
            None => label.zone { "Time zone "
                input type="text" name=(picker) list="zones" value=(shown.text(&picker, fallback.as_ref(), false))
                    placeholder="UTC" autocomplete="off" data-local-zone;
            },
        }
    }
}

/// Whether a field of `kind` is answered by picking among options (a
/// group of radio buttons or checkboxes, named by its `legend`).
fn has_options(kind: &FieldKind) -> bool {
    match kind {
        FieldKind::Choice(_) => true,
        FieldKind::Instant(spec) => !spec.options.is_empty(),
        FieldKind::Zone(spec) => !spec.options.is_empty(),
        _ => false,
    }
}

/// The legend of a field's group of options: its title, marked required.
fn legend(input: &Input<'_>) -> Markup {
    html! {
        legend { (input.title) @if input.required { span.required title="required" { " *" } } }
    }
}

/// Options as radio buttons (one) or checkboxes (several), each with its
/// label and hotkey, in a group named by `legend`; free entry beside them
/// when allowed.
fn options(
    name: &str,
    options: &[ChoiceOption],
    multiple: bool,
    free: bool,
    shown: &Shown<'_>,
    default: Option<&Json>,
    legend: Markup,
) -> Markup {
    let kind = if multiple { "checkbox" } else { "radio" };
    let other = format!("{name}.other");
    html! {
        fieldset.options {
            (legend)
            @for option in options {
                label.option {
                    input type=(kind) name=(name) value=(option.value)
                        checked[shown.picked(name, default, &option.value)]
                        data-hotkey=[option.hotkey.map(|k| k.to_string())];
                    " " (option.label)
                    @if let Some(key) = option.hotkey { " " kbd { (key) } }
                }
            }
            @if free {
                label.option.other {
                    @if multiple { "Also: " } @else { "Or: " }
                    input type="text" name=(other) value=(shown.text(&other, None, false)) autocomplete="off";
                }
            }
        }
    }
}

/// The value of every field the person posted, in its JSON shape (what
/// `Ask::content_for` takes). A field left blank is left out: settling
/// then applies its default, or says it is missing.
pub(crate) fn read_form(fields: &[&Field], posted: &Posted) -> Map<String, Json> {
    let mut values = Map::new();
    for field in fields {
        let name = format!("f.{}", field.id);
        let value = match &field.kind {
            FieldKind::Boolean(_) if posted.has(&format!("{name}.shown")) => {
                Some(Json::Bool(posted.all(&name).iter().any(|v| v == "true")))
            }
            FieldKind::Number(_) => posted.one(&name).map(|text| {
                text.parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| Json::String(text.to_owned()), Json::Number)
            }),
            FieldKind::Integer(_) => posted.one(&name).map(|text| {
                text.parse::<i64>().map_or_else(
                    |_| Json::String(text.to_owned()),
                    |n| Json::Number(n.into()),
                )
            }),
            FieldKind::Choice(spec) if spec.multiple => {
                let mut picked = posted.all(&name);
                picked.extend(posted.one(&format!("{name}.other")).map(str::to_owned));
                (!picked.is_empty())
                    .then(|| Json::Array(picked.into_iter().map(Json::String).collect()))
            }
            FieldKind::Choice(_) | FieldKind::Zone(_) => posted
                .one(&format!("{name}.other"))
                .or_else(|| posted.one(&name))
                .map(|v| Json::String(v.to_owned())),
            FieldKind::Instant(spec) => {
                let zone = spec
                    .zone
                    .is_none()
                    .then(|| posted.one(&format!("{name}.zone")))
                    .flatten();
                posted
                    .one(&format!("{name}.other"))
                    .or_else(|| posted.one(&name))
                    .map(|local| Json::String(with_zone(local, zone)))
            }
            FieldKind::TimeRange(spec) => {
                let zone = spec
                    .zone
                    .is_none()
                    .then(|| posted.one(&format!("{name}.zone")))
                    .flatten();
                match (
                    posted.one(&format!("{name}.from")),
                    posted.one(&format!("{name}.to")),
                ) {
                    (None, None) => None,
                    (from, to) => Some(serde_json::json!({
                        "from": from.map(|f| with_zone(f, zone)).unwrap_or_default(),
                        "to": to.map(|t| with_zone(t, zone)).unwrap_or_default(),
                    })),
                }
            }
            _ => posted.one(&name).map(|v| Json::String(v.to_owned())),
        };
        if let Some(value) = value {
            values.insert(field.id.clone(), value);
        }
    }
    values
}

/// A local date and time, read in `zone` when one was picked (an RFC 9557
/// annotation: settling resolves it, and refuses a time the clocks skip).
fn with_zone(local: &str, zone: Option<&str>) -> String {
    match zone {
        Some(zone) if !local.contains('[') => format!("{local}[{zone}]"),
        _ => local.to_owned(),
    }
}

/// One question of a set: its options, free entry, or typed input.
pub(crate) fn question(
    question: &Question,
    posted: Option<&Posted>,
    error: Option<&str>,
) -> Markup {
    let shown = Shown { posted };
    let name = format!("q.{}", question.id);
    let defaults = Json::Array(
        question
            .defaults
            .iter()
            .cloned()
            .map(Json::String)
            .collect(),
    );
    let default = (!question.defaults.is_empty()).then_some(&defaults);
    html! {
        div.field data-field=(question.id) {
            @if question.options.is_empty() {
                label for=(name) { (question.prompt) }
            }
            @if let Some(description) = &question.description { p.hint { (description) } }
            @if !question.options.is_empty() {
                (options(&name, &question.options, question.multiple, question.allow_free_text, &shown, default, html! { legend { (question.prompt) } }))
            } @else {
                @let kind = match &question.input {
                    Some(FieldKind::Date(_)) => "date",
                    Some(FieldKind::Instant(_)) => "datetime-local",
                    Some(FieldKind::Number(_) | FieldKind::Integer(_)) => "number",
                    _ => "text",
                };
                @let list = matches!(question.input, Some(FieldKind::Zone(_))).then_some("zones");
                input id=(name) type=(kind) name=(name) list=[list]
                    value=(shown.text(&name, question.defaults.first().map(|d| Json::String(d.clone())).as_ref(), false))
                    autocomplete="off";
            }
            @if !question.defaults.is_empty() {
                p.hint { "Pre-picked: " (question.defaults.join(", ")) }
            }
            p.error role="alert" { @if let Some(error) = error { (error) } }
        }
    }
}

/// The answers to a question set as posted: question id -> values.
pub(crate) fn read_questions(set: &QuestionSet, posted: &Posted) -> Map<String, Json> {
    let mut answers = Map::new();
    for question in &set.questions {
        let name = format!("q.{}", question.id);
        let mut values = posted.all(&name);
        values.extend(posted.one(&format!("{name}.other")).map(str::to_owned));
        if !values.is_empty() {
            answers.insert(
                question.id.clone(),
                Json::Array(values.into_iter().map(Json::String).collect()),
            );
        }
    }
    answers
}

#[cfg(test)]
mod tests;
