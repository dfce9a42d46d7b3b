//! Answering from the store: the elicitation is parked as an ask, a person
//! answers it in the inbox (web or `askgate asks answer`), and the client
//! returns that answer to the server.
//!
//! The inbox and the CLI answer forms, so the requested schema is turned
//! into an askgate-core [`Form`] (one field per property, its id the
//! property's name) and parked as a [`StoredRequest`] — what every surface
//! reads and settles. The answer comes back as the stored reply replayed
//! through the form ([`form_outcome`]: checked again, defaults applied),
//! mapped to the server's properties with [`Ask::content_for`].

use std::sync::Arc;
use std::time::Duration;

use askgate_core::{Ask, Form, Outcome, Revision};
use askgate_store::{AskRow, AskStatus, NewAsk, SettleError, Settlement, Store};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{ElicitResult, ElicitationAction};
use serde_json::{Map, Value as Json, json};

use super::AnswerError;
use super::requested::{Elicitation, Format, Kind, Property, Requested};
use crate::clock::{Clock, SystemClock};
use crate::stored::{StoredRequest, form_outcome};

/// Park each form in a store and wait for a person to answer it there,
/// in the inbox or with `askgate asks answer`.
#[derive(Debug, Clone)]
pub struct Parking {
    store: Store,
    timeout: Duration,
    principal: String,
    origin: Option<String>,
    notice: bool,
    clock: Arc<dyn Clock>,
}

impl Parking {
    /// Park asks in `store`; wait up to an hour for each.
    pub fn new(store: Store) -> Parking {
        Parking {
            store,
            timeout: Duration::from_secs(3600),
            principal: "anonymous".to_owned(),
            origin: None,
            notice: true,
            clock: Arc::new(SystemClock),
        }
    }

    /// How long to wait for an answer. Past it the ask is closed in the
    /// store (cancelled, or expired) and the server gets `cancel`; no
    /// default is ever applied for the person.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Parking {
        self.timeout = timeout;
        self
    }

    /// Who the parked asks are for (default `anonymous`).
    #[must_use]
    pub fn for_principal(mut self, principal: impl Into<String>) -> Parking {
        self.principal = principal.into();
        self
    }

    /// Name the asking server this way in the store, instead of the name
    /// it gave at connection.
    #[must_use]
    pub fn with_origin(mut self, origin: impl Into<String>) -> Parking {
        self.origin = Some(origin.into());
        self
    }

    /// Whether to say on stderr which ask is waiting (default: yes). The
    /// line names the ask and the server, never an answer.
    #[must_use]
    pub fn with_notice(mut self, notice: bool) -> Parking {
        self.notice = notice;
        self
    }

    /// Read the time from `clock` (default: [`SystemClock`]): when an ask
    /// is parked, until when it waits, when it is closed unanswered.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Parking {
        self.clock = clock;
        self
    }

    /// The store asks are parked in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Park `elicitation` from `origin`, wait for its answer and return it.
    /// URL mode is declined: the inbox answers forms.
    ///
    /// # Errors
    /// [`AnswerError::Unparkable`] when the form cannot be carried as an
    /// askgate form, [`AnswerError::Store`] when the store fails.
    pub async fn answer(
        &self,
        elicitation: &Elicitation,
        origin: &str,
    ) -> Result<ElicitResult, AnswerError> {
        let Elicitation::Form(requested) = elicitation else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let form = form_of(requested)?;
        let ask = Ask::new(form).map_err(AnswerError::Unparkable)?;
        let id = ask_id()?;
        let origin = self.origin.as_deref().unwrap_or(origin);
        let now = self.clock.now();
        let expires_at =
            now.checked_add(self.timeout)
                .map_err(|_| crate::Misuse::LifetimeOutOfRange {
                    what: "the wait for an answer in the inbox (Parking::with_timeout)",
                    lifetime: self.timeout,
                })?;
        let parked = NewAsk {
            id: id.clone(),
            resume_key: format!("elicitation:{id}"),
            call_key: None,
            principal: self.principal.clone(),
            request: StoredRequest::form(&ask).to_json(),
            server: Some(origin.to_owned()),
            tool: None,
            risk: None,
            created_at: now,
            expires_at: Some(expires_at),
            panel: None,
        };
        self.store.park(&parked).await.map_err(AnswerError::Store)?;
        if self.notice {
            eprintln!(
                "askgate: {origin} asks a person; waiting in the inbox as ask {id} \
                 (answer with `askgate asks answer {id} --content '{{...}}'`)"
            );
        }
        let row = match self
            .store
            .wait_settled(&id, self.timeout)
            .await
            .map_err(AnswerError::Store)?
        {
            Some(row) => Some(row),
            None => self.close(&id).await?,
        };
        match row {
            Some(row) => result_of(&ask, &row),
            None => Ok(ElicitResult::new(ElicitationAction::Cancel)),
        }
    }

    /// Close an ask nobody answered in time: cancel it, or — past its
    /// expiry — expire it; an answer that won the race stands.
    async fn close(&self, id: &str) -> Result<Option<AskRow>, AnswerError> {
        let now = self.clock.now();
        let cancelled = Settlement {
            status: AskStatus::Cancelled,
            reply: json!({"action": "cancel"}),
            outcome: json!({"outcome": "cancelled"}),
            answered_by: None,
            answered_via: "timeout".to_owned(),
        };
        match self.store.settle(id, &cancelled, now).await {
            Ok(row) => return Ok(Some(row)),
            Err(SettleError::Gone { .. }) => {
                self.store
                    .expire_due(now)
                    .await
                    .map_err(AnswerError::Store)?;
            }
            Err(SettleError::Conflict { .. } | SettleError::NotFound { .. }) => {}
            Err(SettleError::Store(e)) => return Err(AnswerError::Store(e)),
            Err(e) => return Err(AnswerError::Store(e.into())),
        }
        self.store.ask(id).await.map_err(AnswerError::Store)
    }
}

