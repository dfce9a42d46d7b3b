//! People signing in with an OpenID provider (`[inbox.oidc]`): the
//! authorization code flow with PKCE (RFC 7636, `S256`), the id token
//! checked (signature by one of the provider's keys, issuer, audience,
//! expiry, and the nonce this sign-in sent), and the person's name and
//! groups read from its claims.
//!
//! - `GET /login/oidc` sends the browser to the provider with a fresh
//!   `state`, `nonce` and PKCE challenge; the `state` is also set in a
//!   cookie of this browser (`SameSite=Lax`: it must come back on the
//!   provider's redirect), so a sign-in started in another browser cannot
//!   be finished in this one (login CSRF).
//! - `GET /login/oidc/callback` takes the sign-in back once (its `state`
//!   is forgotten as it is used, and after ten minutes), trades the code for
//!   tokens with the PKCE verifier and the client's secret, checks the id
//!   token, and starts a session. Only members of a configured group sign
//!   in; the groups of the session are those of them the token names.
//!
//! The id token's claims are never logged; the person's name is, as for
//! a token sign-in.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use maud::html;
use serde::Deserialize;
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::Inbox;
use crate::auth::{self, Person, SESSION_COOKIE};
use crate::issuer::{Issuer, json_of};
use crate::pages;
use crate::signin::safe_next;

/// The cookie that ties a sign-in to the browser that started it.
const STATE_COOKIE: &str = "askgate_oidc";
/// How long a sign-in may take at the provider.
const SIGN_IN_TTL: Duration = Duration::from_secs(10 * 60);
/// The most sign-ins under way at once: a flood of starts does not grow
/// memory without end.
const MOST_UNDER_WAY: usize = 10_000;
/// Where the provider sends the browser back, under the inbox's address.
pub(crate) const CALLBACK: &str = "/login/oidc/callback";

/// `[inbox.oidc]`: the OpenID provider people sign in with.
#[derive(Clone, PartialEq, Eq)]
pub struct OidcSettings {
    /// The provider's issuer identifier (its metadata is found from it).
    pub issuer: String,
    /// askgate's client id at the provider.
    pub client_id: String,
    /// askgate's client secret at the provider. Never logged.
    pub client_secret: String,
    /// The scopes asked for; `openid` is always among them.
    pub scopes: Vec<String>,
    /// The claim that names the person (`preferred_username` unless set).
    pub name_claim: String,
    /// The claim that lists their groups (`groups` unless set).
    pub groups_claim: String,
    /// The groups whose members may sign in; the session's groups are
    /// those of them the id token names. Never empty.
    pub groups: Vec<String>,
    /// The principals whose asks they see (`["*"]`: every one).
    pub answers_for: Vec<String>,
}

impl std::fmt::Debug for OidcSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("scopes", &self.scopes)
            .field("name_claim", &self.name_claim)
            .field("groups_claim", &self.groups_claim)
            .field("groups", &self.groups)
            .field("answers_for", &self.answers_for)
            .finish()
    }
}

/// Sign-in with the provider: its settings, the provider as read, and the
/// sign-ins under way by their `state`.
#[derive(Debug)]
pub(crate) struct SignIn {
    settings: OidcSettings,
    issuer: Issuer,
    under_way: Mutex<HashMap<String, UnderWay>>,
}

/// A sign-in sent to the provider and not back yet.
#[derive(Debug)]
struct UnderWay {
    nonce: String,
    verifier: String,
    next: String,
    started: Instant,
}

impl SignIn {
    pub(crate) fn new(settings: OidcSettings) -> SignIn {
        let issuer = Issuer::new(settings.issuer.clone(), None);
        SignIn {
            settings,
            issuer,
            under_way: Mutex::new(HashMap::new()),
        }
    }

    fn under_way(&self) -> std::sync::MutexGuard<'_, HashMap<String, UnderWay>> {
        self.under_way
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The sign-in under way as `state`, taken: it comes back once.
    fn take(&self, state: &str) -> Option<UnderWay> {
        self.under_way()
            .remove(state)
            .filter(|u| u.started.elapsed() < SIGN_IN_TTL)
    }
}

/// Where to go after signing in.
#[derive(Debug, Deserialize)]
pub(crate) struct Start {
    next: Option<String>,
}

