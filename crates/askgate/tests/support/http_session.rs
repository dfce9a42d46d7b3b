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

impl HttpSession {
    /// POST `message` and read its answer to the end, as a client that
    /// takes requests on it would: each request the gateway sends on the
    /// answer's event stream is answered with `answer(request)` (a
    /// result). The requests, and the other messages (the answer last).
    #[allow(dead_code)] // Not every test binary answers requests.
    pub(crate) async fn converse(
        &self,
        message: &Json,
        answer: impl Fn(&Json) -> Json,
    ) -> (Vec<Json>, Vec<Json>) {
        let mut response = self.post(message).await;
        assert!(response.status().is_success(), "{}", response.status());
        let (mut requests, mut messages) = (Vec::new(), Vec::new());
        let mut read = String::new();
        while let Some(chunk) = askgate_testkit::within("the answer's next part", response.chunk())
            .await
            .expect("reads")
        {
            read.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = read.find("\n\n") {
                let event: String = read.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                let Ok(sent) = serde_json::from_str::<Json>(&data) else {
                    continue;
                };
                if sent.get("method").is_some() && sent.get("id").is_some() {
                    let reply =
                        json!({"jsonrpc": "2.0", "id": sent["id"], "result": answer(&sent)});
                    let taken = self.post(&reply).await;
                    assert!(taken.status().is_success(), "{}", taken.status());
                    requests.push(sent);
                } else {
                    messages.push(sent);
                }
            }
        }
        if messages.is_empty()
            && let Ok(whole) = serde_json::from_str::<Json>(read.trim())
        {
            // Answered as one JSON body.
            messages.push(whole);
        }
        (requests, messages)
    }
}

/// The JSON-RPC message in an answer over Streamable HTTP.
pub(crate) async fn message_of(response: reqwest::Response) -> Json {
    askgate_testkit::mcp::message_in(&response.text().await.expect("text"))
}
