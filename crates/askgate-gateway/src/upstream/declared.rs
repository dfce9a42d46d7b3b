//! What the gateway declares to an upstream of the client behind it: in
//! the handshake ([`Declared`]), and on each request to a server that
//! reads it there ([`per_request`], [`behind`]).

use rmcp::model::{ClientCapabilities, ProtocolVersion};
#[cfg(test)]
use serde_json::Value as Json;
use serde_json::json;

/// What the gateway declares to an upstream in its handshake: what it can
/// deliver of the server's asks, which it relays to the client behind the
/// call — elicitation (form, URL), sampling and roots only as the client
/// has them: the one stdio client's as it declared them, or, over
/// Streamable HTTP (whose clients come and go), what any of them may
/// have. A server on 2026-07-28 is also told, on each request, what that
/// request's client has (see [`Upstream::declaring`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Declared {
    /// Form-mode `elicitation/create`.
    pub(crate) form: bool,
    /// URL-mode `elicitation/create`.
    pub(crate) url: bool,
    /// `sampling/createMessage`.
    pub(crate) sampling: bool,
    /// `roots/list`.
    pub(crate) roots: bool,
}

impl Declared {
    /// Everything a client may have: for the clients of `--listen`, and
    /// the operator's dry run.
    pub(crate) const ANY_CLIENT: Declared = Declared {
        form: true,
        url: true,
        sampling: true,
        roots: true,
    };

    /// What the client declaring `capabilities` has. An elicitation
    /// capability that names no mode is form mode (2025-06-18).
    pub(crate) fn of(capabilities: &ClientCapabilities) -> Declared {
        let elicitation = capabilities.elicitation.as_ref();
        Declared {
            form: elicitation.is_some_and(|e| e.form.is_some() || e.url.is_none()),
            url: elicitation.is_some_and(|e| e.url.is_some()),
            sampling: capabilities.sampling.is_some(),
            roots: capabilities.roots.is_some(),
        }
    }

    /// As the capabilities of a handshake.
    pub(super) fn capabilities(self) -> ClientCapabilities {
        let mut declared = json!({});
        if self.form || self.url {
            let mut modes = json!({});
            if self.form {
                modes["form"] = json!({});
            }
            if self.url {
                modes["url"] = json!({});
            }
            declared["elicitation"] = modes;
        }
        if self.sampling {
            declared["sampling"] = json!({});
        }
        if self.roots {
            declared["roots"] = json!({});
        }
        serde_json::from_value(declared).unwrap_or_default()
    }
}

/// Whether a server on `version` reads what its client has from each
/// request (2026-07-28 and later: revisions are dates, in order).
pub(super) fn per_request(version: &ProtocolVersion) -> bool {
    version.as_str() >= ProtocolVersion::V_2026_07_28.as_str()
}

/// What askgate can deliver of a server's asks for a client that
/// declared `client`: its elicitation, sampling and roots, as declared
/// (askgate relays the server's asks to that client and checks each
/// answer); nothing of its other capabilities, which are about the
/// client and askgate, not the server.
pub(super) fn behind(client: &ClientCapabilities) -> ClientCapabilities {
    let mut declared = ClientCapabilities::default();
    declared.elicitation.clone_from(&client.elicitation);
    declared.sampling.clone_from(&client.sampling);
    declared.roots.clone_from(&client.roots);
    declared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(capabilities: Json) -> Declared {
        Declared::of(&serde_json::from_value(capabilities).expect("capabilities"))
    }

    #[test]
    fn the_handshake_declares_only_what_the_client_has() {
        let none = declared(json!({}));
        assert_eq!(
            serde_json::to_value(none.capabilities()).expect("json"),
            json!({}),
            "a client that cannot show an ask: no elicitation, sampling or roots"
        );
        let bare = declared(json!({"elicitation": {}}));
        assert!(bare.form && !bare.url, "no mode named is form mode");
        let links = declared(json!({"elicitation": {"url": {}}, "roots": {}}));
        assert!(!links.form && links.url && links.roots && !links.sampling);
        assert_eq!(
            serde_json::to_value(links.capabilities()).expect("json"),
            json!({"elicitation": {"url": {}}, "roots": {}})
        );
        let any = serde_json::to_value(Declared::ANY_CLIENT.capabilities()).expect("json");
        assert_eq!(
            any,
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
        );
    }

    #[test]
    fn what_a_request_declares_of_its_client_is_its_asks_and_nothing_else() {
        let client: ClientCapabilities = serde_json::from_value(json!({
            "sampling": {},
            "experimental": {"x": {}},
            "extensions": {"io.example/other": {}}
        }))
        .expect("capabilities");
        assert_eq!(
            serde_json::to_value(behind(&client)).expect("json"),
            json!({"sampling": {}})
        );
    }
}
