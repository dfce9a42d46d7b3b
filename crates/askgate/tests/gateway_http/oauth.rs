//! MCP authorization on `--listen`: askgate as an OAuth resource server
//! for a local authorization server (its metadata and JWKS served here,
//! its tokens signed with a test key). A client without a token learns
//! where to get one; a token for another audience, an expired one, one
//! signed by a stranger or with a shared secret is refused 401; one
//! without the needed scope 403; a good one names the principal its asks
//! are for. Static tokens still work beside it.

use askgate_testkit::Person;
use askgate_testkit::gateway::Listening;
use askgate_testkit::issuer::{self, ISSUER_KEY, STRANGER_KEY};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::StatusCode;
use serde_json::{Value as Json, json};

use super::{ALICE, connect};

pub(super) const RESOURCE: &str = "http://localhost/mcp";
pub(super) const SCOPE: &str = "askgate:call";
/// A local authorization server: its OpenID metadata and its key set.
async fn authorization_server() -> String {
    issuer::serve(|_| axum::Router::new()).await
}

/// A gateway whose `[listen.oauth]` trusts `issuer`, beside the
/// principals alice and bob.
async fn gateway(issuer: &str) -> Listening {
    super::setup(&format!(
        "[listen]\naddr = \"127.0.0.1:0\"\n\n[listen.oauth]\nissuer = {issuer:?}\n\
         resource = {RESOURCE:?}\nscopes = [{SCOPE:?}]\n"
    ))
    .listen()
    .await
}

/// A token signed with `key` (as `kid`), with `claims` over a good base.
pub(super) fn token(key: &str, kid: &str, issuer: &str, claims: Json) -> String {
    let now = jiff::Timestamp::now().as_second();
    let mut all = json!({
        "iss": issuer, "aud": RESOURCE, "client_id": "ci-agent", "sub": "svc-1",
        "scope": format!("openid {SCOPE}"), "iat": now, "exp": now + 300,
    });
    if let (Json::Object(all), Json::Object(claims)) = (&mut all, claims) {
        all.extend(claims);
    }
    issuer::signed(key, kid, &all)
}

/// `initialize` posted with `token`, if any.
pub(super) async fn initialize(url: &str, token: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "oauth-test", "version": "1"}}}),
        );
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.expect("answers")
}

