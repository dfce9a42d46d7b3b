//! Where people answer what their client cannot show: the inbox's
//! address and pages, what a call does when its client can ask nobody, and
//! an ask waiting there ([`Parked`]). A leaf: the rounds hold an
//! [`InboxLinks`], and parking (see the `park` module) uses it.

use std::time::Duration;

use askgate_core::LinkSigner;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jiff::Timestamp;
use rmcp::model::{CallToolResult, ContentBlock};
use url::Url;

use crate::misuse::Misuse;

/// Why no link could be made for an ask.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkFailed {
    /// The system's random source failed: no nonce for the link.
    #[error("no nonce for a link: the system's random source failed: {0}")]
    Random(#[source] getrandom::Error),
    /// The links' lifetime reaches past what a timestamp holds.
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

/// Where people answer what their client cannot show.
#[derive(Debug, Clone)]
pub struct InboxLinks {
    /// The inbox's base URL, absolute (`https://askgate.example/`); an
    /// ask's page is `<base>asks/<id>`. `None`: no inbox page can be
    /// reached from here — asks are parked all the same, and answered with
    /// `askgate asks` (or an `askgate inbox` started later).
    pub base_url: Option<Url>,
    /// What to do when the client has no elicitation at all.
    pub fallback: Fallback,
    /// Signs the URL-mode links sent to clients, and how long they last.
    links: Option<(LinkSigner, Duration)>,
}

/// What a call does when its client cannot ask a person at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// Park the ask and answer the call with where to answer it and how to
    /// retry.
    Park,
    /// Refuse: the call fails with `-32021` (elicitation required).
    Block,
}

impl InboxLinks {
    /// An inbox at `base_url`, parking asks clients cannot show.
    ///
    /// # Errors
    /// [`Misuse::InboxUrl`] when `base_url` is not an absolute URL,
    /// [`Misuse::InboxUrlWithoutHost`] when it has no host.
    ///
    /// # Example
    /// ```
    /// use askgate_mcp::{InboxLinks, Misuse};
    ///
    /// let inbox = InboxLinks::new("https://askgate.example/inbox")?;
    /// assert_eq!(
    ///     inbox.page("ask_1").as_deref(),
    ///     Some("https://askgate.example/inbox/asks/ask_1")
    /// );
    /// assert!(matches!(InboxLinks::new("/inbox"), Err(Misuse::InboxUrl { .. })));
    /// # Ok::<(), Misuse>(())
    /// ```
    pub fn new(base_url: &str) -> Result<InboxLinks, Misuse> {
        let mut url = Url::parse(base_url).map_err(|reason| Misuse::InboxUrl {
            url: base_url.to_owned(),
            reason,
        })?;
        if !url.has_host() {
            return Err(Misuse::InboxUrlWithoutHost {
                url: base_url.to_owned(),
            });
        }
        if !url.path().ends_with('/') {
            let path = format!("{}/", url.path());
            url.set_path(&path);
        }
        Ok(InboxLinks {
            base_url: Some(url),
            fallback: Fallback::Park,
            links: None,
        })
    }

    /// An inbox with no page to link to: asks clients cannot show are
    /// parked in the store, and the model is told to have them answered
    /// with `askgate asks` — never a link that may lead elsewhere.
    pub fn without_page() -> InboxLinks {
        InboxLinks {
            base_url: None,
            fallback: Fallback::Park,
            links: None,
        }
    }

    /// Whether there is a page to link to.
    pub fn has_page(&self) -> bool {
        self.base_url.is_some()
    }

    /// Sign the links sent to clients in URL mode with `signer`, each good
    /// for `ttl` and one opening: the link itself lets the person it is
    /// for open that one ask without signing in (see the inbox).
    #[must_use]
    pub fn with_links(mut self, signer: LinkSigner, ttl: Duration) -> InboxLinks {
        self.links = Some((signer, ttl));
        self
    }

    /// The link sent to a client in URL mode for the ask `id` at `now`:
    /// its page, signed when links are signed — good until `now` plus the
    /// links' lifetime (else the page, where the person signs in).
    ///
    /// # Errors
    /// [`Misuse::NoInboxPage`] when there is no page to link to (URL mode
    /// is not offered then),
    /// [`LinkFailed::Random`] when the system's random source fails (no
    /// nonce), [`Misuse::LifetimeOutOfRange`] when the links' lifetime
    /// reaches past what a timestamp holds.
    pub fn link(&self, id: &str, now: Timestamp) -> Result<String, LinkFailed> {
        let page = self.page(id).ok_or(Misuse::NoInboxPage)?;
        let Some((signer, ttl)) = &self.links else {
            return Ok(page);
        };
        let mut nonce = [0u8; 18];
        getrandom::fill(&mut nonce).map_err(LinkFailed::Random)?;
        let expires_at = now
            .checked_add(*ttl)
            .map_err(|_| Misuse::LifetimeOutOfRange {
                what: "the inbox's link lifetime",
                lifetime: *ttl,
            })?;
        let token = signer.sign(id, expires_at, &URL_SAFE_NO_PAD.encode(nonce));
        Ok(format!("{page}?link={token}"))
    }

    /// The page of the ask `id`, when there is an inbox page.
    pub fn page(&self, id: &str) -> Option<String> {
        let base = self.base_url.as_ref()?;
        Some(
            base.join(&format!("asks/{id}"))
                .map_or_else(|_| format!("{base}asks/{id}"), String::from),
        )
    }
}

/// An ask waiting in the inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    /// The ask's id in the store.
    pub id: String,
    /// Its inbox page, when there is one.
    pub url: Option<String>,
    /// The tool, prompt or resource whose call waits on it.
    pub name: String,
}

impl Parked {
    /// What the model reads: where a person answers, and how to go on —
    /// never a command or a link that answers by itself (the page needs a
    /// person's sign-in).
    pub fn message(&self) -> String {
        let (id, name) = (&self.id, &self.name);
        match &self.url {
            Some(url) => format!(
                "This needs a person's answer, and this client cannot show it. The ask ({id}) waits \
                 in the askgate inbox ({url}): ask the user to answer it there, then call {name} \
                 again with the same arguments to continue."
            ),
            None => format!(
                "This needs a person's answer, and this client cannot show it. The ask ({id}) waits \
                 in the askgate store (no inbox page is served here): ask the user to answer it \
                 with `askgate asks show {id}` and `askgate asks answer {id}` under their own \
                 credential, or in `askgate inbox`, then call {name} again with the same \
                 arguments to continue."
            ),
        }
    }

    /// The call's answer: a tool result saying where to answer (an error
    /// result: the tool has not run).
    pub fn tool_result(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(self.message())])
    }
}
