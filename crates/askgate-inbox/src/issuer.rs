//! An OpenID provider or OAuth authorization server as askgate reads it:
//! its metadata (RFC 8414, else OpenID Connect Discovery), its signing
//! keys (a JWKS) kept for a while and fetched again for a key not seen
//! yet, and the JWTs it signs checked with them. The inbox reads the id
//! tokens of people signing in with it; the gateway on `--listen` reads
//! the access tokens of agents.
//!
//! JWTs are checked by `jsonwebtoken` (maintained, RustCrypto/aws-lc
//! backed, JWKs read directly): the signature by one of the issuer's keys,
//! the issuer, the audience, expiry and not-before. Symmetric algorithms
//! are refused: their key would be a secret shared with the issuer, and a
//! JWKS publishes keys.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value as Json};
use tokio::sync::RwLock;

/// How long fetched metadata and keys are used before they are fetched
/// again.
const FRESH: Duration = Duration::from_secs(10 * 60);

/// How soon a token with an unknown key makes askgate fetch the keys
/// again: a stream of forged key ids does not become a stream of fetches.
const REFETCH_AFTER: Duration = Duration::from_secs(30);

/// How far a token's times may be off askgate's clock (issuers and
/// askgate keep time by NTP; a token is short-lived).
const LEEWAY_SECS: u64 = 10;

/// An issuer: where it is, and its metadata and keys as last fetched.
pub struct Issuer {
    url: String,
    jwks_url: Option<String>,
    http: reqwest::Client,
    metadata: RwLock<Option<(Json, Instant)>>,
    keys: RwLock<Option<(JwkSet, Instant)>>,
}

impl std::fmt::Debug for Issuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issuer").field("url", &self.url).finish()
    }
}

impl Issuer {
    /// The issuer at `url` (its identifier, as tokens name it), its keys
    /// at `jwks_url` or else where its metadata says.
    pub fn new(url: impl Into<String>, jwks_url: Option<String>) -> Issuer {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Issuer {
            url: url.into(),
            jwks_url,
            http,
            metadata: RwLock::new(None),
            keys: RwLock::new(None),
        }
    }

    /// The issuer's identifier.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The HTTP client askgate reaches the issuer with.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The issuer's metadata: from `/.well-known/oauth-authorization-server`
    /// (RFC 8414), else `/.well-known/openid-configuration`. It must name
    /// this issuer: metadata served for another is refused.
    ///
    /// # Errors
    /// Why it could not be had, for the log.
    pub async fn metadata(&self) -> Result<Json, String> {
        if let Some((metadata, at)) = self.metadata.read().await.as_ref()
            && at.elapsed() < FRESH
        {
            return Ok(metadata.clone());
        }
        let issuer = self.url.trim_end_matches('/');
        let mut last = String::new();
        for well_known in ["oauth-authorization-server", "openid-configuration"] {
            match self
                .get_json(&format!("{issuer}/.well-known/{well_known}"))
                .await
            {
                Ok(metadata) => {
                    let named = metadata.get("issuer").and_then(Json::as_str);
                    if named.is_some_and(|named| named.trim_end_matches('/') != issuer) {
                        return Err(format!(
                            "the issuer's {well_known} names another issuer ({named:?})"
                        ));
                    }
                    *self.metadata.write().await = Some((metadata.clone(), Instant::now()));
                    return Ok(metadata);
                }
                Err(why) => last = why,
            }
        }
        Err(last)
    }

    /// The URL the metadata gives for `endpoint` (`token_endpoint`, ...).
    ///
    /// # Errors
    /// No metadata, or none with that endpoint.
    pub async fn endpoint(&self, endpoint: &str) -> Result<String, String> {
        self.metadata()
            .await?
            .get(endpoint)
            .and_then(Json::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("the issuer's metadata has no {endpoint}"))
    }

    /// The claims of `token`, a JWT this issuer signed for one of
    /// `audience`, checked: signature, issuer, audience, expiry,
    /// not-before.
    ///
    /// # Errors
    /// Why it is not a usable token, for the log (never the token).
    pub async fn verify(
        &self,
        token: &str,
        audience: &[&str],
    ) -> Result<Map<String, Json>, String> {
        let header =
            jsonwebtoken::decode_header(token).map_err(|error| format!("not a JWT: {error}"))?;
        if !asymmetric(header.alg) {
            return Err(format!("{:?} is not an asymmetric algorithm", header.alg));
        }
        let key = self.key(header.kid.as_deref()).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.url]);
        validation.set_audience(audience);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        jsonwebtoken::decode::<Map<String, Json>>(token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|error| error.to_string())
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
            if let Some((set, at)) = keys.as_ref()
                && at.elapsed() < FRESH
            {
                if let Some(jwk) = found(set) {
                    return DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string());
                }
                if at.elapsed() < REFETCH_AFTER {
                    return Err("signed by a key the issuer does not list".into());
                }
            }
        }
        let mut keys = self.keys.write().await;
        let set = self.fetch_keys().await?;
        let jwk = found(&set);
        *keys = Some((set, Instant::now()));
        let jwk = jwk.ok_or("signed by a key the issuer does not list")?;
        DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())
    }

    /// The issuer's key set: from `jwks_url`, else from the `jwks_uri` of
    /// its metadata.
    async fn fetch_keys(&self) -> Result<JwkSet, String> {
        let url = match &self.jwks_url {
            Some(url) => url.clone(),
            None => self.endpoint("jwks_uri").await?,
        };
        let set = self.get_json(&url).await?;
        serde_json::from_value(set).map_err(|e| format!("the issuer's key set is not a JWKS: {e}"))
    }

    async fn get_json(&self, url: &str) -> Result<Json, String> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| format!("the issuer could not be reached: {e}"))?;
        json_of(response).await
    }
}

/// The JSON body of an issuer's `response`, when it succeeded.
///
/// # Errors
/// Its status, when it failed (with the OAuth `error` it names, if any),
/// or why the body is not JSON.
pub async fn json_of(response: reqwest::Response) -> Result<Json, String> {
    let status = response.status();
    let url = response.url().clone();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("the issuer's answer broke off: {e}"))?;
    if !status.is_success() {
        let error = serde_json::from_slice::<Json>(&body)
            .ok()
            .and_then(|body| body.get("error").and_then(Json::as_str).map(str::to_owned))
            .map_or_else(String::new, |error| format!(" ({error})"));
        return Err(format!("the issuer answered {status}{error} for {url}"));
    }
    serde_json::from_slice(&body).map_err(|e| format!("the issuer's answer is not JSON: {e}"))
}

/// Whether `token` has a JWT's shape (a header that reads): else it is
/// an opaque token, for the issuer to say what it is.
pub fn is_jwt(token: &str) -> bool {
    jsonwebtoken::decode_header(token).is_ok()
}

/// Whether `alg` is signed with a key pair (never a shared secret).
fn asymmetric(alg: Algorithm) -> bool {
    !matches!(alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}
