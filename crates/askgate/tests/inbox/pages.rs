//! Signed links, live news of a new ask, and a question set answered or skipped
//! on the page.

use std::time::Duration;

use askgate_core::LinkSigner;
use askgate_store::{AskStatus, Decision};
use askgate_testkit::page::hidden;
use jiff::Timestamp;
use reqwest::StatusCode;
use reqwest::header::COOKIE;
use serde_json::{Value as Json, json};

use askgate_store::{NewAsk, Store};

use super::{
    ALICE, BOB, Server, asked_of, cookie, get, park, park_request, post_answer, question_set,
    row_of, sign_in, start,
};

#[tokio::test]
async fn a_signed_link_opens_its_ask_once_for_its_person_only() {
    let server = start().await;
    let store = park(&server, "ask_link", "alice").await;
    let key = std::fs::read(format!(
        "{}.key",
        server.store_url.trim_start_matches("sqlite://")
    ))
    .expect("the key the inbox made");
    let signer = LinkSigner::new(key);
    let expires = Timestamp::now() + Duration::from_secs(600);
    let link = |nonce: &str| {
        format!(
            "{}/asks/ask_link?link={}",
            server.base,
            signer.sign("ask_link", expires, nonce)
        )
    };

    // Not signed in: the link opens that ask, and only that ask.
    let first = link("nonce-one");
    let opened = server.http.get(&first).send().await.expect("opens");
    assert_eq!(opened.status(), StatusCode::SEE_OTHER);
    let session = cookie(&opened, "askgate_session").expect("a session for the ask");
    let (status, page) = get(&server, &session, "/asks/ask_link").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Deploy web to production?"));
    assert!(
        page.contains("<strong>link:alice</strong>"),
        "the link's session is a person of its own, for alice's ask: {page}"
    );
    let (status, _) = get(&server, &session, "/").await;
    assert_eq!(
        status,
        StatusCode::SEE_OTHER,
        "a link's session sees its ask only"
    );

    // Used once: refused after.
    let again = server.http.get(&first).send().await.expect("a page");
    assert_eq!(again.status(), StatusCode::GONE);

    // Altered: refused.
    let altered = first.replace("nonce-one", "nonce-two");
    let refused = server.http.get(&altered).send().await.expect("a page");
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // Opened by someone signed in as another principal: refused, audited.
    let bob = sign_in(&server, BOB).await;
    let mismatch = server
        .http
        .get(link("nonce-three"))
        .header(COOKIE, &bob)
        .send()
        .await
        .expect("a page");
    assert_eq!(mismatch.status(), StatusCode::FORBIDDEN);
    let audit = store.audit_of_ask("ask_link").await.expect("reads");
    assert_eq!(audit.len(), 1, "the refused opening is audited");
    assert_eq!(audit[0].entry.decision, Decision::Blocked);
    assert_eq!(audit[0].entry.answered_by.as_deref(), Some("bob"));
}

#[tokio::test]
async fn an_open_listing_hears_of_a_new_ask() {
    let server = start().await;
    let store = park(&server, "ask_first", "alice").await;
    let session = sign_in(&server, ALICE).await;
    let mut events = server
        .http
        .get(format!("{}/events", server.base))
        .header(COOKIE, &session)
        .send()
        .await
        .expect("the event stream");
    assert_eq!(events.status(), StatusCode::OK);
    assert!(
        events.headers()["content-type"]
            .to_str()
            .expect("text")
            .starts_with("text/event-stream")
    );
    drop(store);
    park(&server, "ask_second", "alice").await;
    let mut seen = String::new();
    let heard = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(chunk) = events.chunk().await.expect("a chunk") {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("event: changed") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "no change event: {seen:?}");
}

