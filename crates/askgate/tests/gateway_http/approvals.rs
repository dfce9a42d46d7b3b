//! `[[approvals]]` over `--listen`, where an agent acts for a person
//! (`[[principals]] acts_for`): that agent's client's answer counts as its
//! person's, and the call waits for the rest of the quorum in the inbox.

use askgate_store::{AskStatus, Decision, SealedArguments, Store};
use askgate_testkit::gateway::Setup;
use askgate_testkit::person::accept;
use askgate_testkit::{Manner, Person, binaries};
use rmcp::model::CallToolRequestParams;
use serde_json::json;

use super::http_session::{HttpSession, message_of};
use super::{ALICE, connect};

const AL: &str = "al-token-0123456789abcdef";
const BO: &str = "bo-token-0123456789abcdef";

#[tokio::test]
async fn an_agents_client_answers_as_its_person_and_the_quorum_waits_for_the_second() {
    let gateway = Setup::new(binaries!())
        .config("")
        .tables(&format!(
            "[[principals]]\nname = \"alice\"\ntoken = {ALICE:?}\nacts_for = [\"al\"]\n\n\
             [[people]]\nname = \"al\"\ntoken = {AL:?}\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[people]]\nname = \"bo\"\ntoken = {BO:?}\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[approvals]]\ntool = \"write_note\"\nquorum = {{ of = \"sre\", need = 2 }}\n\
             not_requester = false\n\n[inbox]\nlisten = \"127.0.0.1:0\"\n"
        ))
        .logging("askgate_mcp=info")
        .listen()
        .await;
    let person = Person::with_forms()
        .named("al-client")
        .in_manner(Manner::Person)
        .otherwise(accept(json!({"confirm": true})));
    let alice = connect(&gateway.url, ALICE, &person).await;
    let mut params = CallToolRequestParams::new("write_note");
    params.arguments = json!({"name": "plan", "text": "ship"}).as_object().cloned();
    let first = alice.call_tool(params.clone()).await.expect("a result");
    assert_eq!(first.is_error, Some(true), "one of two: {first:?}");
    assert_eq!(person.messages().len(), 1, "Al's client was asked, as Al");
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let ask = store
        .pending(10, None)
        .await
        .expect("pending")
        .asks
        .remove(0);
    let answers = store.answers(&ask.ask.id).await.expect("reads");
    let who: Vec<(&str, &str)> = answers
        .iter()
        .map(|a| (a.answer.person.as_str(), a.answer.via.as_str()))
        .collect();
    assert_eq!(who, [("al", "mcp")]);
    // The call's arguments wait with it, sealed under the deployment key
    // for its page, and nowhere readable.
    let SealedArguments::Held(sealed) = store.sealed_arguments(&ask.ask.id).await.expect("reads")
    else {
        panic!("kept with the ask")
    };
    assert!(!sealed.contains("plan"), "{sealed}");
    let keys = askgate_gateway::keys::Keys::load_or_create(&askgate_gateway::keys::key_path(
        gateway.store_url(),
    ))
    .expect("the gateway's key");
    let opened = keys
        .argument_seal()
        .open(&ask.ask.id, &sealed)
        .expect("opens for its ask");
    assert_eq!(Some(opened), params.arguments.clone());

    let bo = gateway.as_person(
        BO,
        &["answer", &ask.ask.id, "--content", r#"{"confirm": true}"#],
    );
    assert!(bo.status.success(), "{bo:?}");
    let row = store.ask(&ask.ask.id).await.expect("reads").expect("there");
    assert_eq!(row.status, AskStatus::Answered);
    assert_eq!(row.answered_by.as_deref(), Some("al, bo"));
    assert_eq!(
        store.sealed_arguments(&ask.ask.id).await.expect("reads"),
        SealedArguments::Erased,
        "erased when the quorum settled it"
    );
    let second = alice.call_tool(params).await.expect("a result");
    assert_ne!(second.is_error, Some(true), "{second:?}");
    assert_eq!(person.messages().len(), 1, "not asked again");
}

#[tokio::test]
async fn a_raised_session_threshold_does_not_skip_the_approvers_a_rule_names() {
    // The agent may raise its own threshold (allow_session_raise), and does,
    // to destructive: the quorum still decides, on rmcp's path and the lane.
    let gateway = Setup::new(binaries!())
        .config("allow_session_raise = true\n")
        .tables(&format!(
            "[[principals]]\nname = \"alice\"\ntoken = {ALICE:?}\n\n\
             [[people]]\nname = \"al\"\ntoken = {AL:?}\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[people]]\nname = \"bo\"\ntoken = {BO:?}\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[rules]]\ntool = \"read_note\"\nrisk = \"high_write\"\n\n\
             [[approvals]]\ntool = \"*_note\"\nquorum = {{ of = \"sre\", need = 2 }}\n\n\
             [inbox]\nlisten = \"127.0.0.1:0\"\n"
        ))
        .listen()
        .await;
    let session = HttpSession::open(&gateway.url, ALICE, "2025-06-18", json!({})).await;
    let raised = [("askgate-auto-approve-risk", "destructive")];
    for (id, tool, arguments) in [
        (2, "write_note", json!({"name": "plan", "text": "ship"})),
        (3, "read_note", json!({"name": "plan"})),
    ] {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}});
        let answer = message_of(session.post_with(&call, Some("2025-06-18"), &raised).await).await;
        let result = &answer["result"];
        assert_eq!(
            result["isError"], true,
            "{tool} ran on a raised threshold: {answer}"
        );
        assert!(
            result.to_string().contains("needs 2 more approvals"),
            "{tool}: {answer}"
        );
    }
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let pending = store.pending(10, None).await.expect("pending").asks;
    assert_eq!(pending.len(), 2, "both wait for the quorum");
    let decisions: Vec<Decision> = askgate_testkit::audited(&store)
        .await
        .into_iter()
        .map(|entry| entry.decision)
        .collect();
    assert!(
        !decisions.contains(&Decision::AutoApproved),
        "{decisions:?}"
    );
}

