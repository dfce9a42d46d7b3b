//! The sessions' cap, rest and keep-alive, on rmcp's session manager
//! with paused time.

use super::*;
use tokio_stream::StreamExt;

const MOST: usize = 16;

/// Sessions of `owners`, at most `MOST`.
fn sessions_of(owners: &Owners) -> Sessions {
    Sessions::new(
        Arc::clone(owners),
        MOST,
        Downstream::default(),
        (Gauge::default(), Gauge::default()),
    )
}

/// A client's handshake, as rmcp keeps it.
fn handshake() -> SessionState {
    SessionState::new(
        serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}
        }))
        .expect("an initialize"),
    )
}

/// A session of alice's whose handshake is done, as the gateway and
/// rmcp know it then.
async fn shaken(sessions: &Sessions, owners: &Owners) -> SessionId {
    let (id, _transport) = sessions.create_session().await.expect("room for it");
    owners
        .lock()
        .expect("not poisoned")
        .insert(id.to_string(), Owner::of("alice".into()));
    sessions
        .handshakes()
        .store(&id, &handshake())
        .await
        .expect("kept");
    sessions
        .downstream
        .link(&id, &Arc::from(format!("own-{id}")));
    id
}

/// Whether session `id`'s handshake is there to wake it (only while the
/// session rests).
async fn kept(sessions: &Sessions, id: &SessionId) -> bool {
    sessions
        .handshakes()
        .load(id)
        .await
        .expect("loads")
        .is_some()
}

/// Whether session `id` is at rest: not there for rmcp, its handshake
/// there to wake it.
async fn rests(sessions: &Sessions, id: &SessionId) -> bool {
    let here = sessions.used().contains_key(id);
    here && kept(sessions, id).await && !sessions.has_session(id).await.expect("answers")
}

/// Session `id`'s client listens on its GET stream (as it would once
/// rmcp's worker fed it: see the `listening` module) while the stream is
/// held.
fn listens(
    sessions: &Sessions,
    id: &SessionId,
) -> impl Stream<Item = ServerSseMessage> + Unpin + use<> {
    let (listening, stream) = listening::open();
    if let Some(used) = sessions.used().get_mut(id) {
        used.listening = Some(listening);
    }
    stream
}

fn counted(sessions: &Sessions) -> (i64, i64) {
    (sessions.counted.awake.get(), sessions.counted.resting.get())
}

#[tokio::test(start_paused = true)]
async fn a_quiet_session_rests_and_its_next_request_wakes_it_as_it_was() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let id = shaken(&sessions, &owners).await;
    tokio::time::sleep(REST_AFTER / 2).await;
    sessions.rest_quiet(Instant::now()).await;
    assert!(!rests(&sessions, &id).await, "not quiet long enough");
    assert_eq!(counted(&sessions), (1, 0));
    tokio::time::sleep(REST_AFTER).await;
    sessions.rest_quiet(Instant::now()).await;
    assert!(rests(&sessions, &id).await);
    assert_eq!(counted(&sessions), (0, 1));
    // Its owner is kept: its calls still take the express lane.
    assert!(
        owners
            .lock()
            .expect("not poisoned")
            .contains_key(id.as_ref())
    );
    // Its next request: rmcp restores it, the worker made again.
    let outcome = sessions.restore_session(id.clone()).await.expect("wakes");
    assert!(matches!(outcome, RestoreOutcome::Restored(_)));
    assert!(sessions.has_session(&id).await.expect("answers"));
    assert!(
        !kept(&sessions, &id).await,
        "an awake session is not woken again"
    );
    assert_eq!(counted(&sessions), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_session_does_not_rest_with_a_request_or_a_stream_open_before_its_handshake_or_pinned() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let requesting = shaken(&sessions, &owners).await;
    let streaming = shaken(&sessions, &owners).await;
    let pinned = shaken(&sessions, &owners).await;
    let (unshaken, _transport) = sessions.create_session().await.expect("room");
    let quiet = shaken(&sessions, &owners).await;
    let request = sessions.hold(&requesting).expect("open");
    let stream = sessions.hold_stream(&streaming).expect("open");
    sessions.downstream.pin(&pinned);
    tokio::time::sleep(REST_AFTER * 10).await;
    sessions.rest_quiet(Instant::now()).await;
    for (id, what) in [
        (&requesting, "a request open"),
        (&streaming, "an answer's stream resumed and open"),
        (&pinned, "told things outside a request"),
        (&unshaken, "no handshake"),
    ] {
        assert!(sessions.has_session(id).await.expect("answers"), "{what}");
    }
    assert!(rests(&sessions, &quiet).await);
    // Once the request and the stream end, and they are quiet: at rest.
    drop((request, stream));
    tokio::time::sleep(REST_AFTER).await;
    sessions.rest_quiet(Instant::now()).await;
    assert!(rests(&sessions, &requesting).await);
    assert!(rests(&sessions, &streaming).await);
    assert!(sessions.has_session(&pinned).await.expect("answers"));
    assert_eq!(counted(&sessions), (2, 3));
}

