//! What passes through the gateway with the upstream's own semantics, as
//! a client of the server directly would see it: the capabilities it
//! advertises, `logging/setLevel`, `completion/complete`, resource
//! templates and the reads of their URIs, `resources/subscribe` and
//! `unsubscribe`, and `subscriptions/listen` on 2026-07-28. An upstream's
//! error reaches the client as the upstream gave it.

// Logging and resources/subscribe are deprecated in rmcp (SEP-2577, and
// subscriptions/listen on 2026-07-28); clients and servers still use them,
// and the gateway relays them.
#![allow(deprecated)]

use rmcp::ErrorData;
use rmcp::ServiceError;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, ProgressToken, Reference, ResourceTemplate, ResultType,
    ServerCapabilities, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter,
    TASKS_EXTENSION_ID, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext};
use serde_json::{Map, Value as Json, json};

use super::Gateway;
use super::templates;
use crate::downstream::{List, Progress, Routed, Told, WriteLine};
use crate::upstream::Upstream;

/// An upstream's failure as the client is told it: the upstream's own
/// error when it gave one, else what failed, naming it.
pub(crate) fn passed_on(server: &str, what: &str, error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(format!("{server} failed to {what}: {other}"), None),
    }
}

/// `a` and `b` merged: objects key by key, `true` over `false`.
pub(super) fn union(a: &mut Json, b: &Json) {
    match (a, b) {
        (Json::Object(a), Json::Object(b)) => {
            for (key, value) in b {
                match a.get_mut(key) {
                    Some(mine) => union(mine, value),
                    None => {
                        a.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Json::Bool(a), Json::Bool(b)) => *a |= *b,
        _ => {}
    }
}

impl Gateway {
    /// What the client is told the gateway can do: the union of what the
    /// upstreams said (`logging`, `completions`, `prompts`, `resources`
    /// with `subscribe` and `listChanged`, the tasks extension), and its
    /// own tools, whose list may change.
    pub(crate) fn capabilities(&self) -> ServerCapabilities {
        let mut merged = json!({"tools": {"listChanged": true}});
        for upstream in self.inner.upstreams.connected() {
            let Some(info) = upstream.service.peer_info() else {
                continue;
            };
            let Ok(Json::Object(theirs)) = serde_json::to_value(&info.capabilities) else {
                continue;
            };
            // The tasks extension is relayed (see the `tasks` module); other
            // extensions and experimental capabilities askgate does not
            // carry.
            let tasks = theirs
                .get("extensions")
                .and_then(|extensions| extensions.get(TASKS_EXTENSION_ID))
                .cloned();
            let mut relayed: Map<String, Json> = theirs
                .into_iter()
                .filter(|(key, _)| {
                    matches!(
                        key.as_str(),
                        "logging" | "completions" | "prompts" | "resources" | "tools"
                    )
                })
                .collect();
            if let Some(tasks) = tasks {
                relayed.insert("extensions".into(), json!({TASKS_EXTENSION_ID: tasks}));
            }
            union(&mut merged, &Json::Object(relayed));
        }
        // Some upstream still starting: what it may bring is advertised
        // too (a classic client learns capabilities once); a request no
        // upstream serves gets what a server without it answers.
        if !self.inner.upstreams.all_connected() {
            let relayable = json!({
                "logging": {}, "completions": {},
                "prompts": {"listChanged": true},
                "resources": {"subscribe": true, "listChanged": true},
            });
            union(&mut merged, &relayable);
        }
        if let Some(tasks) = self.legacy_tasks_capability() {
            merged["experimental"] = json!({crate::legacy_tasks::CAPABILITY: tasks});
        }
        serde_json::from_value(merged).unwrap_or_else(|error| {
            tracing::warn!(%error, "the upstreams' capabilities do not merge; only tools are advertised");
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build()
        })
    }

    /// The upstreams that declared `capability` (a key of
    /// [`ServerCapabilities`], as on the wire).
    fn declaring(&self, capability: &str) -> impl Iterator<Item = &Upstream> + '_ {
        let capability = capability.to_owned();
        self.inner.upstreams.connected().filter(move |upstream| {
            upstream
                .service
                .peer_info()
                .and_then(|info| serde_json::to_value(&info.capabilities).ok())
                .is_some_and(|caps| caps.get(&capability).is_some_and(|c| !c.is_null()))
        })
    }

    /// The client is known (its handshake), declaring `declared`: the
    /// upstreams start (the first release holds), and the answer waits a
    /// moment for their first tries, so it says what they can do.
    pub(crate) async fn client_known(&self, declared: crate::upstream::Declared) {
        self.inner.upstreams.release(declared);
        self.inner.upstreams.settled(crate::FIRST_WAIT, true).await;
        // The answer lists what joined so far (and the express lane takes
        // calls of tools listed): no news to tell of.
        self.refresh_tools().await;
        self.inner.upstreams.told();
    }

    /// An upstream joined (or failed its first try): its tools listed,
    /// and the clients told their lists changed.
    pub(crate) async fn arrived(&self) {
        self.refresh_tools().await;
        if !self.inner.upstreams.news() {
            return;
        }
        let notices = &self.inner.downstream.notices;
        for list in [List::Tools, List::Prompts, List::Resources] {
            notices
                .list_changed(list, self.inner.downstream.classic())
                .await;
        }
    }

    /// Where the progress of the client's request `cx` goes, when it
    /// asked for progress (`_meta.progressToken`).
    pub(crate) fn progress_of(&self, cx: &RequestContext<RoleServer>) -> Option<Progress> {
        let token = cx.meta.get_progress_token()?;
        let client = Told::Peer(cx.peer.clone());
        Some(self.inner.downstream.notices.progress_of(client, token))
    }

    /// Where the progress of a call on upstream `index`'s express lane
    /// goes: written by `write` as the client's notification, under
    /// `token`; the token the upstream is sent instead (a string, never
    /// one of rmcp's numbers), routed while the returned guard lives.
    pub(crate) fn lane_progress(
        &self,
        index: usize,
        token: ProgressToken,
        write: WriteLine,
    ) -> Option<(Routed, String)> {
        let progress = self
            .inner
            .downstream
            .notices
            .progress_of(Told::Line(write), token);
        self.lane_route(index, &progress)
    }

    /// `logging/setLevel`: set on every upstream that logs.
    ///
    /// # Errors
    /// No upstream logs (method not found, as a server without logging
    /// answers), or the only one that does refused.
    pub(crate) async fn set_level(&self, params: SetLevelRequestParams) -> Result<(), ErrorData> {
        let mut outcome = Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            "logging/setLevel: no server behind askgate logs",
            None,
        ));
        for upstream in self.declaring("logging") {
            let forwarded = SetLevelRequestParams::new(params.level);
            match upstream.service.peer().set_level(forwarded).await {
                Ok(()) => outcome = Ok(()),
                Err(error) => {
                    tracing::debug!(upstream = %upstream.name, %error, "logging/setLevel refused");
                    if outcome.is_err() {
                        outcome = Err(passed_on(&upstream.name, "set the log level", error));
                    }
                }
            }
        }
        outcome
    }

    /// `completion/complete`, sent to the upstream of the prompt or the
    /// resource template it refers to, under that upstream's own name.
    ///
    /// # Errors
    /// No upstream has the prompt or template; the upstream's own error.
    pub(crate) async fn complete(
        &self,
        mut params: CompleteRequestParams,
    ) -> Result<CompleteResult, ErrorData> {
        let index = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (index, name) = self.prompt(&prompt.name).await.ok_or_else(|| {
                    ErrorData::invalid_params(
                        self.unlisted(&format!("unknown prompt {:?}", prompt.name), None),
                        None,
                    )
                })?;
                prompt.name = name;
                index
            }
            Reference::Resource(template) => {
                self.template_owner(&template.uri).await.ok_or_else(|| {
                    ErrorData::invalid_params(
                        self.unlisted(
                            &format!("unknown resource template {:?}", template.uri),
                            None,
                        ),
                        None,
                    )
                })?
            }
            _ => {
                return Err(ErrorData::invalid_params(
                    "completion/complete refers to something other than a prompt \
                     (ref/prompt) or a resource template (ref/resource)",
                    None,
                ));
            }
        };
        let upstream = self.upstream(index).await?;
        params.meta = None;
        let mut completed = upstream
            .service
            .peer()
            .complete(params)
            .await
            .map_err(|e| passed_on(&upstream.name, "complete an argument", e))?;
        // A 2026-07-28 client reads the type of every result; a classic
        // server gives none.
        completed.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(completed)
    }

    /// Every upstream's resource templates, as they list them (which
    /// upstream a template is noted, for reads and completions).
    pub(crate) async fn resource_templates(&self) -> Vec<ResourceTemplate> {
        let mut listed = Vec::new();
        let mut owners = Vec::new();
        for (index, upstream) in self.inner.upstreams.iter() {
            if upstream.declares_resources() {
                match crate::upstream::listed(
                    upstream,
                    upstream.service.list_all_resource_templates(),
                )
                .await
                {
                    Ok(templates) => {
                        for template in templates {
                            owners.push((template.uri_template.clone(), index));
                            listed.push(template);
                        }
                    }
                    Err(error) => {
                        tracing::debug!(upstream = %upstream.name, %error, "no resource templates");
                    }
                }
            }
        }
        *self.inner.templates.write().await = owners;
        listed
    }

    /// The upstream of resource template `template`.
    async fn template_owner(&self, template: &str) -> Option<usize> {
        if self.inner.upstreams.len() == 1 {
            return Some(0);
        }
        let known = |owners: &[(String, usize)]| {
            owners
                .iter()
                .find(|(listed, _)| listed == template)
                .map(|(_, index)| *index)
        };
        if let Some(index) = known(&self.inner.templates.read().await) {
            return Some(index);
        }
        self.resource_templates().await;
        known(&self.inner.templates.read().await)
    }

    /// The upstream a resource URI is read from: the one that listed it,
    /// else the first whose template it matches; the only upstream, when
    /// there is one (it answers for its own URIs, as it would directly).
    pub(crate) async fn resource_owner(&self, uri: &str) -> Option<usize> {
        if self.inner.upstreams.len() == 1 {
            return Some(0);
        }
        if let Some(index) = self.inner.resources.read().await.get(uri).copied() {
            return Some(index);
        }
        self.list_resources_now().await;
        if let Some(index) = self.inner.resources.read().await.get(uri).copied() {
            return Some(index);
        }
        let by_template = |owners: &[(String, usize)]| {
            owners
                .iter()
                .find(|(template, _)| templates::matches(template, uri))
                .map(|(_, index)| *index)
        };
        if let Some(index) = by_template(&self.inner.templates.read().await) {
            return Some(index);
        }
        self.resource_templates().await;
        by_template(&self.inner.templates.read().await)
    }

    /// `resources/subscribe` of a classic client: sent to the URI's
    /// upstream, and its `notifications/resources/updated` told to this
    /// session from now on.
    ///
    /// # Errors
    /// No upstream has the URI; the upstream's own error.
    pub(crate) async fn subscribe(
        &self,
        params: SubscribeRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let upstream = self.owner_of(&params.uri).await?;
        #[allow(deprecated)]
        upstream
            .service
            .peer()
            .subscribe(SubscribeRequestParams::new(params.uri.clone()))
            .await
            .map_err(|e| passed_on(&upstream.name, "subscribe to a resource", e))?;
        self.pin(cx);
        self.inner
            .downstream
            .notices
            .subscribe(&params.uri, &self.session(), cx.peer.clone());
        Ok(())
    }

    /// `resources/unsubscribe`: this session hears no more of the URI,
    /// and its upstream is told once no client is subscribed.
    ///
    /// # Errors
    /// No upstream has the URI; the upstream's own error.
    pub(crate) async fn unsubscribe(
        &self,
        params: UnsubscribeRequestParams,
    ) -> Result<(), ErrorData> {
        let upstream = self.owner_of(&params.uri).await?;
        let notices = &self.inner.downstream.notices;
        if notices.unsubscribe(&params.uri, &self.session()) || notices.listened(&params.uri) {
            return Ok(());
        }
        #[allow(deprecated)]
        upstream
            .service
            .peer()
            .unsubscribe(UnsubscribeRequestParams::new(params.uri))
            .await
            .map_err(|e| passed_on(&upstream.name, "unsubscribe from a resource", e))
    }

    async fn owner_of(&self, uri: &str) -> Result<&Upstream, ErrorData> {
        let index = self.resource_owner(uri).await.ok_or_else(|| {
            ErrorData::resource_not_found(
                self.unlisted(&format!("unknown resource {uri:?}"), None),
                None,
            )
        })?;
        self.upstream(index).await
    }

    /// What a 2026-07-28 client's `subscriptions/listen` may hear: the
    /// list changes, and the resources of upstreams that take
    /// subscriptions (rmcp narrows it to what [`Gateway::capabilities`]
    /// advertises).
    pub(crate) fn accepted_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        requested.clone()
    }

    /// Serve one `subscriptions/listen` stream until the client ends it:
    /// its resources subscribed to upstream, what changes told on it.
    ///
    /// # Errors
    /// None yet: an upstream that refuses a subscription is logged, and
    /// the stream still hears the rest.
    pub(crate) async fn listen(&self, cx: SubscriptionContext) -> Result<(), ErrorData> {
        let accepted = cx.accepted().clone();
        let uris = accepted.resource_subscriptions.clone().unwrap_or_default();
        for uri in &uris {
            match self.owner_of(uri).await {
                #[allow(deprecated)]
                Ok(upstream) => {
                    let params = SubscribeRequestParams::new(uri.clone());
                    if let Err(error) = upstream.service.peer().subscribe(params).await {
                        tracing::debug!(upstream = %upstream.name, %error, "a listen stream's resource subscription was refused");
                    }
                }
                Err(error) => tracing::debug!(%error, "a listen stream names an unknown resource"),
            }
        }
        let listener = self
            .inner
            .downstream
            .notices
            .listen(cx.sink().clone(), accepted);
        cx.cancelled().await;
        drop(listener);
        for uri in uris {
            let notices = &self.inner.downstream.notices;
            if notices.subscribed(&uri) || notices.listened(&uri) {
                continue;
            }
            if let Ok(upstream) = self.owner_of(&uri).await {
                #[allow(deprecated)]
                let _ = upstream
                    .service
                    .peer()
                    .unsubscribe(UnsubscribeRequestParams::new(uri))
                    .await;
            }
        }
        Ok(())
    }
}
