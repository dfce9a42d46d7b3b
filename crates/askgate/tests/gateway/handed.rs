//! A classic client's `tools/call` the express lane leaves — here, calls
//! a person confirms — handed to the gateway's handler by the stdio tap
//! rather than through rmcp's service loop: the client, the upstream and
//! the records see what they see through rmcp (`express_lane = false`),
//! and the gateway's log says which path the call took, so a call rmcp
//! served cannot pass for a handed one.

use askgate_store::Decision;
use askgate_testkit::Manner;
use askgate_testkit::gateway::ledger;
use askgate_testkit::mcp::{call, cancel_once_asked, send_call, text};
use askgate_testkit::within;
use serde_json::{Value as Json, json};

use super::decided_lane::{CONFIRMED, records, through_rmcp};
use super::raw::Raw;
use super::{person, setup};

/// What the gateway logs (at debug) when the tap hands a call to the
/// handler.
pub(super) const HANDED: &str = "handed to its handler by the client's side";

/// What it logs (at debug) when it writes a handed call's ask to the
/// client itself.
const ASK_WRITTEN: &str = "an ask of a handed call, written to the client";

/// The first id the gateway gives an ask it writes itself (2^41).
const FIRST_ASK_ID: u64 = 1 << 41;

/// Through a gateway with `config`, a write its person is asked to
/// confirm, cancelled by its client while the ask is up: whether it was
/// handed, how many asks the client saw withdrawn, what a later read
/// says, and the ledger and the audited decisions.
async fn cancelled_while_asked(config: &str) -> (bool, usize, String, Vec<String>, Vec<Decision>) {
    // A person who never answers: the ask stays up until it is withdrawn.
    let away = person(json!({"elicitation": {"form": {}}}), vec![]).in_manner(Manner::Away);
    let h = setup()
        .config(config)
        .logging("info,askgate_gateway::express=debug")
        .connect(away)
        .await;
    let write = call("write_note", json!({"name": "todo", "text": "gone"}));
    let handle = send_call(h.client.peer(), write).await;
    // The Stop button once the person is asked: the ask is withdrawn from
    // the client.
    cancel_once_asked(&h.person, handle, Some("stopped".into())).await;
    h.log.line_with(&["call decided", "blocked"]).await;
    // The gateway goes on serving the client, and the write never ran.
    let read = call("read_note", json!({"name": "todo"}));
    let read = within("a later read", h.client.call_tool(read))
        .await
        .expect("the read answers");
    let handed =
        h.log.has_line_with(&[HANDED, "write_note"]) && h.log.has_line_with(&[ASK_WRITTEN]);
    assert_eq!(
        handed,
        h.log.has_line_with(&[ASK_WRITTEN]),
        "the call and its ask took one path"
    );
    let withdrawn = h.person.withdrawn.all().len();
    let (ledger, decisions) = records(h).await;
    (handed, withdrawn, text(&read), ledger, decisions)
}

#[tokio::test]
async fn a_confirmed_call_cancelled_while_its_person_is_asked_is_withdrawn_and_never_sent_on_either_path()
 {
    let on = cancelled_while_asked(CONFIRMED).await;
    let off = cancelled_while_asked(&through_rmcp()).await;
    assert!(
        on.0 && !off.0,
        "handed, its ask written by the gateway, then rmcp: {} {}",
        on.0,
        off.0
    );
    assert_eq!(on.1, 1, "the one ask withdrawn");
    assert!(
        on.2.contains("no note named"),
        "the write never ran: {}",
        on.2
    );
    // Nothing ledgered (it was never sent) but the read; its decision
    // audited as blocked, as through rmcp.
    assert_eq!(on.3, ["answered"], "{:?}", on.3);
    assert!(on.4.contains(&Decision::Blocked), "{:?}", on.4);
    assert_eq!(
        (&on.1, &on.2, &on.3, &on.4),
        (&off.1, &off.2, &off.3, &off.4)
    );
}

/// A gateway with `config` (a person confirms every write; a client's
/// instant answer taken for a person's), spoken to by hand in 2025-06-18:
/// a write, then its ask answered yes (`answered`) or not, and the
/// client's stdin closed at once, as a client that is done does. The ask
/// as the client read it, every message the client read until the gateway
/// ended, the ledger, and the audit's decisions with their reasons.
async fn confirmed_then_hung_up(config: &str, answered: bool) -> HungUp {
    let setup = setup().config(&format!(
        "min_answer_ms = 0\n{config}\n[inbox]\nlisten = \"127.0.0.1:0\"\n"
    ));
    let mut raw = Raw::start(&setup).await;
    let write = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "write_note",
                                  "arguments": {"name": "todo", "text": "milk"}}});
    raw.send(&write.to_string()).await;
    let asked = raw.ask_about(4).await;
    if answered {
        let yes = json!({"jsonrpc": "2.0", "id": asked["id"],
                         "result": {"action": "accept", "content": {"confirm": true}}});
        raw.send(&yes.to_string()).await;
    }
    raw.hang_up();
    let rest = raw.rest().await;
    let ledger = ledger(setup.store_url()).await;
    let store = askgate_store::Store::open(setup.store_url())
        .await
        .expect("the store opens");
    let audited = askgate_testkit::audited(&store)
        .await
        .into_iter()
        .map(|entry| (entry.decision, entry.reason))
        .collect();
    store.close().await;
    (asked, rest, ledger, audited)
}

/// What [`confirmed_then_hung_up`] saw.
type HungUp = (Json, Vec<Json>, Vec<String>, Vec<(Decision, String)>);

