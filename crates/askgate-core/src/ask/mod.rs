//! An ask in progress: a checked form, what is already settled, and which
//! attempt this is. Settling a response is pure and deterministic.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value as Json};

use crate::error::{ContentError, Error, FormError, Misuse};
use crate::field::CheckedField;
use crate::form::Form;
use crate::outcome::{Action, Outcome, Response};
use crate::problem::{Problem, ProblemKind};
use crate::revision::Revision;
use crate::value::{Provenance, Settled, Value, Values};
use crate::wire::{self, ElicitRequest, Gathered, Names, Routed, Routes};

mod record;

pub use record::{AskRecord, RecordedValue};

/// How many times a person is asked, by default, before the ask gives up.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// An ask: a form checked once, plus the state of the conversation about it.
///
/// # Example
/// ```
/// use askgate_core::{Ask, Form, Outcome, Response, Revision, Step};
/// let form: Form = serde_json::from_str(r#"{
///   "message": "How many replicas?",
///   "fields": [{"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5}]
/// }"#)?;
/// let ask = Ask::new(form)?;
/// let params = ask.request(Revision::V2025_11_25)?.to_json();
/// assert_eq!(params["requestedSchema"]["properties"]["replicas"]["type"], "integer");
///
/// let response: Response = serde_json::from_str(r#"{"action": "accept", "content": {"replicas": 9}}"#)?;
/// let Step::ReAsk(again) = ask.settle(Revision::V2025_11_25, &response) else { panic!("9 is above 5") };
/// assert!(again.request(Revision::V2025_11_25)?.message.contains("Replicas: 9 is too large"));
///
/// let response: Response = serde_json::from_str(r#"{"action": "accept", "content": {"replicas": 3}}"#)?;
/// let Step::Settled(Outcome::Accepted { values }) = again.settle(Revision::V2025_11_25, &response) else { panic!() };
/// assert_eq!(values.get("replicas").map(|s| s.value.to_json()), Some(3.into()));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Ask {
    /// What never changes between attempts, shared by every re-ask.
    shape: Arc<Shape>,
    /// Per field: open, settled with a value, or left empty.
    settled: Vec<Slot>,
    attempt: u32,
    max_attempts: u32,
    /// Why the previous attempt was refused, shown before the message.
    reasons: Vec<String>,
    /// The same, field by field (empty for an ask resumed from a record).
    problems: Vec<Problem>,
}

impl Ask {
    /// Check a form and start an ask about it.
    ///
    /// # Errors
    /// [`Error`] when the form cannot be asked as declared: no fields, a bad or
    /// duplicate id, an id colliding with a generated property name, options
    /// on a number or boolean, impossible constraints, an unknown zone, or a
    /// default or supplied value that fails the field's own check.
    pub fn new(form: Form) -> Result<Ask, Error> {
        if form.fields.is_empty() {
            return Err(FormError::EmptyForm.into());
        }
        let mut fields = Vec::with_capacity(form.fields.len());
        for decl in &form.fields {
            if fields.iter().any(|f: &CheckedField| f.id() == decl.id) {
                return Err(FormError::DuplicateId {
                    id: decl.id.clone(),
                }
                .into());
            }
            fields.push(CheckedField::new(decl.clone())?);
        }
        let names: Vec<Names> = fields.iter().map(Names::of).collect();
        let mut owners = HashMap::new();
        for (index, field) in fields.iter().enumerate() {
            owners.insert(field.id().to_owned(), index);
        }
        for (index, field_names) in names.iter().enumerate() {
            for name in field_names.generated() {
                if let Some(&owner) = owners.get(name) {
                    let (id, owner) = if owner == index {
                        (name, field_names.main.as_str())
                    } else {
                        (fields[owner].id(), field_names.main.as_str())
                    };
                    return Err(FormError::IdCollision {
                        id: id.to_owned(),
                        owner: owner.to_owned(),
                    }
                    .into());
                }
                owners.insert(name.to_owned(), index);
            }
        }
        let mut settled = vec![Slot::Open; fields.len()];
        for (id, json) in &form.supplied {
            let (index, value) = check_given(&fields, id, json)?;
            settled[index] = Slot::Settled(value, Provenance::Supplied);
        }
        Ok(Ask {
            shape: Arc::new(Shape {
                routes: Routes::new(&names),
                form,
                fields,
                names,
            }),
            settled,
            attempt: 1,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            reasons: Vec::new(),
            problems: Vec::new(),
        })
    }

