//! Form -> `elicitation/create` params, for the revision the client speaks.

use serde_json::Value as Json;

use super::Names;
use super::schema::{
    ElicitRequest, Items, JsonType, Property, PropertySchema, RequestedSchema, Titled,
};
use crate::field::CheckedField;
use crate::form::{ChoiceOption, ChoiceSpec, FieldKind, TextFormat};
use crate::revision::Revision;
use crate::value::Value;

/// Build the params for the open fields of an ask.
pub(crate) fn build<'a>(
    message: String,
    open: impl Iterator<Item = (&'a CheckedField, &'a Names)>,
    revision: Revision,
) -> ElicitRequest {
    let mut schema = RequestedSchema {
        properties: Vec::new(),
        required: Vec::new(),
    };
    for (field, names) in open {
        add_field(&mut schema, field, names, revision);
    }
    ElicitRequest {
        mode: revision.has_rich_enums().then_some("form"),
        message,
        requested_schema: schema,
    }
}

fn add_field(
    schema: &mut RequestedSchema,
    field: &CheckedField,
    names: &Names,
    revision: Revision,
) {
    let rich = revision.has_rich_enums();
    let title = field.decl.title.as_str();
    let must = field.decl.required && field.default.is_none();
    // The default as the main property's `default`, or as the `.other` one's
    // when it is not among the options.
    let (main_default, other_default) = split_default(field);

    let mut main = PropertySchema::new(JsonType::String, title);
    main.description = field.decl.description.clone();
    let mut required = must;
    match &field.decl.kind {
        FieldKind::Text(spec) => {
            main.min_length = spec.min_length;
            main.max_length = spec.max_length;
            main.format = spec.format.map(|format| match format {
                TextFormat::Email => "email",
                TextFormat::Uri => "uri",
            });
        }
        FieldKind::Number(spec) => {
            main.kind = JsonType::Number;
            main.minimum = spec.minimum.and_then(serde_json::Number::from_f64);
            main.maximum = spec.maximum.and_then(serde_json::Number::from_f64);
        }
        FieldKind::Integer(spec) => {
            main.kind = JsonType::Integer;
            main.minimum = spec.minimum.map(serde_json::Number::from);
            main.maximum = spec.maximum.map(serde_json::Number::from);
        }
        FieldKind::Boolean(_) => main.kind = JsonType::Boolean,
        FieldKind::Date(_) => main.format = Some("date"),
        FieldKind::Choice(spec) if spec.multiple && rich => {
            set_many(&mut main, spec);
            required = must && spec.strict;
        }
        FieldKind::Choice(spec) if spec.multiple => {
            // 2025-06-18 has no arrays: one checkbox per option.
            add_checkboxes(schema, field, spec, names);
            add_other(schema, field, names, other_default, rich);
            return;
        }
        FieldKind::Choice(_) => {
            set_choices(&mut main, field.options(), rich);
            required = must && field.strict();
        }
        FieldKind::Zone(_) | FieldKind::Instant(_) if !field.options().is_empty() => {
            set_choices(&mut main, field.options(), rich);
            required = must && field.strict();
        }
        FieldKind::Instant(_) => main.format = Some("date-time"),
        FieldKind::Zone(_) => {
            main.description = join(
                main.description.take(),
                Some("An IANA time zone name, such as Europe/Paris.".into()),
            );
        }
        FieldKind::TimeRange(_) => {
            add_ends(schema, field, names, rich, must);
            return;
        }
    }
    note_zone(&mut main, field);
    apply_default(&mut main, main_default, field, rich);
    if required {
        schema.required.push(names.main.clone());
    }
    schema.properties.push(Property {
        name: names.main.clone(),
        schema: main,
    });
    add_other(schema, field, names, other_default, rich);
}

/// Name the zone local times are read in, unless only options are picked.
fn note_zone(main: &mut PropertySchema, field: &CheckedField) {
    let picks_only = field.strict() && !field.options().is_empty();
    if let (Some(zone), false) = (&field.zone, picks_only) {
        main.description = join(
            main.description.take(),
            Some(format!(
                "Times are in {} unless you give an offset.",
                zone.name
            )),
        );
    }
}

