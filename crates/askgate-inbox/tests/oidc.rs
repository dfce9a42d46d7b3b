//! People signing in with an OpenID provider, the inbox's router called in
//! process against a provider served here (its metadata, keys and token
//! endpoint; its id tokens signed with a test key): the authorization
//! request askgate sends, the code traded with the PKCE verifier and the
//! client's secret, the id token checked (nonce, audience, expiry,
//! signature), and a sign-in taken back once, by the browser that started
//! it.

use std::sync::{Arc, Mutex};

use askgate_core::LinkSigner;
use askgate_inbox::{Inbox, OidcSettings, People};
use askgate_testkit::TempStore;
use askgate_testkit::issuer::{self, ISSUER_KEY, STRANGER_KEY};
use askgate_testkit::page::set_cookie;
use axum::body::Body;
use axum::http::header::{AUTHORIZATION, COOKIE, LOCATION, REFRESH};
use axum::http::{HeaderMap, Request, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

const BASE: &str = "http://127.0.0.1:7878";
const CLIENT: &str = "askgate";
const SECRET: &str = "client-secret-0123456789";

/// What the provider's token endpoint answers with: the id token the test
/// made for this sign-in, once the verifier matches its challenge.
#[derive(Default)]
struct Script {
    challenge: String,
    id_token: String,
}

struct Provider {
    url: String,
    script: Arc<Mutex<Script>>,
}

/// A provider whose token endpoint checks the client's secret and the PKCE
/// verifier, then gives the scripted id token.
async fn provider() -> Provider {
    let script = Arc::new(Mutex::new(Script::default()));
    let shared = Arc::clone(&script);
    let url = issuer::serve(move |_| {
        axum::Router::new().route(
            "/token",
            axum::routing::post(move |headers: HeaderMap, body: String| async move {
                let form: Vec<(String, String)> = url::form_urlencoded::parse(body.as_bytes())
                    .into_owned()
                    .collect();
                let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
                let basic = format!("Basic {}", STANDARD.encode(format!("{CLIENT}:{SECRET}")));
                let authorized = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) == Some(basic.as_str());
                let script = shared.lock().expect("the script");
                let verified = field("code_verifier")
                    .is_some_and(|v| URL_SAFE_NO_PAD.encode(Sha256::digest(v.as_bytes())) == script.challenge);
                let right = authorized
                    && verified
                    && field("grant_type").as_deref() == Some("authorization_code")
                    && field("code").as_deref() == Some("code-1")
                    && field("redirect_uri").as_deref() == Some(&format!("{BASE}/login/oidc/callback"));
                if right {
                    (StatusCode::OK, axum::Json(json!({"access_token": "at", "token_type": "Bearer", "id_token": script.id_token})))
                } else {
                    (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "invalid_grant"})))
                }
            }),
        )
    })
    .await;
    Provider { url, script }
}

