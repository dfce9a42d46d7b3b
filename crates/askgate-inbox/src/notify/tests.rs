//! The notifier against a local HTTP receiver (axum on 127.0.0.1:0).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use askgate_core::{Ask, Call, Risk, Surface, confirmation_form};
use askgate_mcp::InboxLinks;
use askgate_mcp::stored::{self, Act, StoredRequest};
use askgate_store::{AskRow, AskStatus, NewAsk, Store};
use askgate_testkit::webhook::{Receiver, Reply};
use jiff::Timestamp;
use serde_json::{Value as Json, json};
use tokio::sync::broadcast;

use super::{Delivery, Event, Notifier, Preset, Webhook};

static NEXT: AtomicU32 = AtomicU32::new(0);

pub(super) async fn sqlite() -> Store {
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("askgate-notify-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    Store::open(&format!("sqlite://{}", dir.join("askgate.db").display()))
        .await
        .expect("the store opens")
}

/// Fast tries, so a failing receiver does not hold a test up.
pub(super) fn webhook(receiver: &Receiver, preset: Preset) -> Webhook {
    let mut headers = BTreeMap::new();
    headers.insert("authorization".to_owned(), "Bearer hook-token".to_owned());
    Webhook {
        timeout: Duration::from_millis(500),
        backoff: Duration::from_millis(10),
        ..Webhook::new(receiver.url.clone(), preset, headers)
    }
}

pub(super) fn inbox() -> InboxLinks {
    InboxLinks::new("https://askgate.example/inbox/").expect("a valid URL")
}

/// A confirmation of a risky call, whose message carries an argument
/// preview (which must never be posted).
pub(super) fn confirmation(id: &str) -> NewAsk {
    let form = confirmation_form(&Call {
        server: "deploy",
        tool: "ship",
        risk: Risk::HighWrite,
        why: None,
        preview: Some("{\"target\": \"ARGUMENT-VALUE\"}"),
        may_have_run: None,
    });
    let ask = Ask::new(form).expect("a valid form");
    NewAsk {
        id: id.to_owned(),
        resume_key: format!("test:{id}"),
        call_key: None,
        principal: "alice".into(),
        request: StoredRequest::form(&ask).to_json(),
        server: Some("deploy".into()),
        tool: Some("ship".into()),
        risk: Some("high_write".into()),
        created_at: Timestamp::now(),
        expires_at: None,
        panel: None,
    }
}

/// Answer the ask from the CLI, with a value that must never be posted.
async fn answer(store: &Store, row: &AskRow, value: bool) -> AskRow {
    let mut content = serde_json::Map::new();
    content.insert("confirm".into(), Json::Bool(value));
    let settlement = stored::settle(&row.ask.request, Act::Answer(content), "bob", Surface::Cli)
        .expect("the answer passes its checks");
    store
        .settle(&row.ask.id, &settlement, Timestamp::now())
        .await
        .expect("settles")
}

/// The next post this notifier made (not the ones another claimed).
pub(super) async fn next_delivery(deliveries: &mut broadcast::Receiver<Delivery>) -> Delivery {
    loop {
        let delivery = tokio::time::timeout(Duration::from_secs(60), deliveries.recv())
            .await
            .expect("a post ends")
            .expect("not lagged");
        if delivery.claimed {
            return delivery;
        }
    }
}

/// A notifier posting with a preset to a receiver that answers as told,
/// listening to a fresh SQLite store: each delivery as it ends.
pub(super) struct Posting {
    pub(super) receiver: Receiver,
    pub(super) store: Store,
    pub(super) notifier: Notifier,
    pub(super) deliveries: broadcast::Receiver<Delivery>,
    _listening: tokio::task::JoinHandle<()>,
}

impl Posting {
    pub(super) async fn start(answers: Vec<Reply>, preset: Preset) -> Self {
        let receiver = Receiver::answering(answers).await;
        let store = sqlite().await;
        let notifier =
            Notifier::new(store.clone(), webhook(&receiver, preset), inbox()).expect("builds");
        let deliveries = notifier.deliveries();
        let _listening = notifier.listen();
        Self {
            receiver,
            store,
            notifier,
            deliveries,
            _listening,
        }
    }
}

#[tokio::test]
async fn parking_an_ask_posts_its_facts_once_and_no_arguments() {
    let mut posting = Posting::start(Vec::new(), Preset::Generic).await;
    let row = posting
        .store
        .park(&confirmation("ask_p1"))
        .await
        .expect("parks");
    posting
        .store
        .park(&confirmation("ask_p1"))
        .await
        .expect("parks again");
    let delivery = next_delivery(&mut posting.deliveries).await;
    assert!(delivery.delivered, "{delivery:?}");
    posting.notifier.flush(Duration::from_secs(10)).await;
    let posts = posting.receiver.posts.all();
    assert_eq!(posts.len(), 1, "one post per new ask");
    let (headers, body) = &posts[0];
    assert_eq!(
        body,
        &json!({
            "event": "parked",
            "id": "ask_p1",
            "title": "Confirm ship on deploy (risk: high write)",
            "server": "deploy",
            "tool": "ship",
            "risk": "high_write",
            "status": "pending",
            "link": "https://askgate.example/inbox/asks/ask_p1",
            "at": row.ask.created_at.to_string(),
        })
    );
    assert_eq!(headers["authorization"], "Bearer hook-token");
    assert!(!body.to_string().contains("ARGUMENT-VALUE"));
}

#[tokio::test]
async fn settling_an_ask_posts_once_without_the_answer() {
    let mut posting = Posting::start(Vec::new(), Preset::Generic).await;
    let row = posting
        .store
        .park(&confirmation("ask_s1"))
        .await
        .expect("parks");
    next_delivery(&mut posting.deliveries).await;
    let settled = answer(&posting.store, &row, false).await;
    // The same news told twice (as `askgate ask` does) is posted once.
    posting.notifier.post(Event::Settled, &settled);
    let delivery = next_delivery(&mut posting.deliveries).await;
    assert_eq!((delivery.event, delivery.delivered), (Event::Settled, true));
    posting.notifier.flush(Duration::from_secs(10)).await;
    let bodies = posting.receiver.bodies();
    let settled_posts: Vec<&Json> = bodies.iter().filter(|b| b["event"] == "settled").collect();
    assert_eq!(settled_posts.len(), 1, "{bodies:?}");
    let body = settled_posts[0];
    assert_eq!(body["status"], "answered");
    assert_eq!(body["id"], "ask_s1");
    assert_eq!(body["at"], settled.settled_at.expect("settled").to_string());
    let mut keys: Vec<&String> = body.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "at", "event", "id", "link", "risk", "server", "status", "title", "tool"
        ],
        "the facts, and no answer"
    );
}