/// `GET /login/oidc`: to the provider, with a fresh state, nonce and PKCE
/// challenge.
pub(crate) async fn start(State(inbox): State<Inbox>, Query(start): Query<Start>) -> Response {
    let next = safe_next(start.next.as_deref());
    let Some(sign_in) = inbox.inner.oidc.get() else {
        return refused(
            &inbox,
            StatusCode::NOT_FOUND,
            &next,
            "This inbox has no OpenID provider configured; sign in with a token.",
        );
    };
    let authorize = match sign_in.issuer.endpoint("authorization_endpoint").await {
        Ok(url) => url,
        Err(why) => {
            tracing::warn!(%why, "inbox: the OpenID provider could not be read");
            return refused(
                &inbox,
                StatusCode::BAD_GATEWAY,
                &next,
                "The sign-in provider could not be reached; try again, or sign in with a token.",
            );
        }
    };
    let (Ok(state), Ok(nonce), Ok(verifier)) = (auth::random(), auth::random(), verifier()) else {
        return refused(
            &inbox,
            StatusCode::INTERNAL_SERVER_ERROR,
            &next,
            "No randomness for a sign-in; try again.",
        );
    };
    let Ok(mut url) = url::Url::parse(&authorize) else {
        return refused(
            &inbox,
            StatusCode::BAD_GATEWAY,
            &next,
            "The sign-in provider's address is not a URL.",
        );
    };
    let settings = &sign_in.settings;
    let mut scopes = vec!["openid"];
    scopes.extend(
        settings
            .scopes
            .iter()
            .map(String::as_str)
            .filter(|s| *s != "openid"),
    );
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &settings.client_id)
        .append_pair("redirect_uri", &redirect_uri(&inbox))
        .append_pair("scope", &scopes.join(" "))
        .append_pair("state", &state)
        .append_pair("nonce", &nonce)
        .append_pair("code_challenge", &challenge(&verifier))
        .append_pair("code_challenge_method", "S256");
    {
        let mut under_way = sign_in.under_way();
        under_way.retain(|_, u| u.started.elapsed() < SIGN_IN_TTL);
        if under_way.len() >= MOST_UNDER_WAY {
            drop(under_way);
            tracing::warn!("inbox: too many sign-ins under way; one more was refused");
            return refused(
                &inbox,
                StatusCode::SERVICE_UNAVAILABLE,
                &next,
                "Too many sign-ins are under way; try again in a few minutes.",
            );
        }
        under_way.insert(
            state.clone(),
            UnderWay {
                nonce,
                verifier,
                next,
                started: Instant::now(),
            },
        );
    }
    let cookie = state_cookie(&state, inbox.inner.secure, SIGN_IN_TTL.as_secs());
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, url.to_string()),
            (header::SET_COOKIE, cookie),
        ],
    )
        .into_response()
}