    /// Set how many times the person is asked before the ask gives up.
    ///
    /// # Errors
    /// [`Misuse::ZeroAttempts`] for zero.
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Result<Ask, Error> {
        if max_attempts == 0 {
            return Err(Misuse::ZeroAttempts.into());
        }
        self.max_attempts = max_attempts;
        Ok(self)
    }

    /// The form as declared.
    pub fn form(&self) -> &Form {
        &self.shape.form
    }

    /// Which attempt the next request is (1 for the first).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// How many attempts are allowed in all.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// Why the previous attempt was refused (empty on the first attempt).
    pub fn reasons(&self) -> &[String] {
        &self.reasons
    }

    /// Why the previous attempt was refused, field by field (what
    /// [`Ask::reasons`] says, with the field each reason is about; empty on
    /// the first attempt and for an ask resumed from a record).
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The ids of the fields still to be asked, in form order.
    pub fn open_fields(&self) -> impl Iterator<Item = &str> {
        self.open().map(|(field, _)| field.id())
    }

    /// Whether an open field is sensitive, so the ask must go through URL mode.
    pub fn needs_url_mode(&self) -> bool {
        self.open().any(|(field, _)| field.decl.sensitive)
    }

    /// The values settled so far (supplied, and answered in earlier attempts).
    pub fn values(&self) -> Values {
        Values(
            self.shape
                .fields
                .iter()
                .zip(&self.settled)
                .filter_map(|(field, slot)| match slot {
                    Slot::Settled(value, source) => Some(Settled {
                        id: Arc::clone(&field.key),
                        value: value.clone(),
                        source: *source,
                    }),
                    Slot::Open | Slot::LeftEmpty => None,
                })
                .collect(),
        )
    }

    /// The outcome when nothing is left to ask (every field supplied).
    pub fn settle_without_asking(&self) -> Option<Outcome> {
        self.open().next().is_none().then(|| Outcome::Accepted {
            values: self.values(),
        })
    }

    /// The message the person reads on this attempt: the reasons the previous
    /// answer was refused, then the form's message.
    pub fn message(&self) -> String {
        if self.reasons.is_empty() {
            return self.shape.form.message.clone();
        }
        let mut message = format!(
            "Some answers need another look (attempt {} of {}):\n",
            self.attempt, self.max_attempts
        );
        for reason in &self.reasons {
            message.push_str("- ");
            message.push_str(reason);
            message.push('\n');
        }
        message.push('\n');
        message.push_str(&self.shape.form.message);
        message
    }

    /// The `elicitation/create` params asking the open fields, for a client
    /// speaking `revision`.
    ///
    /// # Errors
    /// [`FormError::SensitiveField`] when an open field is sensitive (use URL
    /// mode), [`Misuse::NothingToAsk`] when no field is open.
    pub fn request(&self, revision: Revision) -> Result<ElicitRequest, Error> {
        if let Some((field, _)) = self.open().find(|(field, _)| field.decl.sensitive) {
            return Err(FormError::SensitiveField {
                field: field.id().to_owned(),
            }
            .into());
        }
        if self.open().next().is_none() {
            return Err(Misuse::NothingToAsk.into());
        }
        Ok(wire::build(self.message(), self.open(), revision))
    }

    /// Settle a response: an outcome, or a re-ask of what is still open or
    /// wrong. Pure and deterministic: the same ask and response always give
    /// the same step.
    pub fn settle(&self, revision: Revision, response: &Response) -> Step {
        // Shapes are read leniently across revisions, so the revision only
        // matters for what was asked; it is kept in the signature so callers
        // settle against what they sent.
        let _ = revision;
        match response.action {
            Action::Decline => return Step::Settled(Outcome::Declined),
            Action::Cancel => return Step::Settled(Outcome::Cancelled),
            Action::Accept => {}
        }
        let empty = Map::new();
        let content = response.content.as_ref().unwrap_or(&empty);
        let (slots, unknown) = self.shape.routes.route(content);
        self.settle_routed(&slots, unknown)
    }

