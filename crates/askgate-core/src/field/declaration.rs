//! The checks of a field's declaration: an id MCP can carry, constraints
//! that can be met, options that are unique, zones that exist.

use crate::error::FormError;
use crate::form::{ChoiceOption, ChoiceSpec, FieldKind, usable_id};
use crate::time::{self, NamedZone};

/// Check what the field's kind declares, and resolve the zone its local
/// times are read in (instant and time range fields).
pub(super) fn check_kind(id: &str, kind: &FieldKind) -> Result<Option<NamedZone>, FormError> {
    let bad = |reason: String| FormError::BadConstraint {
        field: id.to_owned(),
        reason,
    };
    let zone = |name: Option<&str>| name.map(|name| named_zone(id, name)).transpose();
    match kind {
        FieldKind::Text(spec) => {
            if let (Some(min), Some(max)) = (spec.min_length, spec.max_length)
                && min > max
            {
                return Err(bad(format!("min_length {min} is above max_length {max}")));
            }
        }
        FieldKind::Number(spec) => {
            scalar_without_options(id, "number", &spec.options)?;
            for bound in [spec.minimum, spec.maximum].into_iter().flatten() {
                if !bound.is_finite() {
                    return Err(bad("bounds must be finite numbers".into()));
                }
            }
            if let (Some(min), Some(max)) = (spec.minimum, spec.maximum)
                && min > max
            {
                return Err(bad(format!("minimum {min} is above maximum {max}")));
            }
        }
        FieldKind::Integer(spec) => {
            scalar_without_options(id, "integer", &spec.options)?;
            if let (Some(min), Some(max)) = (spec.minimum, spec.maximum)
                && min > max
            {
                return Err(bad(format!("minimum {min} is above maximum {max}")));
            }
        }
        FieldKind::Boolean(spec) => scalar_without_options(id, "boolean", &spec.options)?,
        FieldKind::Choice(spec) => check_choice(id, spec)?,
        FieldKind::Date(_) => {}
        FieldKind::Instant(spec) => {
            let zone = zone(spec.zone.as_deref())?;
            check_options(id, &spec.options)?;
            return Ok(zone);
        }
        FieldKind::Zone(spec) => check_options(id, &spec.options)?,
        FieldKind::TimeRange(spec) => return zone(spec.zone.as_deref()),
    }
    Ok(None)
}

pub(super) fn check_id(id: &str) -> Result<(), FormError> {
    if usable_id(id) {
        Ok(())
    } else {
        Err(FormError::BadId {
            id: id.chars().take(64).collect(),
        })
    }
}

fn scalar_without_options(
    id: &str,
    kind: &'static str,
    options: &[ChoiceOption],
) -> Result<(), FormError> {
    if options.is_empty() {
        Ok(())
    } else {
        Err(FormError::ChoicesOnScalar {
            field: id.to_owned(),
            kind,
        })
    }
}

fn check_choice(id: &str, spec: &ChoiceSpec) -> Result<(), FormError> {
    if spec.options.is_empty() {
        return Err(FormError::NoOptions {
            field: id.to_owned(),
        });
    }
    check_options(id, &spec.options)?;
    let bad = |reason: String| FormError::BadConstraint {
        field: id.to_owned(),
        reason,
    };
    if !spec.multiple && (spec.min_items.is_some() || spec.max_items.is_some()) {
        return Err(bad("min_items and max_items need \"multiple\": true".into()));
    }
    if let (Some(min), Some(max)) = (spec.min_items, spec.max_items)
        && min > max
    {
        return Err(bad(format!("min_items {min} is above max_items {max}")));
    }
    if let Some(min) = spec.min_items
        && spec.strict
        && min as usize > spec.options.len()
    {
        let offered = spec.options.len();
        let options = if offered == 1 { "option" } else { "options" };
        return Err(bad(format!(
            "min_items {min} is more than the {offered} {options} on offer"
        )));
    }
    Ok(())
}

fn check_options(id: &str, options: &[ChoiceOption]) -> Result<(), FormError> {
    for (i, option) in options.iter().enumerate() {
        if option.value.trim().is_empty() {
            return Err(FormError::EmptyOption {
                field: id.to_owned(),
            });
        }
        let earlier = &options[..i];
        if earlier.iter().any(|o| o.value == option.value) {
            return Err(FormError::DuplicateOption {
                field: id.to_owned(),
                what: "the value",
                value: option.value.clone(),
            });
        }
        if let Some(key) = option.hotkey
            && earlier
                .iter()
                .any(|o| o.hotkey.is_some_and(|k| k.eq_ignore_ascii_case(&key)))
        {
            return Err(FormError::DuplicateOption {
                field: id.to_owned(),
                what: "the hotkey",
                value: key.to_string(),
            });
        }
    }
    Ok(())
}

fn named_zone(id: &str, name: &str) -> Result<NamedZone, FormError> {
    let tz = time::zone(name).ok_or_else(|| FormError::UnknownZone {
        field: id.to_owned(),
        zone: name.chars().take(64).collect(),
    })?;
    Ok(NamedZone {
        name: time::canonical_name(&tz, name),
        tz,
    })
}