/// What the provider sends back.
#[derive(Debug, Deserialize)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /login/oidc/callback`: the sign-in taken back once, the code
/// traded, the id token checked, a session started.
pub(crate) async fn callback(
    State(inbox): State<Inbox>,
    headers: HeaderMap,
    Query(back): Query<Callback>,
) -> Response {
    let Some(sign_in) = inbox.inner.oidc.get() else {
        return refused(
            &inbox,
            StatusCode::NOT_FOUND,
            "/",
            "This inbox has no OpenID provider configured; sign in with a token.",
        );
    };
    // Taken once, whatever comes of it.
    let ours = auth::cookie(&headers, STATE_COOKIE);
    let under_way = match (&back.state, &ours) {
        (Some(state), Some(cookie)) if state == cookie => sign_in.take(state),
        _ => None,
    };
    let Some(under_way) = under_way else {
        tracing::warn!("inbox: a sign-in came back that this browser did not start, or too late");
        return refused(
            &inbox,
            StatusCode::FORBIDDEN,
            "/",
            "This sign-in was not started in this browser, was used already, or took longer than ten minutes. Start again.",
        );
    };
    let next = under_way.next.clone();
    if let Some(error) = &back.error {
        tracing::info!(error = %error, "inbox: the OpenID provider did not sign anyone in");
        return refused(
            &inbox,
            StatusCode::UNAUTHORIZED,
            &next,
            &format!("The sign-in provider did not sign you in ({error})."),
        );
    }
    let Some(code) = &back.code else {
        return refused(
            &inbox,
            StatusCode::BAD_REQUEST,
            &next,
            "The sign-in provider sent no code back.",
        );
    };
    let person = match signed_in(&inbox, sign_in, code, &under_way).await {
        Ok(person) => person,
        Err(Refusal {
            status,
            message,
            log,
        }) => {
            tracing::warn!(why = %log, "inbox: an OpenID sign-in was refused");
            return refused(&inbox, status, &next, &message);
        }
    };
    let name = person.name.clone();
    let groups = person.groups.join(", ");
    let Ok(id) = inbox.inner.sessions.start(person, None) else {
        return refused(
            &inbox,
            StatusCode::INTERNAL_SERVER_ERROR,
            &next,
            "No randomness for a session; nobody was signed in. Try again.",
        );
    };
    tracing::info!(person = %name, groups = %groups, "inbox: signed in with the OpenID provider");
    let secure = inbox.inner.secure;
    let session = auth::set_cookie(SESSION_COOKIE, &id, secure, None);
    let clear = state_cookie("", secure, 0);
    // The session cookie is SameSite=Strict, and this answer ends a
    // navigation the provider started: a redirect would still count as
    // that cross-site navigation, and the browser would leave the cookie
    // out. A page of this site that moves on (`Refresh`) is a navigation
    // of its own.
    let page = pages::layout(
        "Signed in",
        None,
        html! {
            h1 { "Signed in" }
            p { "Signed in as " strong { (name) } ". " a href=(next) { "Continue" } }
        },
    );
    (
        AppendHeaders([
            (header::SET_COOKIE, session),
            (header::SET_COOKIE, clear),
            (header::REFRESH, format!("0;url={next}")),
        ]),
        page,
    )
        .into_response()
}

/// Why a sign-in that came back is refused: what the person reads, and
/// what the log says (never a token or a claim's value but the name).
#[derive(Debug)]
struct Refusal {
    status: StatusCode,
    message: String,
    log: String,
}

impl Refusal {
    fn provider(log: String) -> Refusal {
        Refusal {
            status: StatusCode::BAD_GATEWAY,
            message: "The sign-in provider's answer could not be used; try again, or ask the operator to look at the inbox's log.".into(),
            log,
        }
    }
}

/// The person the code signs in: traded for tokens, the id token checked,
/// its claims read.
async fn signed_in(
    inbox: &Inbox,
    sign_in: &SignIn,
    code: &str,
    under_way: &UnderWay,
) -> Result<Person, Refusal> {
    let settings = &sign_in.settings;
    let token_url = sign_in
        .issuer
        .endpoint("token_endpoint")
        .await
        .map_err(Refusal::provider)?;
    let encoded = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", code)
        .append_pair("redirect_uri", &redirect_uri(inbox))
        .append_pair("code_verifier", &under_way.verifier)
        .finish();
    let response = sign_in
        .issuer
        .http()
        .post(token_url)
        // client_secret_basic, its parts form-encoded (RFC 6749 §2.3.1).
        .basic_auth(
            encoded(&settings.client_id),
            Some(encoded(&settings.client_secret)),
        )
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|e| Refusal::provider(format!("the token endpoint could not be reached: {e}")))?;
    let tokens = json_of(response).await.map_err(Refusal::provider)?;
    let id_token = tokens
        .get("id_token")
        .and_then(Json::as_str)
        .ok_or_else(|| Refusal::provider("the token endpoint sent no id_token".into()))?;
    let claims = sign_in
        .issuer
        .verify(id_token, &[&settings.client_id])
        .await
        .map_err(|why| Refusal::provider(format!("the id token was refused: {why}")))?;
    check_claims(settings, &claims, &under_way.nonce, &inbox.inner.people)
}