    /// Settle an accepted answer given as the JSON text of its `content`
    /// object: the same step as [`Ask::settle`] with
    /// `Response::accept(serde_json::from_str(text)?)`, read without building
    /// the map (each property name is routed to its field as it is parsed).
    ///
    /// # Errors
    /// A [`ContentError`] when `text` is not one JSON object (it converts
    /// into [`Error::Content`]).
    ///
    /// # Example
    /// ```
    /// use askgate_core::{Ask, Form, Outcome, Revision, Step};
    /// let form: Form = serde_json::from_str(r#"{
    ///   "message": "How many replicas?",
    ///   "fields": [{"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 5}]
    /// }"#)?;
    /// let ask = Ask::new(form)?;
    /// let step = ask.settle_text(Revision::V2025_11_25, r#"{"replicas": 3}"#)?;
    /// let Step::Settled(Outcome::Accepted { values }) = step else { panic!("3 is within 1..=5") };
    /// assert_eq!(values.get("replicas").map(|s| s.value.to_json()), Some(3.into()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn settle_text(&self, revision: Revision, text: &str) -> Result<Step, ContentError> {
        // As in `settle`: the revision only says what was asked.
        let _ = revision;
        let routed = Routed::read(&self.shape.routes, text)?;
        Ok(self.settle_routed(
            &routed.borrowed(),
            routed.unknown.iter().map(String::as_str),
        ))
    }

    /// Settle an accepted answer whose properties are already routed to
    /// their slots (see [`Routes`]); `unknown` are the names no field owns,
    /// in content order.
    ///
    /// The values are built in form order as the fields are checked, ready
    /// to be the outcome; only a re-ask turns them back into slots.
    fn settle_routed<'c>(
        &self,
        slots: &[Option<&'c Json>],
        unknown: impl IntoIterator<Item = &'c str>,
    ) -> Step {
        let fields = &self.shape.fields;
        let mut values = Vec::with_capacity(fields.len());
        let mut left_empty = Vec::new();
        let mut problems = Vec::new();
        for (index, field) in fields.iter().enumerate() {
            match &self.settled[index] {
                Slot::Open => {}
                Slot::Settled(value, source) => {
                    values.push(Settled {
                        id: Arc::clone(&field.key),
                        value: value.clone(),
                        source: *source,
                    });
                    continue;
                }
                Slot::LeftEmpty => continue,
            }
            let result = self.read_open(index, field, slots);
            match result {
                Ok(Some((value, source))) => values.push(Settled {
                    id: Arc::clone(&field.key),
                    value,
                    source,
                }),
                Ok(None) => left_empty.push(index),
                Err(kind) => problems.push(field.problem(kind)),
            }
        }
        // A property no field owns refuses the whole answer: it is often a
        // misnamed field ({"confrim": false}), whose real field would
        // otherwise settle on its default. Nothing of this attempt is kept,
        // so the re-ask asks again every field it asked.
        let mut unknown = unknown.into_iter().peekable();
        if unknown.peek().is_some() {
            let expected = self.expected_names();
            for key in unknown {
                problems.push(Problem {
                    field: key.to_owned(),
                    title: String::new(),
                    kind: ProblemKind::UnknownProperty {
                        expected: expected.clone(),
                    },
                });
            }
            values.retain(|settled| {
                let index = fields.iter().position(|f| Arc::ptr_eq(&f.key, &settled.id));
                index.is_some_and(|i| self.settled[i] != Slot::Open)
            });
            left_empty.clear();
        }
        let values = Values(values);
        if problems.is_empty() {
            return Step::Settled(Outcome::Accepted { values });
        }
        if self.attempt >= self.max_attempts {
            return Step::Settled(Outcome::GaveUp {
                attempts: self.attempt,
                values,
                problems,
            });
        }
        Step::ReAsk(Box::new(Ask {
            shape: Arc::clone(&self.shape),
            settled: self.slots_after(values, &left_empty),
            attempt: self.attempt + 1,
            max_attempts: self.max_attempts,
            reasons: problems.iter().map(Problem::message).collect(),
            problems,
        }))
    }

    /// Read an open field's answer from the routed properties: its value
    /// and where it came from, `None` when it is left empty, or why it
    /// does not pass.
    fn read_open(
        &self,
        index: usize,
        field: &CheckedField,
        slots: &[Option<&Json>],
    ) -> Result<Option<(Value, Provenance)>, ProblemKind> {
        let props = self
            .shape
            .routes
            .props(index, &self.shape.names[index], slots);
        match wire::gather(field, props) {
            Gathered::Absent => match (&field.default, field.decl.required) {
                (Some(default), _) => Ok(Some((default.clone(), Provenance::Defaulted))),
                (None, true) => Err(ProblemKind::Missing),
                (None, false) => Ok(None),
            },
            Gathered::Given(json) => field
                .check(&json)
                .and_then(|value| required_pick(field, value))
                .map(|value| Some((value, Provenance::Answered))),
            Gathered::Range(from, to) => field
                .check_range(from, to)
                .map(|value| Some((value, Provenance::Answered))),
            Gathered::Wrong(kind) => Err(kind),
        }
    }

    /// Where each field stands after an attempt: settled with its value in
    /// `values` (in form order), left empty before or in this attempt
    /// (`left_empty`, by index), or still open.
    fn slots_after(&self, values: Values, left_empty: &[usize]) -> Vec<Slot> {
        let mut values = values.0.into_iter().peekable();
        self.shape
            .fields
            .iter()
            .enumerate()
            .map(|(index, field)| {
                if let Some(settled) = values.next_if(|s| Arc::ptr_eq(&s.id, &field.key)) {
                    Slot::Settled(settled.value, settled.source)
                } else if self.settled[index] == Slot::LeftEmpty || left_empty.contains(&index) {
                    Slot::LeftEmpty
                } else {
                    Slot::Open
                }
            })
            .collect()
    }

    /// The `content` a client of `revision` would send to answer the open
    /// fields with `values` (each in its field's JSON shape). The inverse of
    /// settling, for clients that answer asks (the terminal, tests).
    pub fn content_for(&self, revision: Revision, values: &Map<String, Json>) -> Map<String, Json> {
        let mut content = Map::new();
        for (field, names) in self.open() {
            if let Some(value) = values.get(field.id()) {
                wire::encode(field, names, value, revision, &mut content);
            }
        }
        content
    }

    /// The checked fields, in form order.
    pub(crate) fn checked_fields(&self) -> &[CheckedField] {
        &self.shape.fields
    }

    /// The property names this attempt asks for, in form order: each open
    /// field's own (a range's two ends), and its free entry.
    fn expected_names(&self) -> Vec<String> {
        let mut expected = Vec::new();
        for (_, names) in self.open() {
            match &names.ends {
                Some((from, to)) => expected.extend([from.clone(), to.clone()]),
                None => expected.push(names.main.clone()),
            }
            expected.extend(names.other.clone());
        }
        expected
    }

    fn open(&self) -> impl Iterator<Item = (&CheckedField, &Names)> {
        self.shape
            .fields
            .iter()
            .zip(&self.shape.names)
            .zip(&self.settled)
            .filter(|(_, slot)| **slot == Slot::Open)
            .map(|(pair, _)| pair)
    }
}

