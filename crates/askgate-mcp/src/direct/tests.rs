//! The direct way's answers, errors and withdrawals, with a line that
//! keeps what it was asked to do.

use std::sync::Mutex;

use rmcp::model::{ElicitationAction, NumberOrString};

use super::*;

/// A client line that keeps each ask's answer sender and each
/// withdrawal, and fails to write when told to.
#[derive(Default)]
struct Kept {
    senders: Mutex<Vec<oneshot::Sender<Reply>>>,
    withdrawn: Mutex<Vec<(RequestId, String)>>,
    broken: bool,
}

impl ClientLine for Kept {
    fn elicit(&self, _params: Json) -> Result<(RequestId, Answer), String> {
        if self.broken {
            return Err("the pipe is closed".into());
        }
        let (sender, answer) = oneshot::channel();
        let mut senders = self.senders.lock().expect("not poisoned");
        senders.push(sender);
        let id = i64::try_from(senders.len()).expect("few asks");
        Ok((NumberOrString::Number(id), answer))
    }

    fn withdraw(&self, id: RequestId, reason: &str) {
        self.withdrawn
            .lock()
            .expect("not poisoned")
            .push((id, reason.to_owned()));
    }
}

impl Kept {
    /// Answer the first ask with `answer`.
    fn answer(&self, answer: Reply) {
        let sender = self.senders.lock().expect("not poisoned").remove(0);
        sender.send(answer).expect("the ask waits");
    }

    fn withdrawn(&self) -> Vec<(RequestId, String)> {
        self.withdrawn.lock().expect("not poisoned").clone()
    }
}

fn params() -> Json {
    serde_json::json!({
        "message": "Run it?",
        "requestedSchema": {
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        },
    })
}

/// A client's `result`, as it wrote it.
fn result(json: &str) -> Reply {
    Ok(RawValue::from_string(json.to_owned()).expect("JSON"))
}

/// Ask by `line` with `timeout`, never cancelled, `answer` given by the
/// client as soon as the ask is out.
async fn asked(
    line: &Kept,
    timeout: Option<Duration>,
    answer: Option<Reply>,
) -> Result<ElicitResult, Unanswered> {
    let asking = elicit(line, params(), timeout, std::future::pending());
    tokio::pin!(asking);
    if let Some(answer) = answer {
        // Out once polled: the ask is written before it waits.
        tokio::select! {
            biased;
            _ = &mut asking => panic!("answered before the client answered"),
            () = tokio::task::yield_now() => {}
        }
        line.answer(answer);
    }
    asking.await
}

#[tokio::test]
async fn the_clients_answer_comes_back_as_rmcp_reads_it() {
    let line = Kept::default();
    let accepted = result(r#"{"action":"accept","content":{"confirm":true}}"#);
    let answer = asked(&line, None, Some(accepted)).await;
    assert!(
        matches!(&answer, Ok(r) if r.action == ElicitationAction::Accept
            && r.content == Some(serde_json::json!({"confirm": true}))),
        "{answer:?}"
    );
    let declined = asked(&line, None, Some(result(r#"{"action":"decline"}"#))).await;
    assert!(
        matches!(&declined, Ok(r) if r.action == ElicitationAction::Decline && r.content.is_none()),
        "{declined:?}"
    );
    assert!(line.withdrawn().is_empty(), "nothing withdrawn");
}

#[tokio::test]
async fn an_error_reply_a_wrong_result_and_a_client_gone_are_told_apart() {
    let line = Kept::default();
    let error = ErrorData::internal_error("the client could not show it", None);
    let failed = asked(&line, None, Some(Err(error))).await;
    assert!(
        matches!(&failed, Err(Unanswered::Failed(ServiceError::McpError(e))) if e.message == "the client could not show it"),
        "{failed:?}"
    );
    // What rmcp reads as an empty result, its roots, or no result it
    // knows: none is the person's answer.
    for other in ["{}", r#"{"roots":[]}"#, r#"{"action":"maybe"}"#, "null"] {
        let wrong = asked(&line, None, Some(result(other))).await;
        assert!(
            matches!(wrong, Err(Unanswered::WrongResult)),
            "{other}: {wrong:?}"
        );
    }
    // The client went away: the answer's sender dropped unsent.
    let asking = elicit(&line, params(), None, std::future::pending());
    let gone = async {
        tokio::task::yield_now().await;
        line.senders.lock().expect("not poisoned").clear();
    };
    let (gone_result, ()) = tokio::join!(asking, gone);
    assert!(
        matches!(
            gone_result,
            Err(Unanswered::Failed(ServiceError::TransportClosed))
        ),
        "{gone_result:?}"
    );
    let broken = Kept {
        broken: true,
        ..Kept::default()
    };
    let unsent = asked(&broken, None, None).await;
    assert!(
        matches!(
            unsent,
            Err(Unanswered::Failed(ServiceError::TransportClosed))
        ),
        "{unsent:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_ask_past_its_timeout_is_withdrawn_with_rmcps_reason() {
    let line = Kept::default();
    let timeout = Duration::from_secs(600);
    let result = asked(&line, Some(timeout), None).await;
    assert!(
        matches!(result, Err(Unanswered::TimedOut(t)) if t == timeout),
        "{result:?}"
    );
    assert_eq!(
        line.withdrawn(),
        [(NumberOrString::Number(1), "request timeout".to_owned())]
    );
}

#[tokio::test]
async fn an_ask_whose_request_is_cancelled_is_withdrawn_saying_so() {
    let line = Kept::default();
    let cancelled = tokio::sync::Notify::new();
    let asking = elicit(&line, params(), None, cancelled.notified());
    let cancel = async {
        tokio::task::yield_now().await;
        cancelled.notify_waiters();
    };
    let (result, ()) = tokio::join!(asking, cancel);
    assert!(
        matches!(result, Err(Unanswered::RequestCancelled)),
        "{result:?}"
    );
    assert_eq!(
        line.withdrawn(),
        [(
            NumberOrString::Number(1),
            "the request this ask was for was cancelled".to_owned()
        )]
    );
}
