//! Question sets: replies from any surface settle into one outcome; what
//! the model reads; the `ask` tool's input checks.

mod common;

use askgate_core::{
    Awaiting, Decision, Delivery, Error, FormError, Outcome, QuestionSet, Reply, ReplyError,
    Response, Revision, Source, Step, Surface, ask_tool,
};
use serde_json::{Value as Json, json};

fn set() -> QuestionSet {
    let mut set = common::migration_set([
        json!({"id": "note", "prompt": "Ticket to reference?", "allow_free_text": true, "defaults": ["OPS-1"],
         "options": [{"value": "OPS-1", "label": "OPS-1 (the migration ticket)"}]}),
        json!({"id": "when", "prompt": "Start when?", "input": {"type": "instant", "zone": "Europe/Paris"},
         "defaults": ["2026-12-01T22:00:00+01:00"]}),
    ]);
    set["preamble"] = json!("Before I migrate the billing database:");
    serde_json::from_value(set).expect("a valid set")
}

fn reply(answers: Json) -> Reply {
    let mut reply = Reply::new(Surface::Web);
    reply.answered_by = Some("alice".into());
    reply.answers = serde_json::from_value(answers).expect("answers");
    reply
}

#[test]
fn a_question_left_out_takes_its_defaults_and_an_empty_list_is_none() {
    let outcome = set()
        .settle(&reply(json!({"tables": []})))
        .expect("settles");
    assert!(outcome.answers[0].defaulted);
    assert_eq!(outcome.answers[0].chosen[0].value, "staging");
    assert!(!outcome.answers[1].defaulted);
    assert!(
        outcome.answers[1].chosen.is_empty(),
        "explicit none does not fall back"
    );
}

