//! Which deployment an inbox serves. A stdio gateway binds the inbox's
//! address (127.0.0.1:7878 by default) when it starts; when that address is
//! taken, what answers there may be this deployment's inbox (`askgate
//! inbox`, run for desktop use, over the same store) — or another
//! gateway's, over another store, or something else entirely. The gateway
//! links people there only when it is its own: `GET /askgate/deployment`
//! answers the fingerprint of the inbox's key ([`LinkSigner::fingerprint`]),
//! which a gateway over the same store (the same key file) computes too.
//! The fingerprint names the key without giving it away.

use std::net::SocketAddr;
use std::time::Duration;

use askgate_core::LinkSigner;

/// The path the fingerprint is served at.
pub const PATH: &str = "/askgate/deployment";

/// How long a gateway waits for an answer at a taken address.
const PROBE: Duration = Duration::from_secs(2);

/// Whether the inbox at `addr` is this deployment's: it answers the
/// fingerprint of `signer`'s key. `false` when nothing answers in time,
/// or something else does.
pub async fn is_ours(addr: SocketAddr, signer: &LinkSigner) -> bool {
    let Ok(client) = reqwest::Client::builder().timeout(PROBE).build() else {
        return false;
    };
    let url = format!("http://{addr}{PATH}");
    let Ok(response) = client.get(&url).send().await else {
        return false;
    };
    if !response.status().is_success() {
        return false;
    }
    response
        .text()
        .await
        .is_ok_and(|said| said.trim() == signer.fingerprint())
}
