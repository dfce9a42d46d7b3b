//! The suite's resources: a text and a binary one, one to watch
//! (`resources/subscribe`), a template whose reads fill in its `{id}`, and
//! the error for a URI no resource has (SEP-2164: invalid params, the URI
//! in its data).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde_json::json;

use crate::tool_fixtures::PNG;

const TEXT: &str = "test://static-text";
const BINARY: &str = "test://static-binary";
const WATCHED: &str = "test://watched-resource";

/// The template's URI, `{id}` filled in by a read.
const TEMPLATE: &str = "test://template/{id}/data";
const TEMPLATE_HEAD: &str = "test://template/";
const TEMPLATE_TAIL: &str = "/data";

/// The resources.
pub(crate) fn resources() -> ListResourcesResult {
    let resource = |uri: &str, name: &str, description: &str, mime: &str| {
        Resource::new(uri, name)
            .with_description(description)
            .with_mime_type(mime)
    };
    ListResourcesResult::with_all_items(vec![
        resource(TEXT, "static-text", "A static text resource", "text/plain"),
        resource(BINARY, "static-binary", "A static PNG image", "image/png"),
        resource(
            WATCHED,
            "watched-resource",
            "A resource to subscribe to",
            "text/plain",
        ),
    ])
}

/// The resource templates.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(TEMPLATE, "template-data")
            .with_description("Data for the id in the URI")
            .with_mime_type("application/json"),
    ])
}

/// The id a URI fills the template with, if it matches it.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix(TEMPLATE_HEAD)?
        .strip_suffix(TEMPLATE_TAIL)?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// The error for a URI no resource or template has (SEP-2164).
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found("Resource not found", Some(json!({"uri": uri})))
}

/// The contents of the resource at `uri`.
///
/// # Errors
///
/// Resource not found (-32602 on 2026-07-28, -32002 before) naming the URI.
pub(crate) fn read(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let contents = match uri {
        TEXT => ResourceContents::text("This is the content of the static text resource.", uri),
        BINARY => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
        WATCHED => ResourceContents::text("The watched resource, as it is now.", uri),
        _ => {
            let id = template_id(uri).ok_or_else(|| not_found(uri))?;
            let data =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            ResourceContents::text(data.to_string(), uri).with_mime_type("application/json")
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The completions of the template's `id` starting with `prefix`.
pub(crate) fn complete_id(template: &str, argument: &str, prefix: &str) -> Vec<String> {
    if template != TEMPLATE || argument != "id" {
        return Vec::new();
    }
    ["1", "2", "3", "123"]
        .into_iter()
        .filter(|id| id.starts_with(prefix))
        .map(String::from)
        .collect()
}

/// The URIs a session subscribed to.
#[derive(Debug, Clone, Default)]
pub(crate) struct Subscriptions {
    uris: Arc<Mutex<BTreeSet<String>>>,
}

impl Subscriptions {
    /// Watch `uri` (a resource or a templated URI).
    ///
    /// # Errors
    ///
    /// Resource not found when no resource has `uri`.
    pub(crate) fn subscribe(&self, uri: &str) -> Result<(), ErrorData> {
        read(uri)?;
        if let Ok(mut uris) = self.uris.lock() {
            uris.insert(uri.to_owned());
        }
        Ok(())
    }

    /// Stop watching `uri` (watched or not: either way it is not watched).
    pub(crate) fn unsubscribe(&self, uri: &str) {
        if let Ok(mut uris) = self.uris.lock() {
            uris.remove(uri);
        }
    }
}
