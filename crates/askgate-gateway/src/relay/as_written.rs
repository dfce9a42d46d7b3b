//! A server's own request, sent on to the client with its numbers as the
//! server wrote them, as far as rmcp's typed model lets them be known:
//! rmcp reads a schema's bounds as `f64` and a sampling temperature as
//! `f32`, and would write `0` as `0.0` and `0.7` as `0.699999988079071`.
//! A whole number is sent as an integer (what every JavaScript server,
//! and a Python one giving an `int`, wrote), a temperature in its shortest
//! decimal form, a form without the `mode` rmcp adds to every one.

use rmcp::model::{
    CancelledNotificationParam, ClientResult, CreateMessageRequestParams, CustomRequest,
    ElicitRequestParams, GetMeta, RequestMetaObject, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleServer, ServiceError};
use serde_json::{Number, Value as Json};

use super::CancelOnDrop;

/// Send `elicitation/create` with `params` to the client: its answer.
///
/// # Errors
/// The client could not be asked.
pub(crate) async fn elicit(
    peer: &Peer<RoleServer>,
    params: &ElicitRequestParams,
    meta: Option<&RequestMetaObject>,
) -> Result<Json, String> {
    let mut written = serde_json::to_value(params).map_err(|e| e.to_string())?;
    if let Some(schema) = written.get_mut("requestedSchema") {
        whole_numbers(schema);
    }
    // A form is a form without saying so (and a 2025-06-18 client knows
    // no `mode`); rmcp writes `"mode": "form"` whether the server did or
    // not.
    if let Some(fields) = written.as_object_mut()
        && fields.get("mode").and_then(Json::as_str) == Some("form")
    {
        fields.remove("mode");
    }
    send(peer, "elicitation/create", written, meta)
        .await
        .map_err(|e| format!("the client could not be asked: {e}"))
}

/// Send `sampling/createMessage` with `params` to the client: its answer.
///
/// # Errors
/// The client could not sample.
pub(crate) async fn sample(
    peer: &Peer<RoleServer>,
    params: &CreateMessageRequestParams,
) -> Result<Json, String> {
    let mut written = serde_json::to_value(params).map_err(|e| e.to_string())?;
    if let (Some(temperature), Some(slot)) = (params.temperature, written.get_mut("temperature"))
        && let Some(number) = shortest(temperature)
    {
        *slot = Json::Number(number);
    }
    send(peer, "sampling/createMessage", written, None)
        .await
        .map_err(|e| format!("the client could not sample: {e}"))
}

/// Send `method` with `params` (and the server's own `meta`, but for its
/// progress token: rmcp gives the request one of its own) to the client
/// and wait for its answer; a wait given up (the server withdrew its
/// request, the call ended) tells the client the request is cancelled, so
/// it stops showing the ask.
async fn send(
    peer: &Peer<RoleServer>,
    method: &str,
    params: Json,
    meta: Option<&RequestMetaObject>,
) -> Result<Json, ServiceError> {
    let mut custom = CustomRequest::new(method.to_owned(), Some(params));
    if let Some(meta) = meta {
        let theirs = meta
            .iter()
            .filter(|(key, _)| key.as_str() != "progressToken")
            .map(|(key, value)| (key.clone(), value.clone()));
        let mine: &mut serde_json::Map<String, Json> = custom.get_meta_mut();
        mine.extend(theirs);
    }
    let request = ServerRequest::CustomRequest(custom);
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    let (client, id) = (peer.clone(), handle.id.clone());
    let mut withdrawn = CancelOnDrop::new(async move {
        let reason = Some("the server withdrew its request".to_owned());
        let _ = client
            .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
            .await;
    });
    let answer = handle.await_response().await;
    withdrawn.disarm();
    let answer: ClientResult = answer?;
    serde_json::to_value(answer).map_err(|_| ServiceError::UnexpectedResponse)
}

/// Every whole float in `value` as an integer.
fn whole_numbers(value: &mut Json) {
    match value {
        Json::Number(number) => {
            if let Some(float) = number.as_f64().filter(|_| number.is_f64())
                && float.fract() == 0.0
                && float.abs() < 9_007_199_254_740_992.0
            {
                // Exact: a whole number within f64's integer range.
                #[allow(clippy::cast_possible_truncation)]
                let whole = float as i64;
                *number = Number::from(whole);
            }
        }
        Json::Array(items) => items.iter_mut().for_each(whole_numbers),
        Json::Object(map) => map.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

/// `value` as its shortest decimal form reads back (`0.7`, not
/// `0.699999988079071`).
fn shortest(value: f32) -> Option<Number> {
    let text = value.to_string();
    let float: f64 = text.parse().ok()?;
    if float.fract() == 0.0 && float.abs() < 9_007_199_254_740_992.0 {
        #[allow(clippy::cast_possible_truncation)]
        return Some(Number::from(float as i64));
    }
    Number::from_f64(float)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{shortest, whole_numbers};

    #[test]
    fn whole_bounds_are_integers_and_fractions_stay() {
        let mut schema = json!({"properties": {"n": {"type": "number", "minimum": 0.0,
            "maximum": 1000.0, "default": 2.5}, "s": {"type": "string", "maxLength": 5}}});
        whole_numbers(&mut schema);
        assert_eq!(
            schema.to_string(),
            r#"{"properties":{"n":{"type":"number","minimum":0,"maximum":1000,"default":2.5},"s":{"type":"string","maxLength":5}}}"#
        );
    }

    #[test]
    fn a_temperature_reads_as_written() {
        assert_eq!(shortest(0.7_f32).map(|n| n.to_string()), Some("0.7".into()));
        assert_eq!(shortest(1.0_f32).map(|n| n.to_string()), Some("1".into()));
    }
}
