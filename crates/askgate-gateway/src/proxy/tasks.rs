//! `tasks/get`, `tasks/update` and `tasks/cancel` (the tasks extension,
//! SEP-2663) relayed to the upstream that made the task, for the principal
//! whose call made it; the upstream's answers and errors come back
//! unchanged (see [`crate::tasks`]).
//!
//! rmcp answers a client that did not declare the extension `-32021`
//! before these run, once [`Gateway::capabilities`] advertises it (when an
//! upstream does).

use rmcp::ErrorData;
use rmcp::ServiceError;
use rmcp::model::{
    CancelTaskParams, CancelTaskRequest, ClientRequest, GetTaskParams, GetTaskRequest,
    GetTaskResult, ServerResult, UpdateTaskParams, UpdateTaskRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};

use super::Gateway;
use super::passing::passed_on;
use crate::tasks::{self, Caller};
use crate::upstream::Upstream;

impl Gateway {
    /// The client of the request `cx` of `principal`, when it follows
    /// tasks: an upstream may answer its call with one.
    pub(crate) fn task_caller(cx: &RequestContext<RoleServer>, principal: &str) -> Option<Caller> {
        tasks::follows(cx.client_capabilities().as_ref()).then(|| Caller {
            principal: principal.to_owned(),
            client: cx.peer.clone(),
        })
    }

    /// Whether upstream `index` runs tools as tasks.
    pub(crate) fn runs_tasks(&self, index: usize) -> bool {
        self.inner
            .upstreams
            .get(index)
            .is_some_and(Upstream::runs_tasks)
    }

    /// The upstream that made task `id` for `principal`.
    ///
    /// # Errors
    /// `-32602` when no upstream made it through the gateway for that
    /// principal (since the gateway started): another principal's task is
    /// unknown to this one.
    pub(super) fn task_upstream(&self, id: &str, principal: &str) -> Result<&Upstream, ErrorData> {
        match self.inner.downstream.tasks.route(id) {
            Some(route) if route.principal == principal => self
                .inner
                .upstreams
                .get(route.upstream)
                .ok_or_else(|| unknown(id)),
            _ => Err(unknown(id)),
        }
    }

    /// `tasks/get`: the task as its upstream tells it.
    ///
    /// # Errors
    /// An unknown task; the upstream's own error.
    pub(crate) async fn get_task(
        &self,
        params: GetTaskParams,
        principal: &str,
    ) -> Result<GetTaskResult, ErrorData> {
        let upstream = self.task_upstream(&params.task_id, principal)?;
        let request = GetTaskRequest::new(GetTaskParams::new(params.task_id));
        match send(
            upstream,
            ClientRequest::GetTaskRequest(request),
            "tell a task",
        )
        .await?
        {
            ServerResult::GetTaskResult(result) => Ok(result),
            // Without its `resultType`, carried as a 2025-11-25 task may be
            // (see `crate::legacy_tasks`): read as the extension's.
            ServerResult::CustomResult(custom) => {
                serde_json::from_value(crate::legacy_tasks::as_written(custom.0))
                    .map_err(|_| unexpected(&upstream.name, "tasks/get"))
            }
            _ => Err(unexpected(&upstream.name, "tasks/get")),
        }
    }

    /// `tasks/update`: the client's answers to the task's input requests,
    /// given to its upstream.
    ///
    /// # Errors
    /// An unknown task; the upstream's own error.
    pub(crate) async fn update_task(
        &self,
        params: UpdateTaskParams,
        principal: &str,
    ) -> Result<(), ErrorData> {
        let upstream = self.task_upstream(&params.task_id, principal)?;
        let request = UpdateTaskRequest::new(UpdateTaskParams::new(
            params.task_id,
            params.input_responses,
        ));
        acknowledged(
            upstream,
            send(
                upstream,
                ClientRequest::UpdateTaskRequest(request),
                "update a task",
            )
            .await?,
            "tasks/update",
        )
    }

    /// `tasks/cancel`: the client's cancel, told to the task's upstream.
    ///
    /// # Errors
    /// An unknown task; the upstream's own error.
    pub(crate) async fn cancel_task(
        &self,
        params: CancelTaskParams,
        principal: &str,
    ) -> Result<(), ErrorData> {
        let upstream = self.task_upstream(&params.task_id, principal)?;
        let request = CancelTaskRequest::new(CancelTaskParams::new(params.task_id));
        acknowledged(
            upstream,
            send(
                upstream,
                ClientRequest::CancelTaskRequest(request),
                "cancel a task",
            )
            .await?,
            "tasks/cancel",
        )
    }
}

/// Send `request` about a task to `upstream`, declaring the tasks
/// extension on it (the client that asks follows tasks: rmcp checked).
async fn send(
    upstream: &Upstream,
    request: ClientRequest,
    what: &str,
) -> Result<ServerResult, ErrorData> {
    let mut options = PeerRequestOptions::no_options();
    if let Some(declared) = upstream.declaring(None, true) {
        options = options.with_meta(tasks::declaring(declared));
    }
    let answered = async {
        let handle = upstream
            .service
            .peer()
            .send_request_with_option(request, options)
            .await?;
        handle.await_response().await
    };
    answered
        .await
        .map_err(|error: ServiceError| passed_on(&upstream.name, what, error))
}

/// An acknowledgement, as `tasks/update` and `tasks/cancel` answer.
fn acknowledged(upstream: &Upstream, result: ServerResult, method: &str) -> Result<(), ErrorData> {
    match result {
        ServerResult::TaskAckResult(_) | ServerResult::EmptyResult(_) => Ok(()),
        _ => Err(unexpected(&upstream.name, method)),
    }
}

pub(super) fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("unknown task {id:?}: no call through askgate made it"),
        None,
    )
}

pub(super) fn unexpected(server: &str, method: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("{server} answered {method} with something other than its result"),
        None,
    )
}
