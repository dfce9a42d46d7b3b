//! `[inbox]`: where the inbox's web page listens and is opened.

use std::fmt;
use std::net::SocketAddr;

use askgate_inbox::OidcSettings;
use toml::Spanned;

use super::error::{ConfigError, Source};
use super::file::OidcFile;

/// The inbox's web page.
#[derive(Clone, PartialEq, Eq)]
pub struct Inbox {
    /// Where it listens.
    pub listen: SocketAddr,
    /// The address people open, when it is not `http://{listen}` (behind a
    /// proxy).
    pub base_url: Option<String>,
    /// The operator's sign-in token (sees every ask). Without it one is
    /// generated on first start and written to a file only its owner can
    /// read (`<key file>.operator-token`). Never logged: `Debug` redacts it.
    pub token: Option<String>,
    /// A token that reads `/metrics` and nothing else (`metrics_token`),
    /// for a scraper that should not hold the operator's, which answers
    /// every ask. Never logged: `Debug` redacts it.
    pub metrics_token: Option<String>,
    /// Whether it may listen on an address other machines reach
    /// (`allow_plain_http`): askgate serves plain HTTP, so the operator
    /// says TLS is terminated in front of it.
    pub allow_plain_http: bool,
    /// People sign in with this OpenID provider (`[inbox.oidc]`).
    pub oidc: Option<OidcSettings>,
}

impl Inbox {
    /// On the default address (`127.0.0.1:7878`), opened there.
    pub(super) fn on_loopback() -> Inbox {
        Inbox {
            listen: super::default_inbox(),
            base_url: None,
            token: None,
            metrics_token: None,
            allow_plain_http: false,
            oidc: None,
        }
    }
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("listen", &self.listen)
            .field("base_url", &self.base_url)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field(
                "metrics_token",
                &self.metrics_token.as_ref().map(|_| "<redacted>"),
            )
            .field("allow_plain_http", &self.allow_plain_http)
            .field("oidc", &self.oidc)
            .finish()
    }
}

impl Inbox {
    /// Whether `token` is the metrics token. Their SHA-256 digests are
    /// compared, every byte: how far a guess matched is not told by when
    /// the comparison stops.
    pub(crate) fn is_metrics_token(&self, token: &str) -> bool {
        use sha2::{Digest as _, Sha256};
        self.metrics_token.as_deref().is_some_and(|ours| {
            let (ours, theirs) = (Sha256::digest(ours), Sha256::digest(token));
            ours.iter()
                .zip(theirs.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
        })
    }
}

/// Why a listener on `addr` may not serve plain HTTP unless allowed, or
/// `None`: a loopback address, or one the operator allowed (`allowed`).
/// `table` names where to allow it (`[inbox]`, `[listen]`).
pub(crate) fn plain_http_refused(addr: SocketAddr, allowed: bool, table: &str) -> Option<String> {
    (!addr.ip().is_loopback() && !allowed).then(|| {
        format!(
            "{addr} is reachable from other machines, and askgate serves plain HTTP there: tokens, \
             answers and tool arguments would cross the network unencrypted; put TLS in front of it \
             (a reverse proxy) and set allow_plain_http = true in {table}, or listen on a loopback \
             address (127.0.0.1)"
        )
    })
}

/// `[inbox.oidc]` checked: an https issuer (http on this machine only), a client, at least one group
/// whose members may sign in, none of them blank.
pub(super) fn check_oidc(
    file: Spanned<OidcFile>,
    src: &Source<'_>,
) -> Result<OidcSettings, ConfigError> {
    let span = file.span();
    let file = file.into_inner();
    let issuer = super::listen::issuer_url(file.issuer, "issuer", src)?;
    let filled = |value: Spanned<String>, what: &str| {
        if value.get_ref().trim().is_empty() {
            Err(src.at(value.span(), format!("[inbox.oidc] {what} is blank")))
        } else {
            Ok(value.into_inner())
        }
    };
    let client_id = filled(file.client_id, "client_id")?;
    let client_secret = filled(file.client_secret, "client_secret")?;
    let groups_span = file.groups.span();
    let groups = file
        .groups
        .into_inner()
        .into_iter()
        .map(|group| filled(group, "a group"))
        .collect::<Result<Vec<_>, _>>()?;
    if groups.is_empty() {
        return Err(src.at(
            groups_span,
            "[inbox.oidc] groups names nobody; name the groups whose members may sign in \
             (as the provider's groups claim names them)",
        ));
    }
    let Some(answers_for) = file.answers_for else {
        return Err(src.at(
            span,
            "[inbox.oidc] needs answers_for: the principals whose asks its people see and answer \
             (\"*\" for every one), as a [[people]] entry does",
        ));
    };
    if answers_for.is_empty() {
        return Err(src.at(
            span,
            "[inbox.oidc] answers_for is empty: its people would see no ask; name principals, or \"*\"",
        ));
    }
    Ok(OidcSettings {
        issuer,
        client_id,
        client_secret,
        scopes: file.scopes,
        name_claim: file
            .name_claim
            .unwrap_or_else(|| "preferred_username".to_owned()),
        groups_claim: file.groups_claim.unwrap_or_else(|| "groups".to_owned()),
        groups,
        answers_for,
    })
}