#[test]
fn values_not_on_offer_are_dropped_unless_free_text_is_allowed() {
    let outcome = set()
        .settle(&reply(
            json!({"tables": ["payments", "users", "invoices"], "note": ["OPS-77"], "env": ["qa"]}),
        ))
        .expect("settles");
    let values = |i: usize| {
        outcome.answers[i]
            .chosen
            .iter()
            .map(|c| c.value.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(values(1), ["payments", "invoices"]);
    assert_eq!(values(2), ["OPS-77"]);
    assert!(outcome.answers[2].chosen[0].free);
    assert!(values(0).is_empty(), "qa is not on offer");
}

#[test]
fn a_single_choice_keeps_one_value() {
    let outcome = set()
        .settle(&reply(json!({"env": ["prod", "staging"]})))
        .expect("settles");
    assert_eq!(outcome.answers[0].chosen.len(), 1);
    assert_eq!(outcome.answers[0].chosen[0].value, "prod");
}

#[test]
fn skipping_differs_from_confirming_the_defaults() {
    let checked = set().prepare().expect("valid");
    let confirmed = checked.settle(&Reply::new(Surface::Cli)).expect("settles");
    let skipped = checked
        .settle(&Reply {
            skipped: true,
            ..Reply::new(Surface::Cli)
        })
        .expect("settles");
    assert_eq!(
        confirmed
            .answers
            .iter()
            .map(|a| &a.chosen)
            .collect::<Vec<_>>(),
        skipped
            .answers
            .iter()
            .map(|a| &a.chosen)
            .collect::<Vec<_>>()
    );
    assert!(!confirmed.skipped);
    assert!(skipped.skipped);
    assert_ne!(confirmed.render(), skipped.render());
}

#[test]
fn approve_keeps_the_defaults_and_reject_skips() {
    let checked = set().prepare().expect("valid");
    let decide = |approve| {
        Delivery::Decision(Decision {
            approve,
            answered_by: None,
            answered_via: Surface::Approvals,
        })
    };
    let approved = checked
        .settle_delivery(Awaiting::Decision, &decide(true))
        .expect("settles");
    let rejected = checked
        .settle_delivery(Awaiting::Decision, &decide(false))
        .expect("settles");
    assert_eq!(
        approved,
        checked
            .settle(&Reply::new(Surface::Approvals))
            .expect("settles")
    );
    assert_eq!(
        rejected,
        checked
            .settle(&Reply {
                skipped: true,
                ..Reply::new(Surface::Approvals)
            })
            .expect("settles")
    );
}

#[test]
fn answers_sent_to_a_yes_no_wait_are_a_mismatch_never_a_rejection() {
    let checked = set().prepare().expect("valid");
    let delivery = Delivery::Reply(reply(json!({"env": ["prod"]})));
    assert_eq!(
        checked.settle_delivery(Awaiting::Decision, &delivery),
        Err(Error::Reply(ReplyError::DeliveryMismatch))
    );
    assert!(
        checked
            .settle_delivery(Awaiting::Answers, &delivery)
            .is_ok()
    );
}

#[test]
fn a_reply_to_a_question_not_in_the_set_is_refused() {
    let error = set()
        .settle(&reply(json!({"colour": ["blue"]})))
        .expect_err("unknown question");
    let Error::Reply(ReplyError::UnknownQuestion { id, expected }) = &error else {
        panic!("not an unknown question: {error:?}")
    };
    assert_eq!(id, "colour");
    assert!(!expected.is_empty());
    // The message names the stray id and every question the set holds.
    let message = error.to_string();
    assert!(message.contains("\"colour\""), "{message}");
    for question in &set().questions {
        assert!(message.contains(&format!("{:?}", question.id)), "{message}");
    }
}

#[test]
fn a_set_holds_one_to_five_questions() {
    let mut many = set();
    many.questions = std::iter::repeat_n(set().questions[0].clone(), 6)
        .enumerate()
        .map(|(i, mut q)| {
            q.id = format!("q{i}");
            q
        })
        .collect();
    assert_eq!(
        many.check(),
        Err(Error::Form(FormError::QuestionCount { given: 6 }))
    );
    many.questions.clear();
    assert_eq!(
        many.check(),
        Err(Error::Form(FormError::QuestionCount { given: 0 }))
    );
}

#[test]
fn a_question_set_is_asked_through_the_form_mapping_and_settled_from_elicitation() {
    let checked = set().prepare().expect("valid");
    let params = checked
        .ask()
        .request(Revision::V2025_11_25)
        .expect("askable")
        .to_json();
    let properties = &params["requestedSchema"]["properties"];
    assert_eq!(properties["env"]["default"], "staging");
    assert_eq!(properties["tables"]["type"], "array");
    let content = json!({"env": "prod", "tables": ["invoices"], "when": "2026-12-02T06:00:00"});
    let Json::Object(content) = content else {
        unreachable!()
    };
    let Step::Settled(outcome) = checked
        .ask()
        .settle(Revision::V2025_11_25, &Response::accept(content))
    else {
        panic!("valid content settles")
    };
    let reply = checked.reply_from_elicitation(&outcome, Some("bob".into()));
    assert_eq!(reply.answered_via, Surface::Mcp);
    let settled = checked.settle(&reply).expect("settles");
    insta::assert_snapshot!("elicited", settled.render());
    let declined = checked.reply_from_elicitation(&Outcome::Declined, None);
    assert!(declined.skipped);
}

#[test]
fn what_the_model_reads() {
    let checked = set().prepare().expect("valid");
    let answered = checked
        .settle(&reply(
            json!({"env": ["prod"], "tables": ["payments", "refunds"], "note": ["INC-9"]}),
        ))
        .expect("settles");
    insta::assert_snapshot!("answered", answered.render());
    let skipped = checked
        .settle(&Reply {
            skipped: true,
            ..Reply::new(Surface::Cli)
        })
        .expect("settles");
    insta::assert_snapshot!("skipped", skipped.render());
    let none = checked
        .settle(&reply(json!({"tables": []})))
        .expect("settles");
    insta::assert_snapshot!("explicit_none", none.render());
}

#[test]
fn the_same_set_and_reply_give_byte_identical_outcomes() {
    let r = reply(json!({"env": ["prod"], "tables": ["refunds", "payments"]}));
    let a = serde_json::to_string(&set().settle(&r).expect("settles")).expect("json");
    let b = serde_json::to_string(&set().settle(&r).expect("settles")).expect("json");
    assert_eq!(a, b);
}

#[test]
fn the_ask_tool_offers_a_schema_of_one_to_five_questions_with_defaults() {
    let tool = ask_tool::definition();
    assert_eq!(tool["name"], "ask");
    let questions = &tool["inputSchema"]["properties"]["questions"];
    assert_eq!(
        (
            questions["minItems"].as_u64(),
            questions["maxItems"].as_u64()
        ),
        (Some(1), Some(5))
    );
    let required = questions["items"]["required"].as_array().expect("a list");
    assert!(required.contains(&json!("defaults")));
    let description = tool["description"].as_str().expect("text");
    assert!(description.contains("materially change") && description.contains("pre-pick"));
}

#[test]
fn valid_model_input_becomes_a_question_set_from_ask() {
    let input = json!({"questions": [
        {"id": "env", "prompt": "Which environment?", "defaults": ["staging"],
         "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}]},
        {"id": "day", "prompt": "Which day?", "input": "date", "defaults": ["2026-12-01"]}
    ]});
    let set = ask_tool::parse_input(&input).expect("valid");
    assert_eq!(set.source, Source::Ask);
    assert_eq!(set.questions.len(), 2);
}

#[test]
fn every_error_text_addressed_to_the_model() {
    let cases = [
        ("not an object", json!("ask me")),
        ("no questions", json!({"preamble": "hi"})),
        (
            "too many",
            json!({"questions": (0..6).map(|i| json!({"id": format!("q{i}"), "prompt": "P", "defaults": ["a"],
            "options": [{"value": "a", "label": "A"}]})).collect::<Vec<_>>()}),
        ),
        ("empty list", json!({"questions": []})),
        (
            "missing defaults",
            json!({"questions": [{"id": "a", "prompt": "P", "options": [{"value": "x", "label": "X"}]}]}),
        ),
        (
            "default not an option",
            json!({"questions": [{"id": "a", "prompt": "P", "defaults": ["y"],
            "options": [{"value": "x", "label": "X"}]}]}),
        ),
        (
            "two defaults on a single choice",
            json!({"questions": [{"id": "a", "prompt": "P", "defaults": ["x", "z"],
            "options": [{"value": "x", "label": "X"}, {"value": "z", "label": "Z"}]}]}),
        ),
        (
            "no options",
            json!({"questions": [{"id": "a", "prompt": "P", "defaults": ["x"]}]}),
        ),
        (
            "bad id and empty prompt",
            json!({"questions": [{"id": "a b", "prompt": " ", "defaults": ["x"], "allow_free_text": true}]}),
        ),
        (
            "duplicate ids and options",
            json!({"questions": [
            {"id": "a", "prompt": "P", "defaults": ["x"], "options": [{"value": "x", "label": "X"}, {"value": "x", "label": "Y"}]},
            {"id": "a", "prompt": "Q", "defaults": ["x"], "allow_free_text": true}]}),
        ),
        (
            "unknown keys and types",
            json!({"questions": [{"id": "a", "prompt": "P", "defaults": "x", "colour": "red",
            "input": "color", "multiple": "yes"}], "extra": 1}),
        ),
        (
            "typed default that fails its type",
            json!({"questions": [{"id": "a", "prompt": "P", "input": "date", "defaults": ["soon"]}]}),
        ),
    ];
    let mut report = String::new();
    for (name, input) in cases {
        let error = ask_tool::parse_input(&input).expect_err(name);
        report.push_str(&format!("## {name}\n{error}\n"));
    }
    insta::assert_snapshot!(report);
}
