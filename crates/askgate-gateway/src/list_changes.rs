//! The list changes of an upstream on 2026-07-28, heard on a stream of
//! the gateway's own.
//!
//! A classic server tells its client its lists changed in notifications
//! on its connection (the [`Relay`]'s `on_*_list_changed`). A server on
//! 2026-07-28 tells them only on the `subscriptions/listen` streams its
//! clients open. So the gateway opens one to each such upstream, for the
//! lists that server says change (`listChanged` in its capabilities), and
//! passes every change on as a classic server's: the clients told (their
//! own listen streams and classic sessions alike), the list read again
//! on their next request. A stream that ends is opened again, waiting
//! longer after each end, until the connection itself closes; a server
//! that has no such method is not asked again.

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{ErrorCode, ServerCapabilities, ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};

use crate::downstream::List;
use crate::upstream::Relay;

/// The wait before opening a stream again, at first.
const FIRST_WAIT: Duration = Duration::from_secs(1);

/// The longest wait before opening a stream again.
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// The lists a server with `capabilities` says change, as a listen
/// stream's filter; `None` when it says none does.
pub(crate) fn filter(capabilities: &ServerCapabilities) -> Option<SubscriptionFilter> {
    let said = |changes: Option<bool>| (changes == Some(true)).then_some(true);
    let mut filter = SubscriptionFilter::default();
    filter.tools_list_changed = capabilities
        .tools
        .as_ref()
        .and_then(|t| said(t.list_changed));
    filter.prompts_list_changed = capabilities
        .prompts
        .as_ref()
        .and_then(|p| said(p.list_changed));
    filter.resources_list_changed = capabilities
        .resources
        .as_ref()
        .and_then(|r| said(r.list_changed));
    (filter != SubscriptionFilter::default()).then_some(filter)
}

/// Listen to the server behind `peer` for the changes of `filter`, each
/// passed on through `relay`, until its connection closes.
pub(crate) async fn listen(peer: Peer<RoleClient>, relay: Relay, filter: SubscriptionFilter) {
    let mut wait = FIRST_WAIT;
    loop {
        match peer.listen(filter.clone()).await {
            Ok(mut stream) => {
                wait = FIRST_WAIT;
                loop {
                    match stream.next().await {
                        Ok(Some(notification)) => {
                            if let Some(list) = changed(&notification) {
                                relay.lists_changed(list).await;
                            }
                        }
                        Ok(None) => break,
                        Err(error) => {
                            tracing::debug!(server = %relay.server(), %error, "its listen stream failed");
                            break;
                        }
                    }
                }
            }
            Err(ServiceError::TransportClosed) => return,
            Err(ServiceError::McpError(error)) if error.code == ErrorCode::METHOD_NOT_FOUND => {
                tracing::debug!(server = %relay.server(), "it has no subscriptions/listen: its list changes are not heard");
                return;
            }
            Err(error) => {
                tracing::debug!(server = %relay.server(), %error, "could not open its listen stream");
            }
        }
        if peer.is_transport_closed() {
            return;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LONGEST_WAIT);
    }
}

/// The list `notification` says changed, if it says one did.
fn changed(notification: &ServerNotification) -> Option<List> {
    match notification {
        ServerNotification::ToolListChangedNotification(_) => Some(List::Tools),
        ServerNotification::PromptListChangedNotification(_) => Some(List::Prompts),
        ServerNotification::ResourceListChangedNotification(_) => Some(List::Resources),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{PromptsCapability, ToolsCapability};

    #[test]
    fn only_the_lists_a_server_says_change_are_listened_for() {
        let mut capabilities = ServerCapabilities::default();
        assert_eq!(filter(&capabilities), None, "nothing changes");
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(false);
        capabilities.tools = Some(tools);
        assert_eq!(filter(&capabilities), None, "tools, said not to change");
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(true);
        capabilities.prompts = Some(prompts);
        let listened = filter(&capabilities).expect("prompts change");
        assert_eq!(listened.prompts_list_changed, Some(true));
        assert_eq!(listened.tools_list_changed, None);
        assert_eq!(listened.resources_list_changed, None);
    }
}