#[tokio::test]
async fn a_call_no_answer_could_approve_is_refused_before_anyone_is_asked() {
    // The rule keeps the requester's people out, and "alice" acts for
    // nobody: anyone who answered could be her person. And a quorum of 3
    // of a group of 2 once Al (whom "carol" acts for) is kept out.
    let gateway = Setup::new(binaries!())
        .config("")
        .tables(&format!(
            "[[principals]]\nname = \"alice\"\ntoken = {ALICE:?}\n\n\
             [[principals]]\nname = \"carol\"\ntoken = \"carol-token-0123456789\"\nacts_for = [\"al\"]\n\n\
             [[people]]\nname = \"al\"\ntoken = {AL:?}\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[people]]\nname = \"bo\"\ntoken = {BO:?}\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[people]]\nname = \"cy\"\ntoken = \"cy-token-0123456789abc\"\nanswers_for = [\"*\"]\ngroups = [\"sre\"]\n\n\
             [[approvals]]\ntool = \"write_note\"\nany_of = [\"sre\"]\nnot = \"requester\"\n\n\
             [[approvals]]\ntool = \"delete_all_notes\"\nquorum = {{ of = \"sre\", need = 3 }}\nnot = \"requester\"\n\n\
             [inbox]\nlisten = \"127.0.0.1:0\"\n"
        ))
        .listen()
        .await;
    let person = Person::with_forms()
        .in_manner(Manner::Person)
        .otherwise(accept(json!({"confirm": true})));
    for (token, tool, says) in [
        (
            ALICE,
            "write_note",
            "this agent acts for nobody in [[people]]",
        ),
        (
            "carol-token-0123456789",
            "delete_all_notes",
            "needs 3 approvals, but only 2 of its people may answer",
        ),
    ] {
        let agent = connect(&gateway.url, token, &person).await;
        let mut params = CallToolRequestParams::new(tool);
        params.arguments = json!({"name": "plan", "text": "ship"}).as_object().cloned();
        let result = agent.call_tool(params).await.expect("a result");
        assert_eq!(result.is_error, Some(true), "{tool} ran: {result:?}");
        let text = format!("{result:?}");
        assert!(
            text.contains("Not run: nobody may approve this call"),
            "{text}"
        );
        assert!(text.contains(says), "{text}");
    }
    assert!(person.messages().is_empty(), "nobody was asked");
    let store = Store::open(gateway.store_url()).await.expect("opens");
    let pending = store.pending(10, None).await.expect("pending").asks;
    assert!(pending.is_empty(), "no ask parked: {pending:?}");
    let blocked = askgate_testkit::audited(&store)
        .await
        .into_iter()
        .filter(|entry| entry.decision == Decision::Blocked)
        .count();
    assert_eq!(blocked, 2);
}
