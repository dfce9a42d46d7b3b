//! A person behind an MCP client, answering asks from a script: what the
//! client declares, how the person answers (reading first, at once, not
//! at all, or with an error), and everything the client was shown and
//! told, for the test to read and wait on.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomNotification, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Value as Json, json};

use crate::wait::Seen;

/// How long the person behind a client takes to read an ask: longer than
/// the gateway's least time for a person's answer (250 ms). A person
/// reading, not a wait for news.
pub const READING: Duration = Duration::from_millis(300);

/// How the client behind the test answers its asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Manner {
    /// As a person would: after reading the ask ([`READING`]).
    Person,
    /// At once, as headless clients do (`claude -p`, `codex exec`).
    Headless,
    /// Not at all: the ask stays up until it is withdrawn; then the next
    /// scripted answer comes late (or an error, with none scripted).
    Away,
    /// With an error reply: the client could not show it.
    Failing,
}

/// What runs as an ask arrives, before it is answered (given the ask's
/// params as JSON).
type Hook = Arc<dyn Fn(Json) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// A scripted person behind an MCP client: each elicitation is answered
/// with the next scripted answer (then [`Person::otherwise`]'s, by
/// default a cancel), in its [`Manner`]. Cheap to clone: clones share the
/// script and what was seen.
#[derive(Clone)]
pub struct Person {
    name: String,
    capabilities: Json,
    version: Option<ProtocolVersion>,
    manner: Manner,
    script: Arc<Mutex<VecDeque<ElicitResult>>>,
    otherwise: ElicitResult,
    hook: Option<Hook>,
    /// Every ask shown to the client (its params as JSON), in order.
    pub asked: Seen<Json>,
    /// The custom notifications the client was sent, as `{method, params}`.
    pub told: Seen<Json>,
    /// Once for each ask withdrawn while the client showed it.
    pub withdrawn: Seen<()>,
    /// Once for each progress notification.
    pub progress: Seen<()>,
}

impl std::fmt::Debug for Person {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Person")
            .field("name", &self.name)
            .field("capabilities", &self.capabilities)
            .field("manner", &self.manner)
            .finish_non_exhaustive()
    }
}

impl Person {
    /// A client named `person` declaring `capabilities` (as JSON), who
    /// answers at once ([`Manner::Headless`]) from an empty script.
    pub fn new(capabilities: Json) -> Person {
        Person {
            name: "person".to_owned(),
            capabilities,
            version: None,
            manner: Manner::Headless,
            script: Arc::default(),
            otherwise: ElicitResult::new(ElicitationAction::Cancel),
            hook: None,
            asked: Seen::default(),
            told: Seen::default(),
            withdrawn: Seen::default(),
            progress: Seen::default(),
        }
    }

    /// A client that shows forms (`{"elicitation": {"form": {}}}`).
    pub fn with_forms() -> Person {
        Person::new(json!({"elicitation": {"form": {}}}))
    }

    /// The client's name (servers may judge answers by it).
    #[must_use]
    pub fn named(mut self, name: &str) -> Person {
        name.clone_into(&mut self.name);
        self
    }

    /// The revision the client asks for in its handshake (by default,
    /// rmcp's).
    #[must_use]
    pub fn speaking(mut self, version: ProtocolVersion) -> Person {
        self.version = Some(version);
        self
    }

    /// How the person answers.
    #[must_use]
    pub fn in_manner(mut self, manner: Manner) -> Person {
        self.manner = manner;
        self
    }

    /// The answers, in order.
    #[must_use]
    pub fn answering(self, script: Vec<ElicitResult>) -> Person {
        *self.script.lock().unwrap_or_else(PoisonError::into_inner) = script.into();
        self
    }

    /// The answer once the script is used up (by default a cancel).
    #[must_use]
    pub fn otherwise(mut self, answer: ElicitResult) -> Person {
        self.otherwise = answer;
        self
    }

    /// Run `hook` with each ask's params before answering it (a person who
    /// answers somewhere else first, say).
    #[must_use]
    pub fn before_answering<F, Fut>(mut self, hook: F) -> Person
    where
        F: Fn(Json) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.hook = Some(Arc::new(move |asked| Box::pin(hook(asked))));
        self
    }

    /// The messages of the asks shown so far, in order.
    pub fn messages(&self) -> Vec<String> {
        self.asked
            .all()
            .iter()
            .map(|asked| asked["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// How the person answers.
    pub fn manner(&self) -> Manner {
        self.manner
    }

    /// The next scripted answer, or the default one.
    fn next_answer(&self) -> ElicitResult {
        self.script
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| self.otherwise.clone())
    }
}

impl ClientHandler for Person {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = serde_json::from_value(self.capabilities.clone())
            .expect("the test's capabilities are MCP capabilities");
        let config = ClientConfig::new(capabilities, Implementation::new(&self.name, "1.0"));
        match &self.version {
            Some(version) => config.with_protocol_version(version.clone()),
            None => config,
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let asked = serde_json::to_value(&request).expect("params serialize");
        self.asked.push(asked.clone());
        if let Some(hook) = &self.hook {
            hook(asked).await;
        }
        match self.manner {
            Manner::Person => tokio::time::sleep(READING).await,
            Manner::Headless => {}
            Manner::Away => {
                cx.ct.cancelled().await;
                self.withdrawn.ring();
                let late = self
                    .script
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front();
                return late.ok_or_else(|| ErrorData::internal_error("withdrawn", None));
            }
            Manner::Failing => {
                return Err(ErrorData::internal_error(
                    "the client could not show it",
                    None,
                ));
            }
        }
        Ok(self.next_answer())
    }

    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.progress.ring();
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.told
            .push(json!({"method": notification.method, "params": notification.params}));
    }
}

/// An accept with `content`, as a person who filled in the form.
pub fn accept(content: Json) -> ElicitResult {
    ElicitResult::new(ElicitationAction::Accept).with_content(content)
}

/// A decline.
pub fn decline() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// A cancel (the dialog dismissed).
pub fn cancel() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Cancel)
}