/// A multiple choice as an array of picks (2025-11-25 and later).
fn set_many(main: &mut PropertySchema, spec: &ChoiceSpec) {
    let hint = pick_hint(spec.min_items, spec.max_items);
    main.kind = JsonType::Array;
    main.min_items = spec.min_items;
    main.max_items = spec.max_items;
    main.items = Some(if untitled(&spec.options) {
        Items {
            kind: Some(JsonType::String),
            values: Some(values(&spec.options)),
            any_of: None,
        }
    } else {
        Items {
            kind: None,
            values: None,
            any_of: Some(titled(&spec.options)),
        }
    });
    main.description = join(main.description.take(), hint);
}

/// A multiple choice as one checkbox per option (2025-06-18 has no arrays).
fn add_checkboxes(
    schema: &mut RequestedSchema,
    field: &CheckedField,
    spec: &ChoiceSpec,
    names: &Names,
) {
    let title = field.decl.title.as_str();
    let hint = pick_hint(spec.min_items, spec.max_items);
    let picked: &[String] = match &field.default {
        Some(Value::Choices(values)) => values,
        _ => &[],
    };
    for (i, (option, name)) in spec.options.iter().zip(&names.per_option).enumerate() {
        let mut checkbox =
            PropertySchema::new(JsonType::Boolean, format!("{title}: {}", option.label));
        if i == 0 {
            checkbox.description = join(field.decl.description.clone(), hint.clone());
        }
        checkbox.default = Some(Json::Bool(picked.contains(&option.value)));
        schema.properties.push(Property {
            name: name.clone(),
            schema: checkbox,
        });
    }
}

/// `<id>.from` and `<id>.to`.
fn add_ends(
    schema: &mut RequestedSchema,
    field: &CheckedField,
    names: &Names,
    rich: bool,
    must: bool,
) {
    let Some((from_name, to_name)) = &names.ends else {
        return;
    };
    let (from_default, to_default) = match &field.default {
        Some(Value::TimeRange { from, to }) => (Some(from.to_string()), Some(to.to_string())),
        _ => (None, None),
    };
    let zone_hint = field
        .zone
        .as_ref()
        .map(|zone| format!(" Times are in {} unless you give an offset.", zone.name))
        .unwrap_or_default();
    let ends = [
        (from_name, "from", "Start, included.", from_default),
        (to_name, "to", "End, not included.", to_default),
    ];
    for (i, (name, end, what, default)) in ends.into_iter().enumerate() {
        let mut property =
            PropertySchema::new(JsonType::String, format!("{}: {end}", field.decl.title));
        property.format = Some("date-time");
        let base = if i == 0 {
            field.decl.description.clone()
        } else {
            None
        };
        property.description = join(base, Some(format!("{what}{zone_hint}")));
        if let Some(default) = default {
            if rich {
                property.default = Some(Json::String(default));
            } else {
                property.description = join(
                    property.description.take(),
                    Some(format!("Default: {default}. Leave empty to keep it.")),
                );
            }
        }
        if must {
            schema.required.push(name.clone());
        }
        schema.properties.push(Property {
            name: name.clone(),
            schema: property,
        });
    }
}

/// `<id>.other`: free entry beside the options.
fn add_other(
    schema: &mut RequestedSchema,
    field: &CheckedField,
    names: &Names,
    default: Option<Json>,
    rich: bool,
) {
    let Some(name) = &names.other else {
        return;
    };
    let mut other = PropertySchema::new(JsonType::String, format!("{}: other", field.decl.title));
    let what = if field.multiple() {
        "Or add a value that is not listed."
    } else {
        "Or type a value that is not listed (answer this or the list, not both)."
    };
    other.description = Some(what.into());
    if matches!(field.decl.kind, FieldKind::Instant(_)) {
        other.format = Some("date-time");
    }
    if let Some(default) = default {
        if rich {
            other.default = Some(default);
        } else if let Json::String(text) = default {
            other.description = join(other.description.take(), Some(default_hint(&text)));
        }
    }
    schema.properties.push(Property {
        name: name.clone(),
        schema: other,
    });
}

