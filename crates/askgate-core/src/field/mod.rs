//! A field checked once, and the check every value of it goes through.
//!
//! Answers, defaults and supplied values all pass [`CheckedField::check`]:
//! one code path decides what a valid value of a field is.
//!
//! The declaration's checks live in `declaration`, a value's in `check`,
//! and the readers of JSON and text they share in `read`.

mod check;
mod declaration;
mod read;

use std::sync::Arc;

use crate::error::FormError;
use crate::form::{ChoiceOption, Field, FieldKind};
use crate::problem::{Echo, Problem, ProblemKind, names_secret};
use crate::time::{self, NamedZone};
use crate::value::{Instant, Value};

/// A declared field that passed its checks, with its zone resolved and its
/// default parsed.
#[derive(Debug, Clone)]
pub(crate) struct CheckedField {
    pub(crate) decl: Field,
    /// The id, shared by every settled value of the field.
    pub(crate) key: Arc<str>,
    /// Sensitive, or named like a secret: values are never echoed.
    pub(crate) secret: bool,
    pub(crate) default: Option<Value>,
    /// The zone local times are read in (instant and time range fields).
    pub(crate) zone: Option<NamedZone>,
    /// For instant options: the parsed instants, in option order.
    pub(crate) instants: Vec<Instant>,
}

impl CheckedField {
    /// Check a declaration: constraints that can be met, options that are
    /// unique and valid, a zone that exists, a default that passes.
    pub(crate) fn new(decl: Field) -> Result<CheckedField, FormError> {
        let id = decl.id.clone();
        declaration::check_id(&id)?;
        let secret = decl.sensitive || names_secret(&decl.id) || names_secret(&decl.title);
        let zone = declaration::check_kind(&id, &decl.kind)?;
        let mut field = CheckedField {
            key: Arc::from(decl.id.as_str()),
            decl,
            secret,
            default: None,
            zone,
            instants: Vec::new(),
        };
        field.check_option_values()?;
        if let Some(default) = &field.decl.default {
            let value = field.check(default).map_err(|kind| FormError::BadDefault {
                field: id.clone(),
                problem: Box::new(field.problem(kind)),
            })?;
            field.default = Some(value);
        }
        Ok(field)
    }

    pub(crate) fn id(&self) -> &str {
        &self.decl.id
    }

    pub(crate) fn problem(&self, kind: ProblemKind) -> Problem {
        Problem {
            field: self.decl.id.clone(),
            title: self.decl.title.clone(),
            kind,
        }
    }

    /// The options of a field that offers any (choice, zone and instant suggestions).
    pub(crate) fn options(&self) -> &[ChoiceOption] {
        match &self.decl.kind {
            FieldKind::Choice(spec) => &spec.options,
            FieldKind::Instant(spec) => &spec.options,
            FieldKind::Zone(spec) => &spec.options,
            _ => &[],
        }
    }

    /// Whether only the options on offer are accepted.
    pub(crate) fn strict(&self) -> bool {
        match &self.decl.kind {
            FieldKind::Choice(spec) => spec.strict,
            FieldKind::Instant(spec) => spec.strict,
            FieldKind::Zone(spec) => spec.strict,
            _ => false,
        }
    }

    /// Whether the person may type a value beside the options on offer.
    pub(crate) fn has_free_entry(&self) -> bool {
        !self.options().is_empty() && !self.strict()
    }

    /// Whether several options may be picked.
    pub(crate) fn multiple(&self) -> bool {
        matches!(&self.decl.kind, FieldKind::Choice(spec) if spec.multiple)
    }

    fn check_option_values(&mut self) -> Result<(), FormError> {
        match &self.decl.kind {
            FieldKind::Instant(_) => {
                let mut instants = Vec::with_capacity(self.options().len());
                for option in self.options() {
                    let instant = time::read_instant(&option.value, self.zone.as_ref(), false)
                        .map_err(|kind| self.bad_option(kind))?;
                    instants.push(instant);
                }
                self.instants = instants;
            }
            FieldKind::Zone(_) => {
                for option in self.options() {
                    if time::zone(&option.value).is_none() {
                        return Err(self.bad_option(ProblemKind::UnknownZone {
                            given: Echo::of(&option.value, false),
                            suggestion: time::suggest(&option.value),
                        }));
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn bad_option(&self, kind: ProblemKind) -> FormError {
        FormError::BadOption {
            field: self.decl.id.clone(),
            problem: Box::new(self.problem(kind)),
        }
    }
}