#[tokio::test(start_paused = true)]
async fn a_session_whose_client_listens_on_its_get_stream_rests_and_the_stream_stays_open() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let id = shaken(&sessions, &owners).await;
    let mut stream = listens(&sessions, &id);
    tokio::time::sleep(REST_AFTER).await;
    sessions.rest_quiet(Instant::now()).await;
    assert!(
        rests(&sessions, &id).await,
        "a GET stream open keeps no session awake"
    );
    // Its worker closed, and its client's stream did not end with it.
    let next = tokio::time::timeout(KEEP_ALIVE * 2, stream.next()).await;
    assert!(next.is_err(), "the stream ended or took an event: {next:?}");
    // The client listening, the session is not closed as idle; once it
    // stops, the session is.
    sessions.close_quiet(Instant::now()).await;
    assert!(rests(&sessions, &id).await);
    drop(stream);
    tokio::time::sleep(KEEP_ALIVE).await;
    sessions.close_quiet(Instant::now()).await;
    assert!(!sessions.used().contains_key(&id));
}

#[tokio::test(start_paused = true)]
async fn a_resting_session_ends_at_its_clients_close_or_the_keep_alive_not_as_its_worker_does() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let closed = shaken(&sessions, &owners).await;
    let kept_alive = shaken(&sessions, &owners).await;
    tokio::time::sleep(REST_AFTER).await;
    sessions.rest_quiet(Instant::now()).await;
    // rmcp reports each worker's end as it closes the session: the
    // session lives on, at rest.
    for id in [&closed, &kept_alive] {
        sessions.close_session(id).await.expect("reported");
        assert!(rests(&sessions, id).await);
    }
    // The client's DELETE ends it.
    sessions.close_session(&closed).await.expect("closes");
    assert!(!kept(&sessions, &closed).await);
    assert!(
        !owners
            .lock()
            .expect("not poisoned")
            .contains_key(closed.as_ref())
    );
    assert!(sessions.downstream.linked(&closed).is_none());
    // The other, quiet for the keep-alive at rest: closed too.
    tokio::time::sleep(KEEP_ALIVE).await;
    sessions.close_quiet(Instant::now()).await;
    assert!(!kept(&sessions, &kept_alive).await);
    assert!(owners.lock().expect("not poisoned").is_empty());
    assert_eq!(counted(&sessions), (0, 0));
}

/// `sessions` filled to `MOST`, each owned by alice.
async fn filled(sessions: &Sessions, owners: &Owners) -> Vec<SessionId> {
    let mut ids = Vec::new();
    for _ in 0..MOST {
        let (id, _transport) = sessions.create_session().await.expect("room for it");
        owners
            .lock()
            .expect("not poisoned")
            .insert(id.to_string(), Owner::of("alice".into()));
        ids.push(id);
    }
    ids
}