pub(super) fn challenge(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The principals of the asks pending after a gated call (`write_note`)
/// made with `token`: whose asks its calls are.
pub(super) async fn principals_asked(h: &Listening, token: &str) -> Vec<String> {
    let person = Person::with_forms();
    let client = connect(&h.url, token, &person).await;
    let _ = client
        .call_tool(askgate_testkit::mcp::call(
            "write_note",
            json!({"name": "n", "text": "t"}),
        ))
        .await;
    let store = askgate_store::Store::open(h.store_url())
        .await
        .expect("opens");
    let asks = store.pending(10, None).await.expect("lists").asks;
    asks.into_iter().map(|a| a.ask.principal).collect()
}

pub(super) const METADATA: &str =
    "resource_metadata=\"http://localhost/.well-known/oauth-protected-resource/mcp\"";

#[tokio::test]
async fn a_client_without_a_token_is_told_where_to_get_one() {
    let issuer = authorization_server().await;
    let h = gateway(&issuer).await;
    let refused = initialize(&h.url, None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(challenge(&refused), format!("Bearer {METADATA}"));
    let base = h.url.trim_end_matches("/mcp");
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let metadata: Json = reqwest::get(format!("{base}{path}"))
            .await
            .expect("answers")
            .json()
            .await
            .expect("JSON");
        assert_eq!(metadata["resource"], RESOURCE, "{path}");
        assert_eq!(metadata["authorization_servers"], json!([issuer]));
        assert_eq!(metadata["scopes_supported"], json!([SCOPE]));
    }
}

#[tokio::test]
async fn tokens_that_do_not_fit_are_refused_with_the_right_challenge() {
    let issuer = authorization_server().await;
    let h = gateway(&issuer).await;
    let an_hour_ago = jiff::Timestamp::now().as_second() - 3600;
    let invalid = [
        (
            "expired",
            token(ISSUER_KEY, "issuer-1", &issuer, json!({"exp": an_hour_ago})),
        ),
        (
            "another audience",
            token(
                ISSUER_KEY,
                "issuer-1",
                &issuer,
                json!({"aud": "https://other.example/mcp"}),
            ),
        ),
        (
            "another issuer",
            token(
                ISSUER_KEY,
                "issuer-1",
                &issuer,
                json!({"iss": "https://evil.example"}),
            ),
        ),
        (
            "a stranger's key",
            token(STRANGER_KEY, "issuer-1", &issuer, json!({})),
        ),
        (
            "a key the issuer does not list",
            token(STRANGER_KEY, "stranger-1", &issuer, json!({})),
        ),
        ("a shared secret", {
            let claims = json!({"iss": issuer, "aud": RESOURCE, "client_id": "x", "scope": SCOPE,
                                "exp": jiff::Timestamp::now().as_second() + 300});
            jsonwebtoken::encode(
                &Header::new(Algorithm::HS256),
                &claims,
                &EncodingKey::from_secret(b"guess"),
            )
            .expect("signs")
        }),
        ("not a JWT", "opaque-0123456789".to_owned()),
        // A name that would reorder what a log line or a page shows, or
        // list two approvers, is no agent's.
        (
            "a client named with a bidirectional control",
            token(
                ISSUER_KEY,
                "issuer-1",
                &issuer,
                json!({"client_id": "ci\u{202E}tnega"}),
            ),
        ),
        (
            "a client named with a comma",
            token(
                ISSUER_KEY,
                "issuer-1",
                &issuer,
                json!({"client_id": "ci, cd"}),
            ),
        ),
    ];
    for (what, token) in invalid {
        let refused = initialize(&h.url, Some(&token)).await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{what}");
        assert_eq!(
            challenge(&refused),
            format!("Bearer error=\"invalid_token\", {METADATA}"),
            "{what}"
        );
    }
    let narrow = token(ISSUER_KEY, "issuer-1", &issuer, json!({"scope": "openid"}));
    let refused = initialize(&h.url, Some(&narrow)).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        challenge(&refused),
        format!("Bearer error=\"insufficient_scope\", scope=\"{SCOPE}\", {METADATA}")
    );
    let log = h.log().all().join("\n");
    assert!(!log.contains(&narrow), "a token never reaches the log");
}

#[tokio::test]
async fn a_good_token_names_the_principal_its_asks_are_for_and_static_tokens_still_work() {
    let issuer = authorization_server().await;
    let h = gateway(&issuer).await;
    let good = token(ISSUER_KEY, "issuer-1", &issuer, json!({}));
    let person = Person::with_forms();
    let client = connect(&h.url, &good, &person).await;
    let tools = client.list_all_tools().await.expect("lists tools");
    assert!(tools.iter().any(|t| t.name == "write_note"), "{tools:?}");
    drop(client);
    // An ask of this client's waits for the principal the token names.
    assert_eq!(principals_asked(&h, &good).await, ["oauth:ci-agent"]);
    // A client named like a principal of the config ("alice"), or like
    // askgate's own stdio caller, is neither: the issuer's names are kept
    // apart, so it takes on no one's acts_for and no one's asks.
    let mut asked = principals_asked(
        &h,
        &token(
            ISSUER_KEY,
            "issuer-1",
            &issuer,
            json!({"client_id": "alice"}),
        ),
    )
    .await;
    asked.extend(
        principals_asked(
            &h,
            &token(
                ISSUER_KEY,
                "issuer-1",
                &issuer,
                json!({"client_id": "anonymous"}),
            ),
        )
        .await,
    );
    asked.sort();
    asked.dedup();
    assert_eq!(asked, ["oauth:alice", "oauth:anonymous", "oauth:ci-agent"]);
    let alice = initialize(&h.url, Some(ALICE)).await;
    assert_eq!(alice.status(), StatusCode::OK, "a principal's static token");
}

