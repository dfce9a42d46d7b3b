//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) through
//! the gateway: which upstream made each task, and for whom.
//!
//! A `tools/call` an upstream answers with a task (`CreateTaskResult`) is
//! one the person already decided on: the call is only sent after the
//! decision, so the task starts after it. From then on the task is the
//! upstream's: `tasks/get`, `tasks/update` and `tasks/cancel` go to the
//! upstream that made it, and its answers come back unchanged (see the
//! proxy's `tasks` module); its `notifications/tasks` go to the client
//! whose call made it. [`Routes`] keeps that, in memory, for each task's
//! time to live.
//!
//! Towards an upstream, the gateway declares the extension only for a
//! request whose client declared it (in the request's `_meta`, or for a
//! classic client in `initialize`): one connection to an upstream carries
//! the calls of every client, so its handshake cannot say what each one
//! follows; the request's `_meta` can, and [`declaring`] writes it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, RequestMetaObject, TASKS_EXTENSION_ID};
use rmcp::service::{Peer, RoleServer};
use serde_json::Map;

/// How long a task with no time to live of its own is routed.
const LONGEST: Duration = Duration::from_secs(7 * 24 * 3600);

/// How many tasks are routed at most: past it, the oldest are forgotten.
const MOST: usize = 100_000;

/// Where one task's requests go.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    /// The upstream that made it, by index.
    pub(crate) upstream: usize,
    /// That upstream's relay, by number (as its notifications come).
    pub(crate) relay: u64,
    /// The principal whose call made it: only that principal reaches it.
    pub(crate) principal: String,
    /// The client whose call made it, told of its status.
    pub(crate) client: Peer<RoleServer>,
    /// Whether it is a 2025-11-25 task (see [`crate::legacy_tasks`]), not
    /// one of the extension.
    pub(crate) legacy: bool,
}

/// The client of a call that follows tasks: whose it is, and its
/// connection.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The call's principal.
    pub(crate) principal: String,
    /// The client.
    pub(crate) client: Peer<RoleServer>,
}

/// Every task made through the gateway, by its id: shared by the
/// gateway's sessions and the upstreams' relays (which pass each task's
/// status notifications on to its client).
#[derive(Debug, Clone, Default)]
pub(crate) struct Routes {
    routes: Arc<Mutex<Table>>,
}

/// Each task's route, and until when it is kept.
type Table = HashMap<String, (Route, Instant)>;

impl Routes {
    fn routes(&self) -> std::sync::MutexGuard<'_, Table> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Task `id` was made by `route`, and lives `ttl_ms` (`None`: as long
    /// as the gateway routes any task).
    pub(crate) fn made(&self, id: &str, route: Route, ttl_ms: Option<u64>) {
        let lives = ttl_ms.map_or(LONGEST, |ms| Duration::from_millis(ms).min(LONGEST));
        let now = Instant::now();
        let mut routes = self.routes();
        routes.retain(|_, (_, until)| *until > now);
        if routes.len() >= MOST
            && let Some(oldest) = routes
                .iter()
                .min_by_key(|(_, (_, until))| *until)
                .map(|(id, _)| id.clone())
        {
            routes.remove(&oldest);
        }
        // Another upstream's (or principal's) task of the same id, still
        // routed, keeps its route: taking it over would hand that task to
        // this call's client.
        if let Some((theirs, until)) = routes.get(id)
            && *until > now
            && (theirs.relay != route.relay || theirs.principal != route.principal)
        {
            tracing::warn!(task = %id, "two upstreams made tasks of one id; the later is not routed");
            return;
        }
        routes.insert(id.to_owned(), (route, now + lives));
    }

    /// Where task `id` goes, while it is routed.
    pub(crate) fn route(&self, id: &str) -> Option<Route> {
        let routes = self.routes();
        let (route, until) = routes.get(id)?;
        (*until > Instant::now()).then(|| route.clone())
    }

    /// Whether task `id` is a 2025-11-25 task routed through the gateway.
    pub(crate) fn is_legacy(&self, id: &str) -> bool {
        self.route(id).is_some_and(|route| route.legacy)
    }

    /// The client to tell of task `id`, made by the upstream of relay
    /// `relay`.
    pub(crate) fn client(&self, relay: u64, id: &str) -> Option<Peer<RoleServer>> {
        self.route(id)
            .filter(|route| route.relay == relay)
            .map(|route| route.client)
    }
}

/// Whether `capabilities` declare the tasks extension.
pub(crate) fn follows(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities.is_some_and(ClientCapabilities::supports_tasks)
}

/// Declare the tasks extension in `capabilities`: for the requests of a
/// client that declared it (see [`crate::upstream::Upstream::declaring`]).
pub(crate) fn add_extension(capabilities: &mut ClientCapabilities) {
    capabilities
        .extensions
        .get_or_insert_with(Default::default)
        .insert(TASKS_EXTENSION_ID.to_owned(), Map::new());
}

/// A request's `_meta` declaring `capabilities`. rmcp puts these after its
/// own, so they stand on either revision.
pub(crate) fn declaring(capabilities: ClientCapabilities) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    meta.set_client_capabilities(capabilities);
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_capabilities_keep_the_gateways_and_add_tasks() {
        let mut mine = ClientCapabilities::default();
        mine.roots = Some(Default::default());
        add_extension(&mut mine);
        let meta = declaring(mine);
        let declared = meta.client_capabilities().expect("declared");
        assert!(declared.supports_tasks());
        assert!(declared.roots.is_some(), "the gateway's own stay");
        assert!(follows(Some(&declared)));
        assert!(!follows(Some(&ClientCapabilities::default())));
        assert!(!follows(None));
    }
}