#[tokio::test(start_paused = true)]
async fn past_the_cap_a_new_session_is_refused_while_every_one_is_in_use() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let mut ids = filled(&sessions, &owners).await;
    let refused = sessions.create_session().await.err().expect("refused");
    assert!(matches!(refused, SessionsError::Full(MOST)), "{refused}");
    assert!(refused.to_string().contains("16 sessions at once"));
    // One ends (its client's DELETE, or rmcp when it went quiet).
    let closed = ids.pop().expect("an id");
    sessions.close_session(&closed).await.expect("closes");
    assert!(
        !owners
            .lock()
            .expect("not poisoned")
            .contains_key(closed.as_ref())
    );
    assert_eq!(owners.lock().expect("not poisoned").len(), MOST - 1);
    sessions.create_session().await.expect("room again");
}

#[tokio::test(start_paused = true)]
async fn past_the_cap_the_session_idle_longest_is_closed_for_the_new_one() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let ids = filled(&sessions, &owners).await;
    tokio::time::sleep(IDLE).await;
    // Every session but the first sent something since.
    for id in &ids[1..] {
        sessions.touch(id);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first has been idle a minute: closed for the new one.
    let (new, _transport) = sessions.create_session().await.expect("room made");
    assert!(!sessions.has_session(&ids[0]).await.expect("answers"));
    assert!(sessions.has_session(&new).await.expect("answers"));
    assert!(sessions.has_session(&ids[1]).await.expect("answers"));
    assert!(
        !owners
            .lock()
            .expect("not poisoned")
            .contains_key(ids[0].as_ref()),
        "its principal is forgotten with it"
    );
    // The rest were used within the minute: the next is refused.
    let refused = sessions.create_session().await.err().expect("refused");
    assert!(matches!(refused, SessionsError::Full(MOST)), "{refused}");
}

#[tokio::test(start_paused = true)]
async fn a_session_quiet_for_the_keep_alive_is_closed_and_one_with_a_request_or_stream_open_is_not()
{
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let ids = filled(&sessions, &owners).await;
    // The first has a request open the whole time (a call on the
    // express lane, which rmcp never sees); the second sent something
    // a minute ago; the rest sent nothing since they opened.
    let held = sessions.hold(&ids[0]).expect("open");
    // The third's client listens on its GET stream, and sends nothing.
    let listening = listens(&sessions, &ids[2]);
    tokio::time::sleep(KEEP_ALIVE - IDLE).await;
    sessions.touch(&ids[1]);
    tokio::time::sleep(IDLE).await;
    sessions.close_quiet(Instant::now()).await;
    for id in &ids[..3] {
        assert!(sessions.used().contains_key(id), "{id}");
    }
    for id in &ids[3..] {
        assert!(!sessions.has_session(id).await.expect("answers"));
    }
    assert_eq!(owners.lock().expect("not poisoned").len(), 3);
    // Its request ended, its stream closed: each is quiet from then on.
    drop((held, listening));
    tokio::time::sleep(KEEP_ALIVE).await;
    sessions.close_quiet(Instant::now()).await;
    for id in &ids[..3] {
        assert!(!sessions.used().contains_key(id), "{id}");
    }
    assert!(owners.lock().expect("not poisoned").is_empty());
}

#[tokio::test(start_paused = true)]
async fn past_the_cap_a_session_with_a_request_open_is_not_closed_for_a_new_one() {
    let owners = Owners::default();
    let sessions = sessions_of(&owners);
    let ids = filled(&sessions, &owners).await;
    let _held: Vec<Held> = ids
        .iter()
        .map(|id| sessions.hold(id).expect("open"))
        .collect();
    tokio::time::sleep(IDLE * 2).await;
    let refused = sessions.create_session().await.err().expect("refused");
    assert!(matches!(refused, SessionsError::Full(MOST)), "{refused}");
}
