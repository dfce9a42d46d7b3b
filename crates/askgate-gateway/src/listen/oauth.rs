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
//!   fetched again for a key it does not know yet; see
//!   [`askgate_inbox::issuer`]): its signature, issuer, audience
//!   (askgate's resource URL, so a token minted for another service is
//!   refused), expiry and not-before are checked. Symmetric algorithms
//!   are refused: the key would be a shared secret.
//! - An opaque token (not a JWT) is checked by the issuer, when
//!   `[listen.oauth.introspection]` says how (see [`introspect`]).
//! - The principal is the principal of a scope the token grants
//!   (`scope_principals`), else the token's `client_id` (RFC 9068), else
//!   its `sub` (`principal_claim` names another claim); tokens are never
//!   passed upstream.
//!
//! [`introspect`]: super::introspect

use std::collections::BTreeSet;
use std::sync::Arc;

use askgate_core::approval::name_problem;
use askgate_inbox::issuer::{self, Issuer};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value as Json, json};

use super::introspect::Introspector;
use crate::config::OAUTH_AGENT;
use crate::config::OAuth as Settings;

/// The resource server: its settings, and its authorization server as
/// askgate reads it (metadata and keys, see [`Issuer`]).
pub(super) struct ResourceServer {
    settings: Settings,
    issuer: Issuer,
    introspector: Option<Introspector>,
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
        let issuer = Issuer::new(settings.issuer.clone(), settings.jwks_url.clone());
        let introspector = settings
            .introspection
            .clone()
            .map(|introspection| Introspector::new(introspection, settings.resource.clone()));
        Arc::new(ResourceServer {
            settings,
            issuer,
            introspector,
        })
    }

    /// Check the bearer `token`.
    pub(super) async fn check(&self, token: &str) -> Checked {
        let claims = match (issuer::is_jwt(token), &self.introspector) {
            (true, _) => self.issuer.verify(token, &[&self.settings.resource]).await,
            (false, Some(introspector)) => introspector.claims(&self.issuer, token).await,
            (false, None) => {
                Err("not a JWT, and [listen.oauth.introspection] is not set".to_owned())
            }
        };
        let claims = match claims {
            Ok(claims) => claims,
            Err(why) => return Checked::Invalid(why),
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
        let mapped: BTreeSet<&String> = granted
            .iter()
            .filter_map(|scope| self.settings.scope_principals.get(scope))
            .collect();
        // A principal a claim names is the issuer's, not the config's: it
        // is kept apart from [[principals]] (whose acts_for it would
        // otherwise take on) under `oauth:`. Only scope_principals name a
        // principal of the config. A name that would break a log line or
        // an approver list is no principal's: the token is refused.
        let named = |claim: &str| {
            claims
                .get(claim)
                .and_then(Json::as_str)
                .filter(|name| !name.trim().is_empty())
                .map(|name| match name_problem(name) {
                    None => Ok(format!("{OAUTH_AGENT}{name}")),
                    Some(why) => Err(format!("the token's {claim} is no usable name: {why}")),
                })
        };
        let principal = match (mapped.len(), &self.settings.principal_claim) {
            (1, _) => mapped.into_iter().next().cloned().map(Ok),
            (0, Some(claim)) => named(claim),
            (0, None) => named("client_id").or_else(|| named("sub")),
            _ => {
                let names: Vec<&str> = mapped.iter().map(|s| s.as_str()).collect();
                return Checked::Invalid(format!(
                    "the token grants the scopes of several principals ({})",
                    names.join(", ")
                ));
            }
        };
        match principal.transpose() {
            Err(why) => Checked::Invalid(why),
            Ok(principal) => Self::principal(principal),
        }
    }

    /// What the principal a token names comes to.
    fn principal(principal: Option<String>) -> Checked {
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
