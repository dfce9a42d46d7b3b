//! MCP authorization on `--listen`: askgate as an OAuth 2.1 resource
//! server (the MCP authorization spec for Streamable HTTP).
//!
//! - Its Protected Resource Metadata (RFC 9728) is served at
//!   `/.well-known/oauth-protected-resource` (and, for a resource with a
//!   path, with that path appended): the resource, its authorization
//!   server, the scopes it needs.
//! - A request without a usable token is answered 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="..."`, so that a client
//!   finds where to get one; a bad token adds `error="invalid_token"`; a
//!   token without the scopes askgate needs is answered 403
//!   `error="insufficient_scope"` with the scopes.
//! - An access token is a JWT signed by one of the issuer's keys (its
//!   JWKS, found through the issuer's metadata unless `jwks_url` names it,
//!   fetched again for a key it does not know yet): its signature, issuer,
//!   audience (askgate's resource URL, so a token minted for another
//!   service is refused), expiry and not-before are checked. Symmetric
//!   algorithms are refused: the key would be a shared secret.
//! - The principal is the token's `client_id` (RFC 9068), else its `sub`
//!   (`principal_claim` names another); tokens are never passed upstream.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value as Json, json};
use tokio::sync::RwLock;

use crate::config::OAuth as Settings;

/// How long a fetched key set is used before it is fetched again.
const KEYS_FRESH: Duration = Duration::from_secs(10 * 60);

/// How soon a token with an unknown key makes askgate fetch the keys
/// again: a stream of forged key ids does not become a stream of fetches.
const REFETCH_AFTER: Duration = Duration::from_secs(30);

/// How far a token's times may be off askgate's clock (issuers and
/// resource servers keep time by NTP; a token is short-lived).
const LEEWAY_SECS: u64 = 10;

/// The resource server: its settings, and the issuer's keys as last
/// fetched.
pub(super) struct ResourceServer {
    settings: Settings,
    http: reqwest::Client,
    keys: RwLock<Option<Fetched>>,
}

/// The issuer's keys, and when they were fetched.
struct Fetched {
    keys: JwkSet,
    at: Instant,
}

/// What a token came to.
pub(super) enum Checked {
    /// Valid, with the scopes askgate needs: the principal it names.
    Principal(String),
    /// Not a usable token (why, for the log: never the token).
    Invalid(String),
    /// Valid, without a scope askgate needs.
    Insufficient,
}