#[tokio::test]
async fn a_question_set_is_answered_or_skipped_on_the_page() {
    let server = start().await;
    let store = park_request(&server, "ask_set", "alice", question_set()).await;
    park_request(&server, "ask_skip", "alice", question_set()).await;
    let session = sign_in(&server, ALICE).await;

    let (status, page) = get(&server, &session, "/asks/ask_set").await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Before the deploy:") && page.contains("Which regions?"));
    assert!(page.contains("type=\"checkbox\"") && page.contains("data-hotkey=\"p\""));
    assert!(
        page.contains("value=\"skip\""),
        "a question set can be skipped"
    );
    let csrf = hidden(&page, "csrf");
    let answer = [
        ("csrf", csrf.as_str()),
        ("action", "accept"),
        ("q.env", "prod"),
        ("q.regions", "us"),
        ("q.regions.other", "apac"),
    ];
    let (status, _) = post_answer(&server, &session, "ask_set", &answer).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_set").await;
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_via.as_deref(), Some("web"));
    let answers = &row.outcome.expect("an outcome")["answers"];
    let values = |i: usize| -> Vec<Json> {
        answers[i]["chosen"]
            .as_array()
            .expect("chosen")
            .iter()
            .map(|c| c["value"].clone())
            .collect()
    };
    assert_eq!(values(0), [json!("prod")]);
    assert_eq!(values(1), [json!("us"), json!("apac")]);
    let (_, settled) = get(&server, &session, "/asks/ask_set").await;
    assert!(
        settled.contains("Americas, apac"),
        "the settled page shows the answers as the person read them: {settled}"
    );

    let (_, page) = get(&server, &session, "/asks/ask_skip").await;
    let csrf = hidden(&page, "csrf");
    let skip = [("csrf", csrf.as_str()), ("action", "skip")];
    let (status, _) = post_answer(&server, &session, "ask_skip", &skip).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let row = row_of(&store, "ask_skip").await;
    assert_eq!(row.status, AskStatus::Skipped);
    let answers = &row.outcome.expect("an outcome")["answers"];
    assert_eq!(
        answers[0]["chosen"][0]["value"], "staging",
        "the pre-picked answers stand"
    );
}

/// A question set for alice, parked a minute past its expiry.
async fn park_overdue(server: &Server, id: &str) -> Store {
    let store = Store::open(&server.store_url).await.expect("opens");
    let now = Timestamp::now();
    let ask = NewAsk {
        expires_at: Some(now - jiff::SignedDuration::from_secs(60)),
        ..asked_of(
            id,
            "alice",
            question_set(),
            now - jiff::SignedDuration::from_secs(120),
        )
    };
    store.park(&ask).await.expect("parks");
    store
}

#[tokio::test]
async fn an_ask_past_its_expiry_is_expired_everywhere_and_a_late_answer_keeps_what_was_typed() {
    let server = start().await;
    park_request(&server, "ask_live", "alice", question_set()).await;
    let store = park_overdue(&server, "ask_opened").await;
    park_overdue(&server, "ask_typed").await;
    park_overdue(&server, "ask_swept").await;
    let session = sign_in(&server, ALICE).await;
    let (_, live) = get(&server, &session, "/asks/ask_live").await;
    let csrf = hidden(&live, "csrf");

    // Opened past its expiry: read-only, said so, and expired in the store.
    let (status, page) = get(&server, &session, "/asks/ask_opened").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("expired") && page.contains("no default was applied"),
        "the page says it expired"
    );
    assert!(!page.contains("name=\"action\""), "no form to answer");
    assert_eq!(
        row_of(&store, "ask_opened").await.status,
        AskStatus::Expired
    );

    // Answered late: refused, and what the person typed is on the page.
    let late = [
        ("csrf", csrf.as_str()),
        ("action", "accept"),
        ("q.env", "prod"),
        ("q.regions.other", "antarctica-42"),
    ];
    let (status, page) = post_answer(&server, &session, "ask_typed", &late).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert!(
        page.contains("already <strong>expired</strong>"),
        "says why"
    );
    assert!(page.contains("antarctica-42"), "what was typed is kept");
    let row = row_of(&store, "ask_typed").await;
    assert_eq!(row.status, AskStatus::Expired);
    assert!(row.reply.is_none(), "no default, no answer was applied");

    // Never opened: the sweep expires it.
    askgate_testkit::within("the sweep expires the overdue ask", async {
        while row_of(&store, "ask_swept").await.status != AskStatus::Expired {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let (_, listing) = get(&server, &session, "/").await;
    assert!(listing.contains("ask_live"), "the live ask is listed");
    assert!(
        !listing.contains("ask_swept") && !listing.contains("ask_opened"),
        "expired asks are not listed as waiting"
    );
}
