//! The client's side of the express lane: every line the client sends on
//! stdin is offered to it first; it takes a `tools/call` that needs no
//! person (see [`crate::express`]), hands a classic client's other calls
//! to the gateway's handler itself (see [`super::handed`]), and leaves
//! everything else to rmcp.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::handed::Handed;
use crate::express::lane::OnLanes;
use crate::express::take::{self, Caller};
use crate::express::{Incoming, Initialize, ReplyTo, is_classic};
use crate::lines::Out;
use crate::proxy::Gateway;

/// The client's side of the lane: offered every line the client sends.
pub(crate) struct Express {
    gateway: Gateway,
    /// The client's pipe.
    reply: Arc<Out>,
    /// Whether the client asked for a classic revision.
    classic: bool,
    /// Whether the client declared the tasks extension.
    follows_tasks: bool,
    /// Whether its `initialize` went by (a second one is rmcp's to refuse,
    /// and changes nothing here).
    initialized: bool,
    /// Calls on the lanes by the client's request id.
    calls: OnLanes,
    /// Calls the lane leaves, handed to the gateway's handler.
    handed: Arc<Handed>,
    /// Whether the client said it is initialized: only then are its calls
    /// handed (one sooner is rmcp's).
    ready: bool,
}

impl Express {
    /// The lane for the client writing to `reply`'s other end, its calls
    /// the lane leaves handed by `handed`.
    pub(crate) fn new(gateway: Gateway, reply: Arc<Out>, handed: Arc<Handed>) -> Express {
        Express {
            gateway,
            reply,
            handed,
            ready: false,
            classic: false,
            follows_tasks: false,
            initialized: false,
            calls: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Offer a line the client sent: `true` when the lane took it.
    pub(crate) fn offer(&mut self, line: &[u8]) -> bool {
        let Ok(request) = serde_json::from_slice::<Incoming<'_>>(line) else {
            return false;
        };
        if !request.is_read_by_rmcp() {
            return false;
        }
        match (request.method.as_deref(), request.id) {
            (Some("initialize"), Some(_)) if !self.initialized => {
                let initialize = request
                    .params
                    .and_then(|p| serde_json::from_str::<Initialize<'_>>(p.get()).ok());
                // One rmcp will refuse (its params do not fit) is no
                // handshake: the next initialize is.
                let fits = request.params.is_some_and(|p| {
                    serde_json::from_str::<rmcp::model::InitializeRequestParams>(p.get()).is_ok()
                });
                if !fits {
                    return false;
                }
                self.initialized = true;
                self.classic = initialize
                    .as_ref()
                    .is_some_and(|i| is_classic(&i.protocol_version));
                self.follows_tasks = initialize.is_some_and(|i| i.follows_tasks());
                false
            }
            (Some("tools/call"), Some(id)) if self.classic => match request.params {
                Some(params) => {
                    self.call(id, params)
                        || (self.ready && !self.follows_tasks && self.handed.take(id, params))
                }
                None => false,
            },
            (Some("notifications/initialized"), None) => {
                self.ready = self.initialized;
                false
            }
            // An answer to an ask the gateway wrote itself.
            (None, Some(id)) => self.handed.answered(id, request.result, request.error),
            (Some("notifications/cancelled"), None) => match request.params {
                Some(params) => self.cancel(params),
                None => false,
            },
            _ => false,
        }
    }

    /// Take call `id` onto the lane, if it needs no person.
    fn call(&mut self, id: &RawValue, params: &RawValue) -> bool {
        // The lane serves one client here, whom nothing authenticates; its
        // threshold is the configured one (no session header on stdio).
        let caller = Caller {
            principal: askgate_mcp::Principal::ANONYMOUS,
            threshold: self.gateway.threshold(),
            follows_tasks: self.follows_tasks,
            calls: &self.calls,
            progress: Some(&|| self.writer()),
        };
        let reply = ReplyTo::Pipe(Arc::clone(&self.reply));
        take::take(&self.gateway, caller, id, params, reply)
    }

    /// A client's cancel: taken when it names a call on the lane, or one
    /// handed to the gateway's handler.
    fn cancel(&mut self, params: &RawValue) -> bool {
        take::cancel(&self.gateway, &self.calls, params) || self.handed.cancel(params)
    }

    /// Writes a line to the client's pipe (a notification of the lane's).
    fn writer(&self) -> crate::downstream::WriteLine {
        let reply = Arc::clone(&self.reply);
        Arc::new(move |line: Vec<u8>| {
            if let Err(error) = reply.send(&line) {
                tracing::debug!(%error, "the client went away before a progress notification");
            }
        })
    }
}