impl ResourceServer {
    pub(super) fn new(settings: Settings) -> Arc<ResourceServer> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Arc::new(ResourceServer {
            settings,
            http,
            keys: RwLock::new(None),
        })
    }

    /// Check the bearer `token`.
    pub(super) async fn check(&self, token: &str) -> Checked {
        let header = match jsonwebtoken::decode_header(token) {
            Ok(header) => header,
            Err(error) => return Checked::Invalid(format!("not a JWT: {error}")),
        };
        if !asymmetric(header.alg) {
            return Checked::Invalid(format!("{:?} is not an asymmetric algorithm", header.alg));
        }
        let key = match self.key(header.kid.as_deref()).await {
            Ok(key) => key,
            Err(why) => return Checked::Invalid(why),
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = match jsonwebtoken::decode::<Map<String, Json>>(token, &key, &validation) {
            Ok(data) => data.claims,
            Err(error) => return Checked::Invalid(error.to_string()),
        };
        let granted = scopes_of(&claims);
        if !self
            .settings
            .scopes
            .iter()
            .all(|needed| granted.iter().any(|g| g == needed))
        {
            return Checked::Insufficient;
        }
        let named = |claim: &str| claims.get(claim).and_then(Json::as_str).map(str::to_owned);
        let principal = match &self.settings.principal_claim {
            Some(claim) => named(claim),
            None => named("client_id").or_else(|| named("sub")),
        };
        match principal {
            // askgate's own principals ("local", "anonymous") and "*" are
            // no token's: its asks would be theirs.
            Some(name) if ["local", "anonymous", "*"].contains(&name.as_str()) => {
                Checked::Invalid(format!("the token names the reserved principal {name:?}"))
            }
            Some(name) if !name.trim().is_empty() => Checked::Principal(name),
            _ => Checked::Invalid("the token names no principal".into()),
        }
    }

    /// The key `kid` names (the only key, when the token names none).
    async fn key(&self, kid: Option<&str>) -> Result<DecodingKey, String> {
        let found = |set: &JwkSet| match kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        {
            let keys = self.keys.read().await;
            if let Some(fetched) = keys.as_ref()
                && fetched.at.elapsed() < KEYS_FRESH
            {
                if let Some(jwk) = found(&fetched.keys) {
                    return DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string());
                }
                if fetched.at.elapsed() < REFETCH_AFTER {
                    return Err("signed by a key the issuer does not list".into());
                }
            }
        }
        let mut keys = self.keys.write().await;
        let set = self.fetch_keys().await?;
        let jwk = found(&set);
        *keys = Some(Fetched {
            keys: set,
            at: Instant::now(),
        });
        let jwk = jwk.ok_or("signed by a key the issuer does not list")?;
        DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())
    }

    /// The issuer's key set: from `jwks_url`, else from the `jwks_uri` of
    /// its metadata (OAuth 2.0 Authorization Server Metadata, else OpenID
    /// Connect Discovery).
    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let url = match &self.settings.jwks_url {
            Some(url) => url.clone(),
            None => self.discover_jwks_url().await?,
        };
        let set = self.get_json(&url).await?;
        serde_json::from_value(set).map_err(|e| format!("the issuer's key set is not a JWKS: {e}"))
    }

    async fn discover_jwks_url(&self) -> Result<String, String> {
        let issuer = self.settings.issuer.trim_end_matches('/');
        let mut last = String::new();
        for well_known in ["oauth-authorization-server", "openid-configuration"] {
            match self
                .get_json(&format!("{issuer}/.well-known/{well_known}"))
                .await
            {
                Ok(metadata) => {
                    if let Some(url) = metadata.get("jwks_uri").and_then(Json::as_str) {
                        return Ok(url.to_owned());
                    }
                    last = format!("the issuer's {well_known} has no jwks_uri");
                }
                Err(why) => last = why,
            }
        }
        Err(last)
    }

    async fn get_json(&self, url: &str) -> Result<Json, String> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("the issuer could not be reached: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "the issuer answered {} for {url}",
                response.status()
            ));
        }
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("the issuer's answer broke off: {e}"))?;
        serde_json::from_slice(&body).map_err(|e| format!("the issuer's answer is not JSON: {e}"))
    }

    /// The Protected Resource Metadata.
    pub(super) fn metadata(&self) -> Json {
        json!({
            "resource": self.settings.resource,
            "authorization_servers": [self.settings.issuer],
            "scopes_supported": self.settings.scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "askgate",
        })
    }

    /// Where the metadata is served: the well-known path, with the
    /// resource's own path appended (RFC 9728 §3.1).
    pub(super) fn metadata_paths(&self) -> Vec<String> {
        let base = "/.well-known/oauth-protected-resource".to_owned();
        let path = url::Url::parse(&self.settings.resource)
            .map(|url| url.path().trim_end_matches('/').to_owned())
            .unwrap_or_default();
        if path.is_empty() {
            vec![base]
        } else {
            vec![format!("{base}{path}"), base]
        }
    }

    /// The metadata's URL, as the challenge names it.
    fn metadata_url(&self) -> String {
        let first = self.metadata_paths().remove(0);
        match url::Url::parse(&self.settings.resource) {
            Ok(url) => format!("{}{first}", url.origin().ascii_serialization()),
            Err(_) => first,
        }
    }

    /// The answer to a request refused for `why` (401 or 403), with the
    /// challenge that says where to get a token.
    pub(super) fn refuse(&self, checked: Option<&Checked>) -> Response {
        let metadata = format!("resource_metadata=\"{}\"", self.metadata_url());
        let (status, challenge, message) = match checked {
            Some(Checked::Insufficient) => (
                StatusCode::FORBIDDEN,
                format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{}\", {metadata}",
                    self.settings.scopes.join(" ")
                ),
                "askgate: the token lacks a scope this resource needs",
            ),
            Some(_) => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer error=\"invalid_token\", {metadata}"),
                "askgate: the token is not valid for this resource",
            ),
            None => (
                StatusCode::UNAUTHORIZED,
                format!("Bearer {metadata}"),
                "askgate: send Authorization: Bearer <an access token from the authorization server>",
            ),
        };
        let mut response = (status, message).into_response();
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// The scopes a token grants: `scope` (space-separated, RFC 9068) or
/// `scp` (a list, as some issuers write it).
fn scopes_of(claims: &Map<String, Json>) -> Vec<String> {
    match (claims.get("scope"), claims.get("scp")) {
        (Some(Json::String(scope)), _) => scope.split_whitespace().map(str::to_owned).collect(),
        (_, Some(Json::Array(list))) => list
            .iter()
            .filter_map(Json::as_str)
            .map(str::to_owned)
            .collect(),
        (_, Some(Json::String(scp))) => scp.split_whitespace().map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

/// Whether `alg` is signed with a key pair (never a shared secret).
fn asymmetric(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}