fn inbox(store: &TempStore, issuer: &str) -> Inbox {
    Inbox::new(
        store.store().clone(),
        People::default(),
        LinkSigner::new(b"a link key of 32 bytes, for tests"),
        &format!("{BASE}/"),
    )
    .expect("an inbox")
    .with_oidc(OidcSettings {
        issuer: issuer.to_owned(),
        client_id: CLIENT.to_owned(),
        client_secret: SECRET.to_owned(),
        scopes: vec!["profile".into()],
        name_claim: "preferred_username".into(),
        groups_claim: "groups".into(),
        groups: vec!["sre".into()],
        answers_for: vec!["*".into()],
    })
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn get(inbox: &Inbox, path: &str, cookie: Option<&str>) -> Reply {
    let mut request = Request::get(path);
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    let response = inbox
        .router()
        .oneshot(request.body(Body::empty()).expect("a request"))
        .await
        .expect("the router answers");
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("a body");
    Reply {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// A sign-in started: where askgate sent the browser, and the state cookie.
struct Started {
    authorize: url::Url,
    cookie: String,
}

impl Started {
    fn param(&self, name: &str) -> String {
        self.authorize
            .query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    }

    fn callback(&self) -> String {
        format!(
            "/login/oidc/callback?code=code-1&state={}",
            self.param("state")
        )
    }
}

async fn start(inbox: &Inbox) -> Started {
    let sent = get(inbox, "/login/oidc?next=/asks/a-1", None).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.body);
    let location = sent
        .headers
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .expect("a location");
    Started {
        authorize: url::Url::parse(location).expect("a URL"),
        cookie: set_cookie(&sent.headers, "askgate_oidc").expect("the state cookie"),
    }
}

/// The provider scripted to give, for `started`, an id token of `claims`
/// over a good base, signed with `key`.
fn script(provider: &Provider, started: &Started, key: &str, claims: Json) {
    let now = jiff::Timestamp::now().as_second();
    let mut all = json!({
        "iss": provider.url, "aud": CLIENT, "sub": "u-7", "nonce": started.param("nonce"),
        "iat": now, "exp": now + 300, "preferred_username": "kim", "groups": ["sre", "payroll"],
    });
    if let (Json::Object(all), Json::Object(claims)) = (&mut all, claims) {
        all.extend(claims);
    }
    let mut script = provider.script.lock().expect("the script");
    script.challenge = started.param("code_challenge");
    script.id_token = issuer::signed(key, "issuer-1", &all);
}

#[tokio::test]
async fn a_person_signs_in_through_the_provider_with_pkce_and_lands_where_they_were_going() {
    let (store, provider) = (TempStore::open().await, provider().await);
    let inbox = inbox(&store, &provider.url);
    let login = get(&inbox, "/login", None).await;
    assert!(login.body.contains("/login/oidc?next="), "{}", login.body);
    let started = start(&inbox).await;
    assert_eq!(
        started.authorize.as_str().split('?').next(),
        Some(format!("{}/authorize", provider.url).as_str())
    );
    assert_eq!(started.param("response_type"), "code");
    assert_eq!(started.param("client_id"), CLIENT);
    assert_eq!(
        started.param("redirect_uri"),
        format!("{BASE}/login/oidc/callback")
    );
    assert_eq!(started.param("scope"), "openid profile");
    assert_eq!(started.param("code_challenge_method"), "S256");
    assert_eq!(started.param("code_challenge").len(), 43);
    assert!(started.param("nonce").len() >= 32 && started.param("state").len() >= 32);
    script(&provider, &started, ISSUER_KEY, json!({}));
    let back = get(&inbox, &started.callback(), Some(&started.cookie)).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.body);
    assert_eq!(
        back.headers.get(REFRESH).and_then(|v| v.to_str().ok()),
        Some("0;url=/asks/a-1")
    );
    let session = set_cookie(&back.headers, "askgate_session").expect("a session");
    let list = get(&inbox, "/", Some(&session)).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(list.body.contains("<strong>kim</strong>"), "{}", list.body);
}

#[tokio::test]
async fn an_id_token_not_meant_for_this_sign_in_signs_nobody_in() {
    let (store, provider) = (TempStore::open().await, provider().await);
    let inbox = inbox(&store, &provider.url);
    let an_hour_ago = jiff::Timestamp::now().as_second() - 3600;
    let cases = [
        (
            "another sign-in's nonce",
            ISSUER_KEY,
            json!({"nonce": "not-this-one"}),
        ),
        (
            "another client's",
            ISSUER_KEY,
            json!({"aud": "another-client"}),
        ),
        ("expired", ISSUER_KEY, json!({"exp": an_hour_ago})),
        ("signed by a stranger", STRANGER_KEY, json!({})),
        (
            "another issuer's",
            ISSUER_KEY,
            json!({"iss": "http://evil.example"}),
        ),
    ];
    for (what, key, claims) in cases {
        let started = start(&inbox).await;
        script(&provider, &started, key, claims);
        let back = get(&inbox, &started.callback(), Some(&started.cookie)).await;
        assert_eq!(
            back.status,
            StatusCode::BAD_GATEWAY,
            "{what}: {}",
            back.body
        );
        assert!(
            back.body.contains("could not be used"),
            "{what}: {}",
            back.body
        );
        assert!(
            set_cookie(&back.headers, "askgate_session").is_none(),
            "{what}: a session"
        );
    }
}

#[tokio::test]
async fn a_sign_in_comes_back_once_and_only_to_the_browser_that_started_it() {
    let (store, provider) = (TempStore::open().await, provider().await);
    let inbox = inbox(&store, &provider.url);
    let started = start(&inbox).await;
    script(&provider, &started, ISSUER_KEY, json!({}));
    // Another browser (no cookie, or another sign-in's) is refused, and
    // does not spend the sign-in.
    for cookie in [None, Some("askgate_oidc=another-state")] {
        let elsewhere = get(&inbox, &started.callback(), cookie).await;
        assert_eq!(elsewhere.status, StatusCode::FORBIDDEN, "{cookie:?}");
        assert!(elsewhere.body.contains("not started in this browser"));
    }
    let back = get(&inbox, &started.callback(), Some(&started.cookie)).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.body);
    let again = get(&inbox, &started.callback(), Some(&started.cookie)).await;
    assert_eq!(again.status, StatusCode::FORBIDDEN);
    assert!(set_cookie(&again.headers, "askgate_session").is_none());
}

#[tokio::test]
async fn a_wrong_verifier_or_a_provider_that_says_no_signs_nobody_in() {
    let (store, provider) = (TempStore::open().await, provider().await);
    let inbox = inbox(&store, &provider.url);
    let started = start(&inbox).await;
    script(&provider, &started, ISSUER_KEY, json!({}));
    // The provider expects another challenge: askgate's verifier is not it.
    provider.script.lock().expect("the script").challenge = "another-challenge".into();
    let back = get(&inbox, &started.callback(), Some(&started.cookie)).await;
    assert_eq!(back.status, StatusCode::BAD_GATEWAY, "{}", back.body);
    let started = start(&inbox).await;
    let path = format!(
        "/login/oidc/callback?error=access_denied&state={}",
        started.param("state")
    );
    let denied = get(&inbox, &path, Some(&started.cookie)).await;
    assert_eq!(denied.status, StatusCode::UNAUTHORIZED);
    assert!(
        denied.body.contains("did not sign you in (access_denied)"),
        "{}",
        denied.body
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_said_on_the_sign_in_page() {
    let store = TempStore::open().await;
    // A port nothing listens on.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!(
        "http://127.0.0.1:{}",
        closed.local_addr().expect("bound").port()
    );
    drop(closed);
    let inbox = inbox(&store, &url);
    let sent = get(&inbox, "/login/oidc", None).await;
    assert_eq!(sent.status, StatusCode::BAD_GATEWAY);
    assert!(sent.body.contains("could not be reached"), "{}", sent.body);
    // Without [inbox.oidc] the page offers tokens only.
    let plain = Inbox::new(
        store.store().clone(),
        People::default(),
        LinkSigner::new(b"a link key of 32 bytes, for tests"),
        &format!("{BASE}/"),
    )
    .expect("an inbox");
    assert!(
        !get(&plain, "/login", None)
            .await
            .body
            .contains("/login/oidc")
    );
    assert_eq!(
        get(&plain, "/login/oidc", None).await.status,
        StatusCode::NOT_FOUND
    );
}
