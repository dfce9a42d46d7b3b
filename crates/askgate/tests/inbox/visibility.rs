//! Whose asks a person sees: the principals they answer for, a listing over
//! several, the operator's view.

use std::time::Duration;

use askgate_core::Ask;
use askgate_store::Store;
use jiff::Timestamp;
use reqwest::StatusCode;
use serde_json::json;

use super::{BOB, CAROL, asked_of, form, get, park, sign_in, start};

#[tokio::test]
async fn a_person_sees_only_the_asks_of_the_principals_they_answer_for() {
    let server = start().await;
    park(&server, "ask_alice", "alice").await;
    park(&server, "ask_bob", "bob").await;
    park(&server, "ask_agent", "ci-agent").await;
    let carol = sign_in(&server, CAROL).await;
    let (_, list) = get(&server, &carol, "/").await;
    assert!(
        list.contains("ask_alice") && list.contains("ask_agent") && !list.contains("ask_bob"),
        "{list}"
    );
    assert!(
        list.contains("carol"),
        "the page says who is signed in: {list}"
    );
    let (status, _) = get(&server, &carol, "/asks/ask_agent").await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get(&server, &carol, "/asks/ask_bob").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_listing_of_several_principals_pages_through_all_of_them_once() {
    let server = start().await;
    let store = Store::open(&server.store_url).await.expect("opens");
    let start = Timestamp::now();
    let ask = Ask::new(form()).expect("askable");
    // 60 asks, alternating between carol's two principals, and bob's
    // between them: 50 on the first page, 10 on the second.
    for n in 0..90u32 {
        let principal = ["alice", "ci-agent", "bob"][n as usize % 3];
        let request = json!({"kind": "form", "ask": ask.to_record()});
        let at = start + Duration::from_secs(u64::from(n));
        let asked = asked_of(&format!("ask_{n:03}"), principal, request, at);
        store.park(&asked).await.expect("parks");
    }
    let carol = sign_in(&server, CAROL).await;
    let ids = |html: &str| -> Vec<String> {
        html.split("href=\"/asks/")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_owned)
            .collect()
    };
    let (_, first) = get(&server, &carol, "/").await;
    let first_ids = ids(&first);
    assert_eq!(first_ids.len(), 50, "{first_ids:?}");
    let next = first
        .split("class=\"next\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link to the older asks")
        .replace("&amp;", "&");
    let (_, second) = get(&server, &carol, &next).await;
    let second_ids = ids(&second);
    assert_eq!(second_ids.len(), 10, "{second_ids:?}");
    assert!(!second.contains("class=\"next\""), "the last page");
    let mut seen: Vec<String> = first_ids.into_iter().chain(second_ids).collect();
    let newest_first = seen.clone();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 60, "each of carol's asks once");
    let expected: Vec<String> = (0..90u32)
        .rev()
        .filter(|n| n % 3 != 2)
        .map(|n| format!("ask_{n:03}"))
        .collect();
    assert_eq!(newest_first, expected, "newest first, none of bob's");
}

#[tokio::test]
async fn a_person_sees_only_their_own_asks_and_the_operator_sees_all() {
    let server = start().await;
    park(&server, "ask_alice", "alice").await;
    park(&server, "ask_bob", "bob").await;
    let bob = sign_in(&server, BOB).await;
    let (_, list) = get(&server, &bob, "/").await;
    assert!(
        list.contains("ask_bob") && !list.contains("ask_alice"),
        "{list}"
    );
    let (status, _) = get(&server, &bob, "/asks/ask_alice").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another's ask is not shown, nor said to exist"
    );
    let operator = sign_in(&server, &server.operator_token.clone()).await;
    let (_, list) = get(&server, &operator, "/").await;
    assert!(
        list.contains("ask_bob") && list.contains("ask_alice"),
        "{list}"
    );
    let (_, filtered) = get(&server, &operator, "/?server=nowhere").await;
    assert!(!filtered.contains("ask_bob"), "filtered by server");
}
