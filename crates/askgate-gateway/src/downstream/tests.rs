//! Resting Streamable HTTP sessions, as the gateway tells and asks their
//! clients.

use super::*;

/// A client of alice's whose session (rmcp's `id`) rests, listening on
/// `listening` when some.
fn resting(downstream: &Downstream, id: &str, listening: Option<Listening>) {
    let session: Arc<str> = Arc::from(format!("own-{id}"));
    downstream.link(id, &session);
    downstream.clients().push(Client {
        session,
        principal: "alice".into(),
        // Noted as it rests: what `rest` makes of it is looked at.
        reach: Reach::Resting {
            id: id.into(),
            listening: None,
        },
    });
    downstream.rest(id, listening);
}

#[tokio::test]
async fn a_resting_client_listening_on_its_get_stream_hears_of_a_list_change_there() {
    let downstream = Downstream::default();
    let (listening, mut events) = {
        let (sender, events) = mpsc::channel(4);
        (Listening::new(sender), events)
    };
    resting(&downstream, "listens", Some(listening));
    resting(&downstream, "deaf", None);
    let hearers = downstream.classic();
    assert_eq!(hearers.len(), 1, "only the one listening: {hearers:?}");
    downstream
        .notices
        .list_changed(notices::List::Tools, hearers)
        .await;
    let event = events.try_recv().expect("an event on the stream");
    let message = serde_json::to_value(event.message.as_deref()).expect("serializes");
    assert_eq!(
        message["method"], "notifications/tools/list_changed",
        "{message}"
    );
    assert!(events.try_recv().is_err(), "told once");
    // Its client gone, it is not told.
    drop(events);
    assert!(downstream.classic().is_empty());
}

#[tokio::test]
async fn a_session_whose_client_is_asked_outside_a_request_does_not_rest_until_it_answered() {
    let downstream = Downstream::default();
    downstream.link("asked", &Arc::from("own-asked"));
    assert!(downstream.may_rest("asked"));
    let busy = downstream.busy(Some("asked".into()));
    let again = downstream.busy(Some("asked".into()));
    assert!(!downstream.may_rest("asked"));
    drop(busy);
    assert!(!downstream.may_rest("asked"), "asked twice, answered once");
    drop(again);
    assert!(downstream.may_rest("asked"));
}

#[tokio::test]
async fn with_no_waker_a_resting_client_is_not_asked() {
    let downstream = Downstream::default();
    let (sender, _events) = mpsc::channel(4);
    resting(&downstream, "listens", Some(Listening::new(sender)));
    let whom = downstream.whom(Duration::from_millis(1)).await;
    assert!(
        matches!(&whom, Whom::Refused(why) if why.contains("at rest")),
        "{whom:?}"
    );
}