#[tokio::test]
async fn a_receiver_failing_twice_gets_the_post_on_the_third_try() {
    let mut posting = Posting::start(
        vec![Reply::Status(500), Reply::Status(503)],
        Preset::Generic,
    )
    .await;
    posting
        .store
        .park(&confirmation("ask_r1"))
        .await
        .expect("parks");
    let delivery = next_delivery(&mut posting.deliveries).await;
    assert_eq!(
        (delivery.delivered, delivery.tries, delivery.status),
        (true, 3, Some(200))
    );
    assert_eq!(posting.receiver.posts.all().len(), 3);
}

#[tokio::test]
async fn a_refusing_receiver_is_not_tried_again() {
    let mut posting = Posting::start(vec![Reply::Status(404)], Preset::Generic).await;
    posting
        .store
        .park(&confirmation("ask_r2"))
        .await
        .expect("parks");
    let delivery = next_delivery(&mut posting.deliveries).await;
    assert_eq!(
        (delivery.delivered, delivery.tries, delivery.status),
        (false, 1, Some(404))
    );
}

#[tokio::test]
async fn a_post_to_a_closed_port_is_told_as_failed_with_its_event() {
    // A loopback port nobody listens on: every try fails to connect.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port");
    let store = sqlite().await;
    let webhook = Webhook {
        tries: 2,
        backoff: Duration::from_millis(10),
        ..Webhook::new(
            format!("http://{closed}/hook"),
            Preset::Generic,
            BTreeMap::new(),
        )
    };
    let failed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let told = std::sync::Arc::clone(&failed);
    let notifier = Notifier::new(store.clone(), webhook, inbox())
        .expect("builds")
        .on_failed_post(move |event| {
            told.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(event);
        });
    let mut deliveries = notifier.deliveries();
    let _listening = notifier.listen();
    store.park(&confirmation("ask_f1")).await.expect("parks");
    let delivery = next_delivery(&mut deliveries).await;
    assert_eq!((delivery.delivered, delivery.tries), (false, 2));
    // Told before the delivery is: once, for the post, not for each try.
    let failed = failed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert_eq!(failed, [Event::Parked]);
}

