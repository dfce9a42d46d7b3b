//! A client of `askgate gateway --listen` that speaks Streamable HTTP by
//! hand, one POST at a time: for what an SDK client would not send (a
//! misfit request, a second handshake) or would not show (the raw answer).

use serde_json::{Value as Json, json};

/// One MCP session over Streamable HTTP, its handshake done.
pub(crate) struct HttpSession {
    http: reqwest::Client,
    url: String,
    token: String,
    /// The session's id (`mcp-session-id`).
    pub(crate) id: String,
    /// The revision negotiated, sent as `mcp-protocol-version`.
    pub(crate) version: String,
    /// The handshake's answer.
    pub(crate) initialized: Json,
}

impl HttpSession {
    /// Open a session at `url` with the bearer `token`: `initialize` in
    /// `version`, declaring `capabilities`, then `notifications/initialized`.
    pub(crate) async fn open(
        url: &str,
        token: &str,
        version: &str,
        capabilities: Json,
    ) -> HttpSession {
        let mut session = HttpSession {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            token: token.to_owned(),
            id: String::new(),
            version: version.to_owned(),
            initialized: Json::Null,
        };
        let opened = session
            .post_raw(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": version, "capabilities": capabilities,
                    "clientInfo": {"name": "raw", "version": "1"}}}),
                None,
            )
            .await;
        session.id = opened
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session id")
            .to_owned();
        session.initialized = message_of(opened).await;
        let initialized = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert!(
            initialized.status().is_success(),
            "{}",
            initialized.status()
        );
        session
    }

    /// POST `message` on the session, under its revision.
    pub(crate) async fn post(&self, message: &Json) -> reqwest::Response {
        self.post_raw(message, Some(&self.version)).await
    }

    /// POST `message` on the session under the revision `version` (none:
    /// no session headers at all).
    pub(crate) async fn post_raw(
        &self,
        message: &Json,
        version: Option<&str>,
    ) -> reqwest::Response {
        self.post_with(message, version, &[]).await
    }

    /// POST `message` as [`HttpSession::post_raw`] does, with `headers`
    /// added.
    pub(crate) async fn post_with(
        &self,
        message: &Json,
        version: Option<&str>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .bearer_auth(&self.token)
            .json(message);
        if let Some(version) = version {
            request = request
                .header("mcp-session-id", &self.id)
                .header("mcp-protocol-version", version);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("the gateway answers")
    }

    /// Close the session: DELETE with its id.
    #[allow(dead_code)] // Not every test binary closes one.
    pub(crate) async fn close(&self) -> reqwest::Response {
        self.http
            .delete(&self.url)
            .bearer_auth(&self.token)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version)
            .send()
            .await
            .expect("the gateway answers")
    }

    /// POST `message` and read the JSON-RPC message of its answer.
    pub(crate) async fn ask(&self, message: &Json) -> Json {
        message_of(self.post(message).await).await
    }
}

/// The JSON-RPC message in an answer over Streamable HTTP.
pub(crate) async fn message_of(response: reqwest::Response) -> Json {
    askgate_testkit::mcp::message_in(&response.text().await.expect("text"))
}