/// The result of settling one response: an outcome, or the next ask.
#[derive(Debug, Clone)]
#[must_use = "a re-ask must be sent to the person, an outcome acted on"]
pub enum Step {
    /// The ask is over.
    Settled(Outcome),
    /// Some answers were refused: ask again, only what is still open or wrong.
    ReAsk(Box<Ask>),
}

/// The checked form: fixed for the life of an ask.
#[derive(Debug)]
struct Shape {
    form: Form,
    fields: Vec<CheckedField>,
    names: Vec<Names>,
    /// Which field each property name belongs to.
    routes: Routes,
}

/// Where one field stands.
#[derive(Debug, Clone, PartialEq)]
enum Slot {
    /// Still to be asked.
    Open,
    /// Has a value.
    Settled(Value, Provenance),
    /// An optional field the person left empty: settled, with no value.
    LeftEmpty,
}

/// Where the field `id` stands in `fields`; a value given for no field is
/// [`FormError::UnknownSupplied`].
fn field_index(fields: &[CheckedField], id: &str) -> Result<usize, FormError> {
    fields
        .iter()
        .position(|f| f.id() == id)
        .ok_or_else(|| FormError::UnknownSupplied { id: id.to_owned() })
}

/// A value given before asking (supplied, or recorded in an earlier
/// attempt) for the field `id`: where that field stands, and the value
/// checked by it ([`FormError::BadSupplied`] when it does not pass).
fn check_given(
    fields: &[CheckedField],
    id: &str,
    json: &Json,
) -> Result<(usize, Value), FormError> {
    let index = field_index(fields, id)?;
    let field = &fields[index];
    let value = field.check(json).map_err(|kind| FormError::BadSupplied {
        field: id.to_owned(),
        problem: Box::new(field.problem(kind)),
    })?;
    Ok((index, value))
}

/// A required multiple choice needs at least one pick.
fn required_pick(field: &CheckedField, value: Value) -> Result<Value, ProblemKind> {
    match &value {
        Value::Choices(values) if field.decl.required && values.is_empty() => {
            Err(ProblemKind::TooFewItems { min: 1 })
        }
        _ => Ok(value),
    }
}
