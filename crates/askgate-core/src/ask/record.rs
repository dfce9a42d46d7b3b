//! An ask as stored, and resumed from after a restart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Ask, Slot, check_given, field_index};
use crate::error::Error;
use crate::form::Form;
use crate::value::Provenance;

impl Ask {
    /// The ask as a record to store, and to resume from after a restart.
    pub fn to_record(&self) -> AskRecord {
        AskRecord {
            form: self.shape.form.clone(),
            answered: self
                .values()
                .iter()
                .filter(|s| s.source != Provenance::Supplied)
                .map(|s| {
                    (
                        s.id.to_string(),
                        RecordedValue {
                            value: s.value.to_json(),
                            source: s.source,
                        },
                    )
                })
                .collect(),
            left_empty: self
                .shape
                .fields
                .iter()
                .zip(&self.settled)
                .filter(|(_, slot)| **slot == Slot::LeftEmpty)
                .map(|(field, _)| field.id().to_owned())
                .collect(),
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            reasons: self.reasons.clone(),
        }
    }

    /// Resume an ask from its record, checking everything again.
    ///
    /// # Errors
    /// As [`Ask::new`]; a recorded value that no longer passes its field's
    /// check is refused as [`FormError::BadSupplied`](crate::FormError::BadSupplied).
    pub fn from_record(record: AskRecord) -> Result<Ask, Error> {
        let mut ask = Ask::new(record.form)?.with_max_attempts(record.max_attempts.max(1))?;
        for (id, recorded) in record.answered {
            let (index, value) = check_given(&ask.shape.fields, &id, &recorded.value)?;
            ask.settled[index] = Slot::Settled(value, recorded.source);
        }
        for id in record.left_empty {
            let index = field_index(&ask.shape.fields, &id)?;
            if ask.settled[index] == Slot::Open {
                ask.settled[index] = Slot::LeftEmpty;
            }
        }
        ask.attempt = record.attempt.clamp(1, ask.max_attempts);
        ask.reasons = record.reasons;
        Ok(ask)
    }
}

/// An ask as stored: the form, what was answered so far, and the attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRecord {
    /// The form as declared (its `supplied` included).
    pub form: Form,
    /// Values settled in earlier attempts, by field id.
    pub answered: BTreeMap<String, RecordedValue>,
    /// Optional fields the person left empty in earlier attempts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_empty: Vec<String>,
    /// Which attempt comes next.
    pub attempt: u32,
    /// How many attempts are allowed.
    pub max_attempts: u32,
    /// Why the previous attempt was refused.
    pub reasons: Vec<String>,
}

/// One recorded value with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedValue {
    /// The value in its field's JSON shape.
    pub value: Json,
    /// Where it came from.
    pub source: Provenance,
}
