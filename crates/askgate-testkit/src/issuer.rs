//! A local token issuer for tests: an OpenID provider's or authorization
//! server's metadata and key set served on loopback, and tokens signed
//! with its test key (or a stranger's). The keys are in `keys/`; they
//! protect nothing.

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value as Json, json};

/// The issuer's private key (PKCS#8 PEM), kid `issuer-1`.
pub const ISSUER_KEY: &str = include_str!("../keys/issuer-key.pem");
/// The issuer's public key, as its JWKS lists it.
pub const ISSUER_JWK: &str = include_str!("../keys/issuer-jwk.json");
/// A key the issuer does not list (PKCS#8 PEM).
pub const STRANGER_KEY: &str = include_str!("../keys/stranger-key.pem");

/// Serve an issuer on 127.0.0.1: its metadata at
/// `/.well-known/openid-configuration` (`authorization_endpoint`
/// `/authorize`, `token_endpoint` `/token`, `introspection_endpoint`
/// `/introspect`, `jwks_uri` `/jwks`) and its key
/// set, beside the routes `more` makes given the issuer's URL. The URL.
///
/// # Panics
/// When no loopback port can be had.
pub async fn serve(more: impl FnOnce(String) -> axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let url = format!(
        "http://127.0.0.1:{}",
        listener.local_addr().expect("bound").port()
    );
    let issuer = url.clone();
    let jwk: Json = serde_json::from_str(ISSUER_JWK).expect("a JWK");
    let app = more(url.clone())
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(move || async move {
                axum::Json(json!({
                    "issuer": issuer,
                    "authorization_endpoint": format!("{issuer}/authorize"),
                    "token_endpoint": format!("{issuer}/token"),
                    "introspection_endpoint": format!("{issuer}/introspect"),
                    "jwks_uri": format!("{issuer}/jwks"),
                }))
            }),
        )
        .route(
            "/jwks",
            axum::routing::get(move || async move { axum::Json(json!({"keys": [jwk]})) }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// A JWT of `claims`, signed RS256 with `key` (PKCS#8 PEM) as `kid`.
///
/// # Panics
/// When `key` is not an RSA PEM key.
pub fn signed(key: &str, kid: &str, claims: &Json) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_rsa_pem(key.as_bytes()).expect("a PEM key");
    jsonwebtoken::encode(&header, claims, &key).expect("signs")
}