/// The person `claims` name, when they are this sign-in's (`nonce`) and
/// for askgate alone, and the person may sign in. A subject (`sub`) that
/// a person of the config is known by there signs in as that person,
/// under their name, with the provider's groups besides theirs (`people`,
/// their `oidc_sub`). Otherwise a name someone signs in with a token under
/// is refused: the provider's claim is not that person's proof, and their
/// answers would count as theirs.
fn check_claims(
    settings: &OidcSettings,
    claims: &Map<String, Json>,
    nonce: &str,
    people: &crate::People,
) -> Result<Person, Refusal> {
    if claims.get("nonce").and_then(Json::as_str) != Some(nonce) {
        return Err(Refusal::provider(
            "the id token's nonce is not this sign-in's (a replayed token?)".into(),
        ));
    }
    // Several audiences: it must have been issued to askgate (OIDC Core
    // 3.1.3.7).
    if let Some(Json::Array(audiences)) = claims.get("aud")
        && audiences.len() > 1
        && claims.get("azp").and_then(Json::as_str) != Some(settings.client_id.as_str())
    {
        return Err(Refusal::provider(
            "the id token has several audiences and was not issued to askgate (azp)".into(),
        ));
    }
    let said = groups_of(claims.get(&settings.groups_claim));
    let groups: Vec<String> = settings
        .groups
        .iter()
        .filter(|group| said.contains(group))
        .cloned()
        .collect();
    if let Some(person) = claims
        .get("sub")
        .and_then(Json::as_str)
        .and_then(|sub| people.by_subject(sub))
        && !groups.is_empty()
    {
        // Their name and whose asks they answer; never the operator's
        // rights, which only their token gives.
        return Ok(Person {
            groups,
            operator: false,
            ..person.clone()
        });
    }
    let claim = &settings.name_claim;
    let name = claims
        .get(claim)
        .and_then(Json::as_str)
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| Refusal {
            status: StatusCode::FORBIDDEN,
            message: format!("The sign-in provider did not say who you are (no {claim} claim); ask the operator to set [inbox.oidc] name_claim."),
            log: format!("the id token has no {claim} claim"),
        })?;
    if people.has_name(name) {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "{name:?} is a person of askgate's config, who signs in with their token; the provider does not sign them in."
            ),
            log: format!("the id token names {name:?}, a person of the config"),
        });
    }
    if name == "operator" || name.starts_with("link:") {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            message: format!("{name:?} is a name askgate keeps for itself; it signs nobody in."),
            log: format!("the id token names the reserved person {name:?}"),
        });
    }
    if let Some(why) = askgate_core::approval::name_problem(name) {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "The sign-in provider names you {name:?}, which askgate cannot record on an answer: {why}."
            ),
            log: format!("the id token's name cannot be a person's: {why}"),
        });
    }
    if groups.is_empty() {
        return Err(Refusal {
            status: StatusCode::FORBIDDEN,
            message: format!(
                "{name} is in none of the groups that may sign in here ({}).",
                settings.groups.join(", ")
            ),
            log: format!("{name} is in none of the groups that may sign in"),
        });
    }
    Ok(Person {
        name: name.to_owned(),
        answers_for: settings.answers_for.clone(),
        operator: false,
        groups,
    })
}

/// The groups a claim lists: an array of names, or names separated by
/// spaces.
fn groups_of(claim: Option<&Json>) -> Vec<String> {
    match claim {
        Some(Json::Array(list)) => list
            .iter()
            .filter_map(Json::as_str)
            .map(str::to_owned)
            .collect(),
        Some(Json::String(names)) => names.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Where the provider sends the browser back.
fn redirect_uri(inbox: &Inbox) -> String {
    format!("{}{CALLBACK}", inbox.inner.origin)
}

/// A PKCE code verifier: 32 random bytes, base64url (43 characters).
fn verifier() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The `S256` challenge of `verifier`.
fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The state cookie: `SameSite=Lax`, so that it comes back on the
/// provider's redirect (a top-level navigation from another site), and
/// only to the callback.
fn state_cookie(state: &str, secure: bool, max_age: u64) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{STATE_COOKIE}={state}; Path={CALLBACK}; HttpOnly; SameSite=Lax{secure}; Max-Age={max_age}"
    )
}

/// The sign-in page again, saying why.
fn refused(inbox: &Inbox, status: StatusCode, next: &str, message: &str) -> Response {
    pages::sign_in_form(inbox.sign_in_page(), status, next, Some(message))
}

#[cfg(test)]
mod tests;
