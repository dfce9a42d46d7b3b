//! The client's side of the express lane: what it reads of a client's
//! line, against what rmcp reads of it.

use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, InitializeRequestParams,
    JsonRpcMessage, NumberOrString,
};
use serde_json::Value as Json;
use serde_json::value::RawValue;

use super::{check, checking};
use crate::express::{CallParams, Cancelled, Incoming, Initialize, is_classic};

/// What the express lane reads of a client's line is what rmcp reads of
/// it: a handshake it counts is an `initialize` rmcp reads, with the same
/// revision and tasks; a call it would take is a `tools/call` rmcp reads,
/// with the same id, tool and arguments; a cancel it acts on names the
/// request rmcp's reading names.
pub fn client_line(line: &[u8]) {
    checking(line);
    let rmcp = serde_json::from_slice::<ClientJsonRpcMessage>(line).ok();
    let Ok(request) = serde_json::from_slice::<Incoming<'_>>(line) else {
        return;
    };
    // As `Express::offer` does.
    if !request.is_read_by_rmcp() {
        return;
    }
    match (request.method.as_deref(), request.id, request.params) {
        (Some("initialize"), Some(id), Some(params)) => {
            let Ok(theirs) = serde_json::from_str::<InitializeRequestParams>(params.get()) else {
                return;
            };
            if !rmcp_reads_its_envelope(line, Some(id)) {
                return;
            }
            let ours = serde_json::from_str::<Initialize<'_>>(params.get()).ok();
            let ours = ours.map(|i| (is_classic(&i.protocol_version), i.follows_tasks()));
            let read = match &rmcp {
                Some(JsonRpcMessage::Request(r)) => match &r.request {
                    ClientRequest::InitializeRequest(i) => Some((
                        is_classic(i.params.protocol_version.as_str()),
                        i.params.capabilities.supports_tasks(),
                    )),
                    _ => None,
                },
                _ => None,
            };
            check("lane-handshake", ours.is_some() && ours == read, || {
                format!(
                    "the lane counts a handshake (classic, tasks) {ours:?} ({}), rmcp reads {read:?}",
                    theirs.protocol_version
                )
            });
        }
        (Some("tools/call"), Some(id), Some(params)) => {
            let Ok(call) = serde_json::from_str::<CallParams>(params.get()) else {
                return;
            };
            if call.others || !rmcp_reads_its_envelope(line, Some(id)) {
                return;
            }
            let id = serde_json::from_str::<Json>(id.get()).ok();
            let read = match &rmcp {
                Some(JsonRpcMessage::Request(r)) => match &r.request {
                    ClientRequest::CallToolRequest(c) => Some((
                        serde_json::to_value(&r.id).ok(),
                        c.params.name.to_string(),
                        c.params.arguments.clone(),
                    )),
                    _ => None,
                },
                _ => None,
            };
            let ours = (id, call.name.into_owned(), call.arguments);
            check("lane-call", read.as_ref() == Some(&ours), || {
                format!("the lane would take (id, tool, arguments) {ours:?}, rmcp reads {read:?}")
            });
        }
        (Some("notifications/cancelled"), None, Some(params)) => {
            let Ok(cancelled) = serde_json::from_str::<Cancelled<'_>>(params.get()) else {
                return;
            };
            if !rmcp_reads_its_envelope(line, None) {
                return;
            }
            let ours = serde_json::from_str::<Json>(cancelled.request_id.get()).ok();
            let read = match &rmcp {
                Some(JsonRpcMessage::Notification(n)) => match &n.notification {
                    ClientNotification::CancelledNotification(c) => c
                        .params
                        .request_id
                        .as_ref()
                        .and_then(|id| serde_json::to_value(id).ok()),
                    _ => None,
                },
                _ => None,
            };
            check("lane-cancel", ours.is_some() && ours == read, || {
                format!("the lane cancels {ours:?}, rmcp reads {read:?}")
            });
        }
        _ => {}
    }
}

/// Whether rmcp reads the envelope of `line`, which the lane acts on: a
/// `jsonrpc` of `"2.0"` (`lane-jsonrpc`), and an `id` that is a string or
/// an integer (`lane-id`). Otherwise the lane answers what rmcp refuses.
fn rmcp_reads_its_envelope(line: &[u8], id: Option<&RawValue>) -> bool {
    let version = serde_json::from_slice::<Json>(line)
        .ok()
        .map(|top| top["jsonrpc"].clone());
    let version_fits = version.as_ref().is_some_and(|v| v == "2.0");
    check("lane-jsonrpc", version_fits, || {
        format!("the lane acts on a line whose jsonrpc is {version:?}: rmcp refuses it")
    });
    let id_fits = id.is_none_or(|id| serde_json::from_str::<NumberOrString>(id.get()).is_ok());
    check("lane-id", id_fits, || {
        format!(
            "the lane acts on a request with the id {}: rmcp refuses it",
            id.map_or("", |id| id.get())
        )
    });
    version_fits && id_fits
}