#[tokio::test]
async fn an_oauth_agent_no_one_said_whom_it_acts_for_has_its_risky_calls_refused_until_told() {
    let issuer = authorization_server().await;
    // Cy runs the OAuth client ci-agent; sre approves every call, and (by
    // default, from high_write) keeps the requester's people out.
    let team = |acts_for: &str| {
        format!(
            "[listen]\naddr = \"127.0.0.1:0\"\n\n[listen.oauth]\nissuer = {issuer:?}\n\
             resource = {RESOURCE:?}\nscopes = [{SCOPE:?}]\n{acts_for}\n\
             [[people]]\nname = \"ana\"\ntoken = \"ana-token-0123456789ab\"\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[people]]\nname = \"cy\"\ntoken = \"cy-token-0123456789abc\"\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[people]]\nname = \"di\"\ntoken = \"di-token-0123456789abc\"\nanswers_for = [\"ci-agent\"]\n\n\
             [[approvals]]\nany_of = [\"sre\"]\n\n\
             [[rules]]\ntool = \"write_note\"\nrisk = \"medium_write\"\n"
        )
    };
    let good = token(ISSUER_KEY, "issuer-1", &issuer, json!({}));
    let person = Person::with_forms()
        .in_manner(askgate_testkit::Manner::Person)
        .otherwise(askgate_testkit::person::accept(json!({"confirm": true})));
    let call = |h: &Listening| {
        let (url, good, person) = (h.url.clone(), good.clone(), person.clone());
        async move {
            let client = connect(&url, &good, &person).await;
            client
                .call_tool(rmcp::model::CallToolRequestParams::new("delete_all_notes"))
                .await
                .expect("a result")
        }
    };
    let unknown = super::setup(&team("")).listen().await;
    let refused = call(&unknown).await;
    let said = format!("{refused:?}");
    assert_eq!(refused.is_error, Some(true), "{said}");
    assert!(
        said.contains("Not run: nobody may approve this call"),
        "{said}"
    );
    assert!(said.contains("[listen.oauth.acts_for]"), "{said}");
    assert!(person.messages().is_empty(), "nobody was asked");
    let store = askgate_store::Store::open(unknown.store_url())
        .await
        .expect("opens");
    assert!(
        store
            .pending(10, None)
            .await
            .expect("lists")
            .asks
            .is_empty()
    );
    // Di answers for "ci-agent", which the client is not: said at start.
    let log = unknown.log().all().join("\n");
    assert!(
        log.contains(r#"config: "di" answers for "ci-agent", which is no [[principals]] entry"#),
        "{log}"
    );
    // Told that ci-agent acts for cy, the call is asked; cy's own client's
    // yes is not cy's approval, so it waits for ana.
    let told = super::setup(&team(
        "\n[listen.oauth.acts_for]\n\"oauth:ci-agent\" = [\"cy\"]\n",
    ))
    .listen()
    .await;
    let waiting = call(&told).await;
    assert_eq!(waiting.is_error, Some(true), "waits for ana: {waiting:?}");
    let store = askgate_store::Store::open(told.store_url())
        .await
        .expect("opens");
    let pending = store.pending(10, None).await.expect("lists").asks;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0].ask.principal, "oauth:ci-agent");
    assert!(
        store
            .answers(&pending[0].ask.id)
            .await
            .expect("reads")
            .is_empty(),
        "the requester's client counted for nobody"
    );
    // A medium write, which Cy may approve: the client is still not asked,
    // since an application's client_id is no one person's; the ask waits
    // for Cy (or Ana) in the inbox.
    let client = connect(&told.url, &good, &person).await;
    let mut params = rmcp::model::CallToolRequestParams::new("write_note");
    params.arguments = json!({"name": "n", "text": "t"}).as_object().cloned();
    let waiting = client.call_tool(params).await.expect("a result");
    assert_eq!(waiting.is_error, Some(true), "waits: {waiting:?}");
    assert!(person.messages().is_empty(), "the client was not asked");
    assert_eq!(store.pending(10, None).await.expect("lists").asks.len(), 2);
}
