//! Opaque access tokens on `--listen`, checked by the issuer: OAuth 2.0
//! Token Introspection (RFC 7662) at its `introspection_endpoint`, askgate
//! signing in as the client `[listen.oauth.introspection]` names.
//!
//! An answer is taken only when the issuer says the token is `active`, it
//! names askgate's resource as its audience (a token for another service
//! is refused, as a JWT's would be), its times hold, and it names this
//! issuer when it names one. A taken answer is kept for a minute at most
//! (never past the token's expiry), by the token's SHA-256 — not the token:
//! a client's calls do not each cost a round trip to the issuer.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use askgate_inbox::issuer::{Issuer, json_of};
use serde_json::{Map, Value as Json};
use sha2::{Digest, Sha256};

use crate::config::Introspection;

/// How long an active token's answer is kept, at most.
const KEPT: Duration = Duration::from_secs(60);
/// The most answers kept at once.
const MOST_KEPT: usize = 10_000;
/// How far a token's times may be off askgate's clock.
const LEEWAY_SECS: i64 = 10;

/// Answers kept, by the SHA-256 of their token: the claims, and until when.
type Kept = HashMap<[u8; 32], (Map<String, Json>, Instant)>;

/// Introspection for one resource, with the answers kept.
pub(super) struct Introspector {
    settings: Introspection,
    resource: String,
    kept: Mutex<Kept>,
}

impl Introspector {
    pub(super) fn new(settings: Introspection, resource: String) -> Introspector {
        Introspector {
            settings,
            resource,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// The claims of the opaque `token`, as `issuer` answers for it.
    ///
    /// # Errors
    /// Why it is not a usable token, for the log (never the token).
    pub(super) async fn claims(
        &self,
        issuer: &Issuer,
        token: &str,
    ) -> Result<Map<String, Json>, String> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(claims) = self.kept_for(&key) {
            return Ok(claims);
        }
        let url = match &self.settings.url {
            Some(url) => url.clone(),
            None => issuer.endpoint("introspection_endpoint").await?,
        };
        let encoded =
            |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", token)
            .append_pair("token_type_hint", "access_token")
            .finish();
        let response = issuer
            .http()
            .post(url)
            // client_secret_basic, its parts form-encoded (RFC 6749 §2.3.1).
            .basic_auth(
                encoded(&self.settings.client_id),
                Some(encoded(&self.settings.client_secret)),
            )
            .header(
                axum::http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(body)
            .send()
            .await
            .map_err(|e| format!("the introspection endpoint could not be reached: {e}"))?;
        let Json::Object(claims) = json_of(response).await? else {
            return Err("the introspection answer is not a JSON object".into());
        };
        let now = jiff::Timestamp::now().as_second();
        let fresh_for = self.check(&claims, issuer.url(), now)?;
        self.keep(key, &claims, fresh_for);
        Ok(claims)
    }

    /// Whether the issuer's answer makes the token usable here at `now`:
    /// for how long, when it does.
    fn check(
        &self,
        claims: &Map<String, Json>,
        issuer: &str,
        now: i64,
    ) -> Result<Duration, String> {
        if claims.get("active") != Some(&Json::Bool(true)) {
            return Err("the issuer says the token is not active".into());
        }
        let time = |claim: &str| claims.get(claim).and_then(Json::as_i64);
        if time("exp").is_some_and(|exp| exp + LEEWAY_SECS <= now) {
            return Err("the token has expired".into());
        }
        if time("nbf").is_some_and(|nbf| nbf - LEEWAY_SECS > now) {
            return Err("the token is not valid yet".into());
        }
        if let Some(named) = claims.get("iss").and_then(Json::as_str)
            && named.trim_end_matches('/') != issuer.trim_end_matches('/')
        {
            return Err(format!(
                "the token was issued by another issuer ({named:?})"
            ));
        }
        let ours = |aud: &Json| aud.as_str() == Some(self.resource.as_str());
        let audience =
            match claims.get("aud") {
                Some(Json::Array(list)) => list.iter().any(ours),
                Some(aud) => ours(aud),
                None => return Err(
                    "the introspection names no audience; askgate takes only tokens minted for it"
                        .into(),
                ),
            };
        if !audience {
            return Err("the token was minted for another audience".into());
        }
        let left = time("exp").map_or(KEPT, |exp| {
            Duration::from_secs(u64::try_from(exp - now).unwrap_or(0))
        });
        Ok(left.min(KEPT))
    }

    fn kept_for(&self, key: &[u8; 32]) -> Option<Map<String, Json>> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.get(key)
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(claims, _)| claims.clone())
    }

    fn keep(&self, key: [u8; 32], claims: &Map<String, Json>, fresh_for: Duration) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if kept.len() >= MOST_KEPT {
            kept.retain(|_, (_, until)| now < *until);
            if kept.len() >= MOST_KEPT {
                kept.clear();
            }
        }
        kept.insert(key, (claims.clone(), now + fresh_for));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn introspector() -> Introspector {
        let settings = Introspection {
            client_id: "askgate".into(),
            client_secret: "secret".into(),
            url: None,
        };
        Introspector::new(settings, "https://askgate.example/mcp".into())
    }

    fn checked(answer: Json) -> Result<Duration, String> {
        let Json::Object(claims) = answer else {
            unreachable!("an object")
        };
        introspector().check(&claims, "https://idp.example/", 1_000)
    }

    #[test]
    fn only_an_active_token_for_askgate_of_this_issuer_in_its_time_is_taken() {
        let good = json!({"active": true, "aud": "https://askgate.example/mcp", "iss": "https://idp.example", "exp": 1_030});
        assert_eq!(checked(good), Ok(Duration::from_secs(30)));
        let listed = json!({"active": true, "aud": ["other", "https://askgate.example/mcp"]});
        assert_eq!(checked(listed), Ok(KEPT));
        for (answer, why) in [
            (json!({"active": false}), "not active"),
            (json!({"aud": "https://askgate.example/mcp"}), "not active"),
            (
                json!({"active": true, "aud": "https://other.example"}),
                "another audience",
            ),
            (json!({"active": true}), "names no audience"),
            (
                json!({"active": true, "aud": "https://askgate.example/mcp", "exp": 900}),
                "expired",
            ),
            (
                json!({"active": true, "aud": "https://askgate.example/mcp", "nbf": 1_100}),
                "not valid yet",
            ),
            (
                json!({"active": true, "aud": "https://askgate.example/mcp", "iss": "https://evil.example"}),
                "another issuer",
            ),
        ] {
            let refused = checked(answer.clone()).expect_err(why);
            assert!(refused.contains(why), "{answer}: {refused}");
        }
    }
}
