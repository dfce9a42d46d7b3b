//! `[listen.oauth]` beyond JWTs: an opaque token taken as the issuer's
//! introspection endpoint says (active, for askgate, in its time), each
//! token asked about once while its answer is kept; and a scope that names
//! the principal a token acts as.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use askgate_testkit::gateway::Listening;
use askgate_testkit::issuer::{self, ISSUER_KEY};
use axum::http::{HeaderMap, StatusCode as Status};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::StatusCode;
use serde_json::json;

use super::oauth::{METADATA, RESOURCE, SCOPE, challenge, initialize, principals_asked, token};

/// An issuer whose introspection endpoint knows three opaque tokens, and
/// counts the questions it was asked.
async fn introspecting_issuer(asked: Arc<AtomicUsize>) -> String {
    issuer::serve(move |_| {
        axum::Router::new().route(
            "/introspect",
            axum::routing::post(move |headers: HeaderMap, body: String| async move {
                asked.fetch_add(1, Ordering::SeqCst);
                let basic = format!("Basic {}", STANDARD.encode("askgate-rs:introspect-secret"));
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(basic.as_str()) {
                    return (Status::UNAUTHORIZED, axum::Json(json!({"error": "invalid_client"})));
                }
                let token = url::form_urlencoded::parse(body.as_bytes())
                    .find(|(k, _)| k == "token")
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_default();
                let exp = jiff::Timestamp::now().as_second() + 300;
                let answer = match token.as_str() {
                    "opaque-good-0123456789" => json!({"active": true, "aud": RESOURCE,
                        "client_id": "ci-agent", "scope": SCOPE, "exp": exp}),
                    "opaque-other-0123456789" => json!({"active": true,
                        "aud": "https://other.example/mcp", "client_id": "ci-agent", "scope": SCOPE}),
                    _ => json!({"active": false}),
                };
                (Status::OK, axum::Json(answer))
            }),
        )
    })
    .await
}

/// A gateway trusting `issuer`, with `more` in its `[listen.oauth]`.
async fn gateway(issuer: &str, more: &str) -> Listening {
    super::setup(&format!(
        "[listen]\naddr = \"127.0.0.1:0\"\n\n[listen.oauth]\nissuer = {issuer:?}\n\
         resource = {RESOURCE:?}\nscopes = [{SCOPE:?}]\n{more}"
    ))
    .listen()
    .await
}

#[tokio::test]
async fn an_opaque_token_is_taken_as_the_issuer_says_and_asked_about_once_while_kept() {
    let asked = Arc::new(AtomicUsize::new(0));
    let issuer = introspecting_issuer(Arc::clone(&asked)).await;
    let client = "[listen.oauth.introspection]\nclient_id = \"askgate-rs\"\n\
                  client_secret = \"introspect-secret\"\n";
    let h = gateway(&issuer, client).await;
    for _ in 0..3 {
        let taken = initialize(&h.url, Some("opaque-good-0123456789")).await;
        assert_eq!(taken.status(), StatusCode::OK);
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1, "kept for a minute");
    for refused in ["opaque-revoked-0123456789", "opaque-other-0123456789"] {
        let response = initialize(&h.url, Some(refused)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{refused}");
        assert_eq!(
            challenge(&response),
            format!("Bearer error=\"invalid_token\", {METADATA}")
        );
    }
    let log = h.log().all().join("\n");
    assert!(
        !log.contains("opaque-good"),
        "a token never reaches the log"
    );
    assert!(
        !log.contains("introspect-secret"),
        "nor the client's secret"
    );
    // With a wrong secret the issuer refuses askgate: so is the token.
    let wrong = client.replace("introspect-secret", "another-secret-0123");
    let h = gateway(&issuer, &wrong).await;
    let refused = initialize(&h.url, Some("opaque-good-0123456789")).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_scope_names_the_principal_a_token_acts_as_and_two_such_scopes_are_refused() {
    let issuer = issuer::serve(|_| axum::Router::new()).await;
    let mapping = "scope_principals = { \"askgate:deploy\" = \"deploy-bot\", \
                   \"askgate:audit\" = \"auditor\" }\n";
    let h = gateway(&issuer, mapping).await;
    let deploy = token(
        ISSUER_KEY,
        "issuer-1",
        &issuer,
        json!({"scope": format!("{SCOPE} askgate:deploy")}),
    );
    assert_eq!(
        principals_asked(&h, &deploy).await,
        ["deploy-bot"],
        "not the token's client_id"
    );
    let both = token(
        ISSUER_KEY,
        "issuer-1",
        &issuer,
        json!({"scope": format!("{SCOPE} askgate:deploy askgate:audit")}),
    );
    let refused = initialize(&h.url, Some(&both)).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
}
