//! Answering asks as a client: an rmcp [`ClientHandler`] that answers a
//! server's `elicitation/create` — interactively in a [`Terminal`], from
//! the store's inbox ([`Parking`]), or by [`Policy`] — and the multi round-trip
//! retry loop of 2026-07-28 ([`call_tool_answering`]).
//!
//! ```no_run
//! use askgate_mcp::client::{Answerer, AskgateClient, Policy, call_tool_answering};
//! use rmcp::ServiceExt;
//! use rmcp::model::CallToolRequestParams;
//! use rmcp::transport::StreamableHttpClientTransport;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = AskgateClient::new(Answerer::Policy(Policy::accept_defaults()))
//!     .serve(StreamableHttpClientTransport::from_uri("http://127.0.0.1:8001/mcp"))
//!     .await?;
//! let result = call_tool_answering(&client, CallToolRequestParams::new("deploy")).await?;
//! # let _ = result; Ok(())
//! # }
//! ```
//!
//! # Why the schema is read as JSON, not as an askgate form
//! A client answers whatever schema any server sends, under the server's
//! own property names. Those names and shapes need not be askgate form
//! ids (`user.name`, a 2025-06-18 enum with `enumNames`, a `number` with
//! no bounds), and the answer must be keyed exactly by them. So the
//! requested schema is read into a small model of its own ([`Requested`]),
//! which the terminal and the policy prompt and check directly. Only
//! [`Parking`] converts it into an askgate-core `Form`, because that is
//! what the inbox and the CLI answer — and a schema that cannot be a form is
//! refused there with a clear error rather than answered loosely.
//!
//! Answer values are never logged: errors and notices name properties and
//! asks, not what anyone typed. The terminal shows the person their own
//! input, as any prompt does.

mod parking;
mod policy;
mod requested;
mod retry;
mod terminal;

use std::borrow::Cow;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ProtocolVersion, UrlElicitationCapability,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};

pub use parking::Parking;
pub use policy::Policy;
pub use requested::{
    Choice, Elicitation, Format, Kind, Mismatch, Property, Requested, SchemaError,
};
pub use retry::{MAX_ROUNDS, call_tool_answering, get_prompt_answering, read_resource_answering};
pub use terminal::Terminal;

/// How the client answers a server's asks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Answerer {
    /// By policy: accept with defaults, never a person (CI).
    Policy(Policy),
    /// A person at a terminal.
    Terminal(Terminal),
    /// A person through the store's inbox (web or CLI).
    Store(Parking),
}

impl Answerer {
    /// Whether it can answer URL mode (only a person at a terminal can
    /// open a page).
    pub fn answers_url_mode(&self) -> bool {
        matches!(self, Answerer::Terminal(_))
    }

    /// Answer `elicitation` from `origin` (the server's name).
    ///
    /// # Errors
    /// [`AnswerError`] when no answer could be had — never for a person's
    /// decline or cancel, which are answers.
    pub async fn answer(
        &self,
        elicitation: &Elicitation,
        origin: &str,
    ) -> Result<ElicitResult, AnswerError> {
        match self {
            Answerer::Policy(policy) => Ok(policy.answer(elicitation)),
            Answerer::Terminal(terminal) => terminal
                .answer(elicitation, origin)
                .await
                .map_err(AnswerError::Terminal),
            Answerer::Store(parking) => parking.answer(elicitation, origin).await,
        }
    }
}

/// Why an elicitation got no answer. The server receives it as a JSON-RPC
/// error; it never carries an answer value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The requested schema cannot be asked.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The form cannot be parked as an askgate form: askgate-core refuses
    /// it.
    #[error("the form cannot be parked in the inbox: {0}")]
    Unparkable(#[source] askgate_core::Error),
    /// The form cannot be parked as an askgate form: a property has no
    /// askgate field.
    #[error("the form cannot be parked in the inbox: {0}")]
    NoField(#[source] serde_json::Error),
    /// The store failed.
    #[error("the ask store failed: {0}")]
    Store(#[from] askgate_store::Error),
    /// The answer stored for a parked ask cannot be read back.
    #[error("the ask store failed: {0}")]
    Stored(#[from] crate::stored::StoredError),
    /// The system's random source failed: no id for the parked ask.
    #[error("the ask store failed: no random id: {0}")]
    Random(#[source] getrandom::Error),
    /// The terminal could not be read or written.
    #[error("the terminal failed: {0}")]
    Terminal(#[source] std::io::Error),
    /// The answerer was set up in a way that cannot work (a wait out of
    /// range): the client's bug, not the server's.
    #[error(transparent)]
    Misuse(#[from] crate::Misuse),
}

impl From<AnswerError> for ErrorData {
    fn from(error: AnswerError) -> ErrorData {
        match error {
            AnswerError::Schema(_) | AnswerError::Unparkable(_) | AnswerError::NoField(_) => {
                ErrorData::invalid_params(error.to_string(), None)
            }
            _ => ErrorData::internal_error(error.to_string(), None),
        }
    }
}

/// An rmcp client handler that answers elicitations with an [`Answerer`].
///
/// It declares form elicitation, and URL mode when the answerer can open
/// a page. Start it with `serve` (the `initialize` handshake, at
/// [`ProtocolVersion::LATEST_WITH_INITIALIZE`] unless set) or
/// `serve_with_lifecycle` (2026-07-28 discovery); call tools through
/// [`call_tool_answering`] so multi round-trip rounds are answered too.
#[derive(Debug, Clone)]
pub struct AskgateClient {
    answerer: Answerer,
    info: Implementation,
    protocol_version: ProtocolVersion,
}

impl AskgateClient {
    /// A client named `askgate` answering with `answerer`.
    pub fn new(answerer: Answerer) -> AskgateClient {
        AskgateClient {
            answerer,
            info: Implementation::new("askgate", env!("CARGO_PKG_VERSION")),
            protocol_version: ProtocolVersion::LATEST_WITH_INITIALIZE,
        }
    }

    /// Name the client (its `clientInfo`).
    #[must_use]
    pub fn with_name(
        mut self,
        name: impl Into<String>,
        version: impl Into<String>,
    ) -> AskgateClient {
        self.info = Implementation::new(name, version);
        self
    }

    /// The revision offered in `initialize` (not used by discovery, which
    /// takes its own list).
    #[must_use]
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> AskgateClient {
        self.protocol_version = version;
        self
    }

    /// How it answers.
    pub fn answerer(&self) -> &Answerer {
        &self.answerer
    }
}

impl ClientHandler for AskgateClient {
    fn get_info(&self) -> ClientConfig {
        let mut elicitation =
            ElicitationCapability::new().with_form(FormElicitationCapability::new());
        if self.answerer.answers_url_mode() {
            elicitation = elicitation.with_url(UrlElicitationCapability::new());
        }
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(capabilities, self.info.clone())
            .with_protocol_version(self.protocol_version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let elicitation = Elicitation::read(&request).map_err(AnswerError::from)?;
        let origin = origin(&cx);
        Ok(self.answerer.answer(&elicitation, &origin).await?)
    }
}

/// The asking server's name, as it introduced itself.
fn origin(cx: &RequestContext<RoleClient>) -> Cow<'static, str> {
    cx.peer
        .peer_info()
        .and_then(|info| info.server_info.as_ref().map(|s| s.name.clone()))
        .map_or(Cow::Borrowed("the server"), Cow::Owned)
}
