//! What a settled call's page says of its arguments: that they were erased
//! when the ask ended, only when there were some kept with it.

use askgate_core::Ask;
use serde_json::json;

use super::{ALICE, Page, asked, deploy_form};

/// What the page says of arguments erased as the ask ended.
const ERASED: &str = "arguments were erased";

impl Page {
    /// Park the deploy ask `id` for alice with its call's arguments kept,
    /// sealed, as the gateway parks a confirmed call.
    async fn park_with_arguments(&self, id: &str) {
        let ask = Ask::new(deploy_form()).expect("askable");
        let request = json!({"kind": "form", "ask": ask.to_record()});
        self.store
            .park_with_arguments(&asked(id, "alice", request), Some("aa1.c2VhbGVk"))
            .await
            .expect("parks");
    }

    /// Decline `id` as the person of `session`, then its page.
    async fn declined_page(&self, session: &str, id: &str) -> String {
        let declined = self.answer(session, id, &[("action", "decline")]).await;
        assert!(declined.status.is_redirection(), "{}", declined.body);
        self.get(Some(session), &format!("/asks/{id}")).await.body
    }
}

#[tokio::test]
async fn a_settled_calls_page_says_its_kept_arguments_were_erased() {
    let page = Page::new().await;
    page.park_with_arguments("ask_kept").await;
    let alice = page.sign_in(ALICE).await;
    let settled = page.declined_page(&alice, "ask_kept").await;
    assert!(settled.contains("<strong>declined</strong>"), "{settled}");
    assert!(settled.contains(ERASED), "{settled}");
}

#[tokio::test]
async fn a_settled_calls_page_says_nothing_of_erasing_arguments_it_never_had() {
    // Parked before arguments were kept, or by `askgate ask`.
    let page = Page::new().await;
    page.park("ask_bare", "alice").await;
    let alice = page.sign_in(ALICE).await;
    let settled = page.declined_page(&alice, "ask_bare").await;
    assert!(settled.contains("<strong>declined</strong>"), "{settled}");
    assert!(!settled.contains(ERASED), "{settled}");
    assert!(!settled.contains("arguments-erased"), "{settled}");
}