/// [`confirmed_then_hung_up`] handed, then through rmcp, after checking
/// that the ask took each path: written by the gateway (its ids far above
/// rmcp's), then by rmcp.
async fn on_either_path(answered: bool) -> (HungUp, HungUp) {
    let on = confirmed_then_hung_up(CONFIRMED, answered).await;
    let off = confirmed_then_hung_up(&through_rmcp(), answered).await;
    assert!(
        on.0["id"].as_u64().is_some_and(|id| id >= FIRST_ASK_ID),
        "{}",
        on.0
    );
    assert!(
        off.0["id"].as_u64().is_some_and(|id| id < FIRST_ASK_ID),
        "{}",
        off.0
    );
    (on, off)
}

#[tokio::test]
async fn a_confirmed_call_whose_client_hangs_up_after_its_yes_is_answered_and_its_result_is_the_classic_one_on_either_path()
 {
    let (on, off) = on_either_path(true).await;
    // The call goes on to its end once the client hung up (rmcp's loop
    // gives its handlers a grace to answer), and the answer is written.
    for (path, (_, rest, ledger, _)) in [("handed", &on), ("rmcp", &off)] {
        assert_eq!(ledger, &["answered"], "{path}: {rest:?}");
        let answer = rest
            .iter()
            .find(|m| m["id"] == 4)
            .unwrap_or_else(|| panic!("{path}: no answer in {rest:?}"));
        // A 2025-06-18 client's result carries no 2026-07-28 `resultType`.
        assert!(
            answer["result"].get("resultType").is_none(),
            "{path}: {answer}"
        );
    }
    let answer = |rest: &[Json]| rest.iter().find(|m| m["id"] == 4).cloned();
    assert_eq!(
        answer(&on.1),
        answer(&off.1),
        "the client reads the same answer"
    );
    // The ask is rmcp's on both paths, but for its id and its progress
    // token (rmcp's peer gives every request one), and the `mode` rmcp
    // writes on every revision: 2025-06-18, this client's, has none, and
    // the handed call's ask is the revision's form as askgate-core maps it.
    let (mut asked_on, mut asked_off) = (on.0.clone(), off.0.clone());
    for asked in [&mut asked_on, &mut asked_off] {
        let token = asked["params"]["_meta"]["progressToken"].take();
        assert!(token.is_number(), "a progress token: {token}");
        asked["id"].take();
    }
    assert_eq!(asked_on["params"].get("mode"), None, "{asked_on}");
    let rmcps_mode = asked_off["params"]
        .as_object_mut()
        .and_then(|params| params.remove("mode"));
    assert_eq!(rmcps_mode, Some(json!("form")), "{asked_off}");
    assert_eq!(asked_on, asked_off, "the client reads the same ask");
}

#[tokio::test]
async fn a_confirmed_call_whose_client_hangs_up_while_its_person_is_asked_ends_cancelled_on_either_path()
 {
    let (on, off) = on_either_path(false).await;
    // Its ask stays up through the grace, then the call is given up as
    // its client's: never sent, never sent to the inbox as one the client
    // could not show, and nothing is answered to a client that has gone.
    assert!(on.2.is_empty(), "nothing ran: {:?}", on.2);
    assert!(
        on.1.iter().all(|m| m["id"] != 4),
        "no answer after the hang-up: {:?}",
        on.1
    );
    assert_eq!((&on.2, &on.3), (&off.2, &off.3), "records alike");
    assert_eq!(on.1, off.1, "the client reads nothing more on either path");
}

/// A client with a confirmed write waiting for its person (handed) and a
/// resource read its server never answers (rmcp's own) hangs up. rmcp
/// gives its read its grace to answer (5 s) while the write's grace (5 s,
/// as rmcp's) runs beside it: the gateway ends after one grace. Run one
/// after the other, as they were, it ended after both (10 s and more).
#[tokio::test]
async fn a_client_that_hangs_up_with_a_handed_call_and_one_of_rmcps_running_is_let_go_after_one_grace()
 {
    if super::python_missing() {
        return;
    }
    let setup = setup()
        .config(&format!("min_answer_ms = 0\n{CONFIRMED}"))
        .tables(&format!(
            "[[upstreams]]\nname = \"slow\"\ncommand = \"python3\"\nargs = [\"-c\", {:?}]\n",
            super::timeouts::SLOW_READS
        ))
        .logging("info,askgate_gateway::express=debug");
    let mut raw = Raw::start(&setup).await;
    let write = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "notes__write_note",
                                  "arguments": {"name": "todo", "text": "milk"}}});
    raw.send(&write.to_string()).await;
    let asked = raw.ask_about(4).await;
    assert!(
        asked["id"].as_u64().is_some_and(|id| id >= FIRST_ASK_ID),
        "the write was handed: its ask written by the gateway: {asked}"
    );
    let read = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                      "params": {"uri": "slow://one"}});
    raw.send(&read.to_string()).await;
    // The read reaches its server (which then never answers) before the
    // client goes.
    let ping = json!({"jsonrpc": "2.0", "id": 6, "method": "ping"});
    raw.send(&ping.to_string()).await;
    raw.answer_to(6).await;
    let hung_up = std::time::Instant::now();
    raw.hang_up();
    let rest = raw.rest().await;
    let took = hung_up.elapsed();
    // One grace is 5 s; two, 10. The slack is for a slow machine.
    assert!(
        took < std::time::Duration::from_secs(8),
        "the gateway ended {took:?} after its client hung up"
    );
    assert!(
        rest.iter().all(|m| m["id"] != 4),
        "no answer to the write after the hang-up: {rest:?}"
    );
    assert!(ledger(setup.store_url()).await.is_empty(), "nothing ran");
}