#[tokio::test]
async fn a_receiver_that_never_answers_does_not_hold_the_ask() {
    let mut posting = Posting::start(vec![Reply::Never; 10], Preset::Generic).await;
    let row = posting
        .store
        .park(&confirmation("ask_n1"))
        .await
        .expect("parks");
    let settled = answer(&posting.store, &row, true).await;
    assert_eq!(
        settled.status,
        AskStatus::Answered,
        "settled while posts hang"
    );
    for _ in 0..2 {
        let delivery = next_delivery(&mut posting.deliveries).await;
        assert!(!delivery.delivered, "{delivery:?}");
        assert_eq!((delivery.tries, delivery.status), (3, None));
    }
}

#[tokio::test]
async fn the_slack_preset_posts_text_and_blocks() {
    let mut posting = Posting::start(Vec::new(), Preset::Slack).await;
    posting
        .store
        .park(&confirmation("ask_k1"))
        .await
        .expect("parks");
    next_delivery(&mut posting.deliveries).await;
    let body = &posting.receiver.bodies()[0];
    assert_eq!(
        body["text"],
        "An ask waits for a person: Confirm ship on deploy (risk: high write)"
    );
    let blocks = body["blocks"].as_array().expect("blocks");
    let kinds: Vec<&str> = blocks
        .iter()
        .map(|b| b["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(kinds, ["section", "context", "section"]);
    assert_eq!(
        blocks[1]["elements"][0]["text"],
        "deploy/ship · risk high_write · pending · `ask_k1`"
    );
    assert_eq!(
        blocks[2]["text"]["text"],
        "<https://askgate.example/inbox/asks/ask_k1|Open in the askgate inbox>"
    );
    assert!(!body.to_string().contains("ARGUMENT-VALUE"));
}

#[test]
fn a_webhook_url_and_header_values_never_show_in_debug() {
    let mut headers = BTreeMap::new();
    headers.insert("authorization".to_owned(), "Bearer hook-token".to_owned());
    let hook = Webhook::new(
        "https://hooks.slack.example/services/T0/B0/s3cret".into(),
        Preset::Slack,
        headers,
    );
    let shown = format!("{hook:?}");
    assert!(
        !shown.contains("s3cret") && !shown.contains("hook-token"),
        "{shown}"
    );
    assert!(shown.contains("hooks.slack.example"), "{shown}");
}

/// The words a hostile upstream or model puts in its form's message.
const HOSTILE: &str = "URGENT <!here> click https://evil.example";

/// An upstream's own ask (not a confirmation) from `deploy` during a call
/// to `ship`, whose message is [`HOSTILE`].
fn upstreams_own_ask(id: &str) -> NewAsk {
    let form: askgate_core::Form = serde_json::from_value(json!({
        "message": format!("{HOSTILE}\nsecond line"),
        "fields": [{"id": "region", "title": "Region", "type": "text"}]
    }))
    .expect("a form");
    let ask = Ask::new(form).expect("a valid form");
    NewAsk {
        request: StoredRequest::form(&ask).to_json(),
        risk: None,
        ..confirmation(id)
    }
}

/// Whether `text` quotes any of [`HOSTILE`].
fn quotes_hostile(text: &str) -> bool {
    [
        "URGENT",
        "<!here>",
        "&lt;!here&gt;",
        "click",
        "evil.example",
    ]
    .iter()
    .any(|part| text.contains(part))
}

#[tokio::test]
async fn a_generic_title_never_carries_the_words_an_upstream_wrote() {
    let mut posting = Posting::start(Vec::new(), Preset::Generic).await;
    posting
        .store
        .park(&upstreams_own_ask("ask_h1"))
        .await
        .expect("parks");
    next_delivery(&mut posting.deliveries).await;
    let body = &posting.receiver.bodies()[0];
    assert_eq!(body["title"], "deploy asks for input (ship)");
    assert!(!quotes_hostile(&body.to_string()), "{body}");
}

#[tokio::test]
async fn a_slack_post_never_carries_the_words_an_upstream_wrote() {
    let mut posting = Posting::start(Vec::new(), Preset::Slack).await;
    posting
        .store
        .park(&upstreams_own_ask("ask_h2"))
        .await
        .expect("parks");
    next_delivery(&mut posting.deliveries).await;
    let body = &posting.receiver.bodies()[0];
    assert_eq!(
        body["text"],
        "An ask waits for a person: deploy asks for input (ship)"
    );
    assert!(!quotes_hostile(&body.to_string()), "{body}");
}

/// `ask` as a row of the store, pending.
fn row_of(ask: NewAsk) -> AskRow {
    AskRow {
        ask,
        status: AskStatus::Pending,
        reply: None,
        outcome: None,
        answered_by: None,
        answered_via: None,
        settled_at: None,
    }
}

#[test]
fn a_name_that_mentions_the_channel_is_only_text_in_slack() {
    let row = row_of(NewAsk {
        server: Some("ops <!channel>\n<https://evil.example|x>".into()),
        ..upstreams_own_ask("ask_h3")
    });
    let body = super::body::Facts::of(Event::Parked, &row, None).slack();
    let text = body["text"].as_str().unwrap_or_default();
    assert_eq!(
        text,
        "An ask waits for a person: ops &lt;!channel&gt; &lt;https://evil.example|x&gt; asks for input (ship)"
    );
    assert!(!body.to_string().contains("<!channel>"), "{body}");
}

#[test]
fn a_question_set_is_titled_by_where_it_comes_from_not_its_preamble() {
    let set = |source: &str| -> StoredRequest {
        let set: askgate_core::QuestionSet = serde_json::from_value(json!({
            "source": source,
            "preamble": HOSTILE,
            "questions": [{"id": "env", "prompt": HOSTILE, "defaults": ["staging"],
                "options": [{"value": "staging", "label": "Staging"}]}]
        }))
        .expect("a question set");
        StoredRequest::QuestionSet { set }
    };
    let titled = |request: StoredRequest| {
        super::title::of(&NewAsk {
            request: request.to_json(),
            risk: None,
            ..confirmation("ask_q1")
        })
    };
    assert_eq!(titled(set("intake")), "Questions before deploy/ship");
    assert_eq!(titled(set("ask")), "deploy asks questions (ship)");
    let junk = NewAsk {
        request: json!({"junk": 1}),
        ..confirmation("ask_q2")
    };
    assert_eq!(super::title::of(&junk), "An ask");
}

#[tokio::test]
async fn two_replicas_on_one_postgres_post_each_event_once() {
    let Ok(base) = std::env::var("ASKGATE_TEST_POSTGRES_URL") else {
        eprintln!(
            "notice: ASKGATE_TEST_POSTGRES_URL is not set; the two-replica webhook test is skipped"
        );
        return;
    };
    let schema = format!(
        "askgate_notify_{}_{}",
        std::process::id(),
        Timestamp::now().as_millisecond()
    );
    let admin = sqlx::postgres::PgPool::connect(&base)
        .await
        .expect("PostgreSQL is reachable");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&admin)
        .await
        .expect("creates a schema");
    let separator = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{separator}options=-c%20search_path%3D{schema}");
    let one = Store::open(&url).await.expect("replica 1 opens");
    let two = Store::open(&url).await.expect("replica 2 opens");
    let receiver = Receiver::start().await;
    let mut deliveries = Vec::new();
    let mut listening = Vec::new();
    let mut notifiers = Vec::new();
    for store in [&one, &two] {
        let notifier = Notifier::new(store.clone(), webhook(&receiver, Preset::Generic), inbox())
            .expect("builds");
        deliveries.push(notifier.deliveries());
        listening.push(notifier.listen());
        notifiers.push(notifier);
    }
    let row = one
        .park(&confirmation("ask_pg1"))
        .await
        .expect("parks on 1");
    answer(&two, &row, true).await;
    // Each replica hears of each event (and posts it, or finds it claimed).
    let mut heard = std::collections::BTreeSet::new();
    let [first, second] = &mut deliveries[..] else {
        unreachable!("two replicas")
    };
    while heard.len() < 4 {
        tokio::select! {
            Ok(d) = first.recv() => heard.insert((1, d.event.as_str())),
            Ok(d) = second.recv() => heard.insert((2, d.event.as_str())),
            () = tokio::time::sleep(Duration::from_secs(60)) => panic!("not heard within a minute: {heard:?}"),
        };
    }
    for notifier in &notifiers {
        notifier.flush(Duration::from_secs(30)).await;
    }
    let mut events: Vec<String> = receiver
        .bodies()
        .iter()
        .map(|b| b["event"].as_str().unwrap_or("").to_owned())
        .collect();
    events.sort();
    assert_eq!(events, ["parked", "settled"], "one post per event");
    one.close().await;
    two.close().await;
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
        .execute(&admin)
        .await;
}