fn set_choices(property: &mut PropertySchema, options: &[ChoiceOption], rich: bool) {
    property.kind = JsonType::String;
    if untitled(options) {
        property.values = Some(values(options));
    } else if rich {
        property.one_of = Some(titled(options));
    } else {
        property.values = Some(values(options));
        property.enum_names = Some(options.iter().map(|o| o.label.clone()).collect());
    }
}

/// Whether every option reads as its value: then the plain `enum` says it
/// all, and every client renders it.
fn untitled(options: &[ChoiceOption]) -> bool {
    options.iter().all(|o| o.label == o.value)
}

fn values(options: &[ChoiceOption]) -> Vec<String> {
    options.iter().map(|o| o.value.clone()).collect()
}

fn titled(options: &[ChoiceOption]) -> Vec<Titled> {
    options
        .iter()
        .map(|o| Titled {
            value: o.value.clone(),
            title: o.label.clone(),
        })
        .collect()
}

/// The default of the main property and of the `.other` property.
fn split_default(field: &CheckedField) -> (Option<Json>, Option<Json>) {
    let Some(default) = &field.default else {
        return (None, None);
    };
    let options = field.options();
    let offered = |value: &str| options.iter().position(|o| o.value == value);
    match default {
        Value::Choice(value) | Value::Zone(value) if !options.is_empty() => match offered(value) {
            Some(_) => (Some(Json::String(value.clone())), None),
            None => (None, Some(Json::String(value.clone()))),
        },
        Value::Choices(values) if field.has_free_entry() => {
            let listed: Vec<Json> = values
                .iter()
                .filter(|v| offered(v).is_some())
                .map(|v| Json::String(v.clone()))
                .collect();
            let free = values
                .iter()
                .find(|v| offered(v).is_none())
                .map(|v| Json::String(v.clone()));
            (Some(Json::Array(listed)), free)
        }
        Value::Instant(instant) if !options.is_empty() => {
            match field
                .instants
                .iter()
                .position(|i| i.timestamp == instant.timestamp)
            {
                Some(index) => (Some(Json::String(options[index].value.clone())), None),
                None => (None, Some(Json::String(instant.to_string()))),
            }
        }
        other => (Some(other.to_json()), None),
    }
}

/// Put the default in the schema where the revision allows it; otherwise
/// name it in the description (2025-06-18 carries defaults on booleans only).
fn apply_default(
    property: &mut PropertySchema,
    default: Option<Json>,
    field: &CheckedField,
    rich: bool,
) {
    let Some(default) = default else {
        return;
    };
    if rich || property.kind == JsonType::Boolean {
        property.default = Some(default);
        return;
    }
    let shown = match &default {
        Json::String(value) => field
            .options()
            .iter()
            .find(|o| &o.value == value)
            .map_or_else(|| value.clone(), |o| o.label.clone()),
        other => other.to_string(),
    };
    property.description = join(property.description.take(), Some(default_hint(&shown)));
}

fn default_hint(shown: &str) -> String {
    format!("Default: {shown}. Leave empty to keep it.")
}

fn pick_hint(min: Option<u32>, max: Option<u32>) -> Option<String> {
    match (min, max) {
        (Some(min), Some(max)) if min == max => Some(format!("Pick {min}.")),
        (Some(min), Some(max)) => Some(format!("Pick {min} to {max}.")),
        (Some(min), None) => Some(format!("Pick at least {min}.")),
        (None, Some(max)) => Some(format!("Pick at most {max}.")),
        (None, None) => None,
    }
}

fn join(first: Option<String>, second: Option<String>) -> Option<String> {
    match (first, second) {
        (Some(a), Some(b)) => Some(format!("{a} {b}")),
        (a, b) => a.or(b),
    }
}