/// A fresh ask id: 18 random bytes, URL-safe.
fn ask_id() -> Result<String, AnswerError> {
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes).map_err(AnswerError::Random)?;
    Ok(format!("ask_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// What the server gets for a settled ask: its reply replayed through the
/// form, so only checked values (and defaults) go back.
fn result_of(ask: &Ask, row: &AskRow) -> Result<ElicitResult, AnswerError> {
    if row.status == AskStatus::Pending {
        return Ok(ElicitResult::new(ElicitationAction::Cancel));
    }
    let outcome =
        form_outcome(&row.ask.request, row.reply.as_ref()).map_err(AnswerError::Stored)?;
    Ok(match outcome {
        Some(Outcome::Accepted { values }) => {
            let content = ask.content_for(Revision::V2025_11_25, &values.to_json());
            ElicitResult::new(ElicitationAction::Accept).with_content(Json::Object(content))
        }
        Some(Outcome::Declined) => ElicitResult::new(ElicitationAction::Decline),
        // Cancelled, given up, expired unanswered: nobody accepted.
        _ => ElicitResult::new(ElicitationAction::Cancel),
    })
}

/// The askgate form a requested schema is: one field per property.
///
/// # Errors
/// [`AnswerError::Unparkable`] when a property has no askgate field (the
/// form check in [`Ask::new`] catches the rest: ids, bounds, defaults).
pub(crate) fn form_of(requested: &Requested) -> Result<Form, AnswerError> {
    let fields: Vec<Json> = requested.properties.iter().map(field_of).collect();
    serde_json::from_value(json!({"message": requested.message, "fields": fields}))
        .map_err(AnswerError::NoField)
}

fn field_of(property: &Property) -> Json {
    let mut field = Map::new();
    field.insert("id".into(), json!(property.name));
    field.insert("title".into(), json!(property.label()));
    if let Some(description) = &property.description {
        field.insert("description".into(), json!(description));
    }
    field.insert("required".into(), json!(property.required));
    if let Some(default) = &property.default {
        field.insert("default".into(), default.clone());
    }
    let options = |options: &[super::requested::Choice]| -> Json {
        options
            .iter()
            .map(|o| json!({"value": o.value, "label": o.label}))
            .collect()
    };
    let kind = match &property.kind {
        Kind::Text {
            min_length,
            max_length,
            format,
        } => match format {
            Some(Format::Date) => json!({"type": "date"}),
            Some(Format::DateTime) => json!({"type": "instant"}),
            _ => json!({
                "type": "text",
                "min_length": min_length,
                "max_length": max_length,
                "format": match format {
                    Some(Format::Email) => json!("email"),
                    Some(Format::Uri) => json!("uri"),
                    _ => Json::Null,
                },
            }),
        },
        Kind::Number { minimum, maximum } => {
            json!({"type": "number", "minimum": minimum, "maximum": maximum})
        }
        Kind::Integer { minimum, maximum } => json!({
            "type": "integer",
            "minimum": minimum.map(|m| m.ceil() as i64),
            "maximum": maximum.map(|m| m.floor() as i64),
        }),
        Kind::Boolean => json!({"type": "boolean"}),
        Kind::Choice { options: choices } => json!({"type": "choice", "options": options(choices)}),
        Kind::Choices {
            options: choices,
            min_items,
            max_items,
        } => json!({
            "type": "choice",
            "multiple": true,
            "options": options(choices),
            "min_items": min_items,
            "max_items": max_items,
        }),
    };
    if let Json::Object(kind) = kind {
        // Absent constraints are left out, not written as null.
        field.extend(kind.into_iter().filter(|(_, v)| !v.is_null()));
    }
    Json::Object(field)
}
