//! Asks a panel decides: each person's answer kept once, the ask settled
//! when the panel's count says so, every refusal recorded — on one store
//! and on two replicas answering at the same instant.

use askgate_core::Risk;
use askgate_core::approval::{Answer, Approval, Asked, Directory, Panel, Progress};
use askgate_store::{
    AskAnswered, AskRow, AskStatus, Count, Counted, NewAsk, PersonAnswer, RecordedAnswer,
    SettleError, Settlement, Store,
};
use serde_json::json;

use super::{answer, at, new_ask, postgres, raw, stores};

/// Ana, Bo and Cy are SRE; Di is on call.
const TEAM: &[(&str, &[&str])] = &[
    ("ana", &["sre"]),
    ("bo", &["sre"]),
    ("cy", &["sre"]),
    ("di", &["oncall"]),
];

/// An ask decided by `rule` (an `[[approvals]]` entry's approval part),
/// asked by Cy's agent about a destructive call.
pub(super) fn governed(id: &str, rule: &str) -> NewAsk {
    let rule = serde_json::from_str(rule).expect("JSON");
    let cy = ["cy".to_owned()];
    let panel = askgate_testkit::approvals::panel(rule, TEAM, Risk::Destructive, &cy);
    NewAsk {
        panel: Some(serde_json::to_value(panel).expect("a panel serializes")),
        ..new_ask(id, 0, Some(3600))
    }
}

pub(super) const TWO_OF_SRE: &str = r#"{"quorum": {"of": "sre", "need": 2}}"#;

fn says(person: &str, accepted: bool) -> PersonAnswer {
    let action = if accepted { "accept" } else { "decline" };
    PersonAnswer {
        person: person.to_owned(),
        accepted,
        reply: json!({"action": action}),
        via: "web".to_owned(),
        groups: Vec::new(),
    }
}

/// The count the gateway gives: the ask's panel read back, the newest
/// answer's person checked, the answers tallied.
fn by_panel(row: &AskRow, answers: &[RecordedAnswer]) -> Count {
    let panel: Panel = serde_json::from_value(row.ask.panel.clone().expect("a governed ask"))
        .expect("the kept panel reads back");
    let newest = answers.last().expect("this answer");
    let (newest, groups) = (&newest.answer.person, &newest.answer.groups);
    if let Err(why) = panel.eligible_in(newest, groups, false) {
        return Count::Refuse(why.to_string());
    }
    let answers: Vec<Answer> = answers
        .iter()
        .map(|a| Answer {
            person: a.answer.person.clone(),
            accepted: a.answer.accepted,
            groups: a.answer.groups.clone(),
        })
        .collect();
    let (status, by) = match panel.tally(&answers, false) {
        Progress::Waiting { .. } => return Count::Wait,
        Progress::Accepted { by } => (AskStatus::Answered, by),
        Progress::Declined { by } => (AskStatus::Declined, by),
        Progress::Unreachable { declined_by } => (AskStatus::Declined, declined_by),
    };
    Count::Settle(Settlement {
        status,
        reply: json!({"action": if status == AskStatus::Answered { "accept" } else { "decline" }}),
        outcome: json!({"outcome": status.as_str()}),
        answered_by: Some(by.join(", ")),
        answered_via: "web".to_owned(),
    })
}

pub(super) async fn answer_as(
    store: &Store,
    id: &str,
    person: &str,
    accepted: bool,
    second: i64,
) -> Result<Counted, SettleError> {
    store
        .answer_as(id, &says(person, accepted), at(second), by_panel)
        .await
}

#[tokio::test]
async fn a_quorum_settles_on_its_second_yes_and_keeps_each_persons_answer() {
    for store in stores().await {
        let name = store.name().to_owned();
        store
            .park(&governed("q1", TWO_OF_SRE))
            .await
            .expect("parks");
        let first = answer_as(&store, "q1", "ana", true, 1)
            .await
            .expect("counted");
        assert_eq!(first.row.status, AskStatus::Pending, "{name}: one of two");
        // Ana again, even changing her mind: her first answer counts.
        let again = answer_as(&store, "q1", "ana", false, 2).await;
        assert!(
            matches!(again, Err(SettleError::Repeated { ref person, .. }) if person == "ana"),
            "{name}: {again:?}"
        );
        // One person's answer is no quorum, whoever gives it as a plain
        // settlement.
        let plain = store.settle("q1", &answer("mallory"), at(3)).await;
        let Err(SettleError::Governed { rule, .. }) = plain else {
            panic!("{name}: a plain answer to a governed ask: {plain:?}");
        };
        assert_eq!(rule, "approvals[0]: 2 of sre");
        let second = answer_as(&store, "q1", "bo", true, 4)
            .await
            .expect("counted");
        assert_eq!(second.row.status, AskStatus::Answered, "{name}");
        assert_eq!(second.row.answered_by.as_deref(), Some("ana, bo"));
        let kept = store.answers("q1").await.expect("reads");
        let who: Vec<(&str, bool)> = kept
            .iter()
            .map(|a| (a.answer.person.as_str(), a.answer.accepted))
            .collect();
        assert_eq!(who, [("ana", true), ("bo", true)], "{name}");
        assert_eq!(kept[1].at, at(4));
        // Settled: a late no changes nothing.
        let late = answer_as(&store, "q1", "cy", false, 5).await;
        assert!(
            matches!(late, Err(SettleError::Conflict { .. })),
            "{name}: {late:?}"
        );
        assert_eq!(
            store.rejected_attempts("q1").await.expect("counts"),
            3,
            "{name}"
        );
        let row = store.ask("q1").await.expect("reads").expect("exists");
        assert_eq!(row.status, AskStatus::Answered);
        assert_eq!(
            row.ask.panel,
            governed("q1", TWO_OF_SRE).panel,
            "the panel is kept"
        );
    }
}

#[tokio::test]
async fn one_eligible_no_blocks_a_quorum_and_an_ineligible_answer_is_refused_with_its_reason() {
    for store in stores().await {
        let name = store.name().to_owned();
        store
            .park(&governed("q2", TWO_OF_SRE))
            .await
            .expect("parks");
        // Cy's agent asked: Cy may not approve it; Di is not SRE.
        for (person, why) in [
            (
                "cy",
                "cy acts for the agent that asked, and may not answer its own destructive ask (the rule's not_requester)",
            ),
            (
                "di",
                "di is not among those who may answer this ask (2 of sre)",
            ),
        ] {
            match answer_as(&store, "q2", person, true, 1).await {
                Err(SettleError::Ineligible { why: said, .. }) => assert_eq!(said, why, "{name}"),
                other => panic!("{name}: {person}'s answer: {other:?}"),
            }
        }
        assert!(
            store.answers("q2").await.expect("reads").is_empty(),
            "{name}: refused answers are not kept as answers"
        );
        answer_as(&store, "q2", "ana", true, 2)
            .await
            .expect("counted");
        let no = answer_as(&store, "q2", "bo", false, 3)
            .await
            .expect("counted");
        assert_eq!(no.row.status, AskStatus::Declined, "{name}: a veto");
        assert_eq!(no.row.answered_by.as_deref(), Some("bo"));
        assert_eq!(
            store.rejected_attempts("q2").await.expect("counts"),
            2,
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_governed_ask_may_be_withdrawn_and_expires_like_any_other() {
    for store in stores().await {
        let name = store.name().to_owned();
        store
            .park(&governed("w1", TWO_OF_SRE))
            .await
            .expect("parks");
        answer_as(&store, "w1", "ana", true, 1)
            .await
            .expect("counted");
        let withdrawn = Settlement {
            status: AskStatus::Cancelled,
            reply: json!({"action": "cancel"}),
            outcome: json!("cancelled"),
            answered_by: None,
            answered_via: "withdrawn".to_owned(),
        };
        let row = store
            .settle("w1", &withdrawn, at(2))
            .await
            .expect("withdrawn");
        assert_eq!(row.status, AskStatus::Cancelled, "{name}");
        let late = answer_as(&store, "w1", "bo", true, 3).await;
        assert!(
            matches!(late, Err(SettleError::Conflict { .. })),
            "{name}: {late:?}"
        );

        store
            .park(&governed("e1", TWO_OF_SRE))
            .await
            .expect("parks");
        let gone = answer_as(&store, "e1", "ana", true, 3601).await;
        assert!(
            matches!(gone, Err(SettleError::Gone { .. })),
            "{name}: {gone:?}"
        );
        assert!(store.answers("e1").await.expect("reads").is_empty());
    }
}

#[tokio::test]
async fn answers_counted_at_once_on_one_store_settle_the_quorum_once() {
    for store in stores().await {
        store
            .park(&governed("r1", TWO_OF_SRE))
            .await
            .expect("parks");
        let tasks: Vec<_> = ["ana", "bo", "cy", "di", "ana", "bo"]
            .into_iter()
            .map(|person| {
                let store = store.clone();
                tokio::spawn(async move { answer_as(&store, "r1", person, true, 1).await })
            })
            .collect();
        let mut settled = 0;
        for task in tasks {
            if let Ok(counted) = task.await.expect("joins")
                && counted.row.status == AskStatus::Answered
            {
                settled += 1;
            }
        }
        assert_eq!(settled, 1, "{}: one answer settles it", store.name());
        let kept = store.answers("r1").await.expect("reads");
        assert_eq!(
            kept.len(),
            2,
            "{}: the two that made the quorum",
            store.name()
        );
    }
}

#[tokio::test]
async fn two_replicas_answering_one_quorum_at_the_same_instant_settle_it_once() {
    let Some(url) = postgres().await else {
        return;
    };
    let one = Store::open(&url).await.expect("replica 1 opens");
    let two = Store::open(&url).await.expect("replica 2 opens");
    for round in 0..20 {
        let id = format!("rep{round}");
        one.park(&governed(&id, TWO_OF_SRE)).await.expect("parks");
        // Ana and Bo at once, through different replicas: the quorum is
        // met once, by both.
        let (ana, bo) = tokio::join!(
            answer_as(&one, &id, "ana", true, 1),
            answer_as(&two, &id, "bo", true, 1),
        );
        let statuses = [
            ana.expect("ana counted").row.status,
            bo.expect("bo counted").row.status,
        ];
        assert_eq!(
            statuses
                .iter()
                .filter(|s| **s == AskStatus::Answered)
                .count(),
            1,
            "round {round}: {statuses:?}"
        );
        // Cy's second... Ana again, from both replicas at once, on a fresh
        // ask: counted once, the other refused as a repeat.
        let id = format!("dup{round}");
        one.park(&governed(&id, TWO_OF_SRE)).await.expect("parks");
        let (first, second) = tokio::join!(
            answer_as(&one, &id, "ana", true, 1),
            answer_as(&two, &id, "ana", true, 1),
        );
        let repeats = [&first, &second]
            .iter()
            .filter(|r| matches!(r, Err(SettleError::Repeated { .. })))
            .count();
        assert_eq!(repeats, 1, "round {round}: {first:?} {second:?}");
        assert_eq!(one.answers(&id).await.expect("reads").len(), 1);
        let row = two.ask(&id).await.expect("reads").expect("exists");
        assert_eq!(row.status, AskStatus::Pending, "one person is no quorum");
    }
}

/// The first news on `news` of a person's answer to the ask `id`; the
/// test fails after 30 s without it.
async fn answered_news(
    news: &mut tokio::sync::broadcast::Receiver<AskAnswered>,
    id: &str,
) -> AskAnswered {
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        loop {
            match news.recv().await {
                Ok(heard) if &*heard.id == id => return heard,
                Ok(_) => {}
                Err(error) => panic!("{error}"),
            }
        }
    })
    .await
    .expect("news of the answer")
}

#[tokio::test]
async fn each_counted_answer_is_news_here_and_to_other_replicas() {
    for store in stores().await {
        let mut news = store.answered();
        store
            .park(&governed("n1", TWO_OF_SRE))
            .await
            .expect("parks");
        answer_as(&store, "n1", "ana", true, 1)
            .await
            .expect("counted");
        // On PostgreSQL the trigger's news (the ask named only) may come
        // first: the news told here carries the ask as it stands.
        let mut heard = answered_news(&mut news, "n1").await;
        while heard.row.is_none() {
            heard = answered_news(&mut news, "n1").await;
        }
        assert_eq!(&*heard.person, "ana");
        assert!(heard.accepted);
        let row = heard.row.expect("counted here: the ask as it stands");
        assert_eq!(row.status, AskStatus::Pending);
    }
    let Some(url) = postgres().await else {
        return;
    };
    let one = Store::open(&url).await.expect("replica 1 opens");
    let two = Store::open(&url).await.expect("replica 2 opens");
    let mut news = two.answered();
    one.park(&governed("n2", TWO_OF_SRE)).await.expect("parks");
    answer_as(&one, "n2", "bo", false, 1)
        .await
        .expect("counted");
    let heard = answered_news(&mut news, "n2").await;
    assert_eq!(&*heard.person, "bo", "through LISTEN/NOTIFY");
    assert!(!heard.accepted, "bo declined");
    assert!(
        heard.row.is_none(),
        "another process's news names the ask only"
    );
}

#[tokio::test]
async fn the_groups_a_sign_in_gave_are_kept_with_the_answer_and_count_again_later() {
    let team = Directory::new(Vec::<(&str, Vec<&str>)>::new())
        .and_then(|d| d.with_signed_in_groups(["sre"]))
        .expect("a team");
    let rule: Approval = serde_json::from_str(TWO_OF_SRE).expect("a rule");
    // The agent acts for Lee, who is no one signed in here.
    let asked = Asked {
        risk: Risk::Destructive,
        requester_people: &["lee".to_owned()],
        escalated: false,
    };
    let panel = rule.panel("approvals[0]", &team, &asked);
    for store in stores().await {
        let name = store.name().to_owned();
        let ask = NewAsk {
            panel: Some(serde_json::to_value(&panel).expect("a panel serializes")),
            ..new_ask("g1", 0, Some(3600))
        };
        store.park(&ask).await.expect("parks");
        let signed_in = |person: &str, groups: &[&str]| PersonAnswer {
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..says(person, true)
        };
        let outsider = store
            .answer_as("g1", &signed_in("lou", &["dev"]), at(1), by_panel)
            .await;
        assert!(
            matches!(outsider, Err(SettleError::Ineligible { .. })),
            "{name}: {outsider:?}"
        );
        let first = store
            .answer_as("g1", &signed_in("kim", &["sre", "dev"]), at(2), by_panel)
            .await
            .expect("counted");
        assert_eq!(first.row.status, AskStatus::Pending, "{name}");
        // Kim's groups come back from the store with her answer: the
        // second count still counts her.
        let second = store
            .answer_as("g1", &signed_in("max", &["sre"]), at(3), by_panel)
            .await
            .expect("counted");
        assert_eq!(second.row.status, AskStatus::Answered, "{name}");
        assert_eq!(second.row.answered_by.as_deref(), Some("kim, max"));
        let kept = store.answers("g1").await.expect("reads");
        assert_eq!(kept[0].answer.groups, ["sre", "dev"], "{name}");
    }
}

#[tokio::test]
async fn an_askgate_that_knows_no_panels_cannot_approve_a_governed_ask_on_one_answer() {
    // An askgate from before panels, still running beside the new one in a
    // rolling upgrade, settles an ask with its one statement: the store
    // refuses it until the count is there.
    let old_settle = "UPDATE asks SET status = 'answered', answered_by = 'mallory', \
                      answered_via = 'web' WHERE id = 'q9' AND status = 'pending'";
    for store in stores().await {
        let name = store.name().to_owned();
        store
            .park(&governed("q9", TWO_OF_SRE))
            .await
            .expect("parks");
        let refused = raw(&store, old_settle).await;
        assert!(
            refused
                .as_deref()
                .is_some_and(|e| e.contains("settles only when its people's answers are counted")),
            "{name}: {refused:?}"
        );
        answer_as(&store, "q9", "ana", true, 1)
            .await
            .expect("counted");
        assert!(
            raw(&store, old_settle).await.is_some(),
            "{name}: one of two"
        );
        let row = store.ask("q9").await.expect("reads").expect("exists");
        assert_eq!(row.status, AskStatus::Pending, "{name}");
        // Withdrawing and declining run nothing: let through.
        let withdraw = "UPDATE asks SET status = 'cancelled' WHERE id = 'q9'";
        assert_eq!(raw(&store, withdraw).await, None, "{name}");
        // The count itself settles it, as before.
        store
            .park(&governed("q10", TWO_OF_SRE))
            .await
            .expect("parks");
        answer_as(&store, "q10", "ana", true, 1)
            .await
            .expect("counted");
        let second = answer_as(&store, "q10", "bo", true, 2)
            .await
            .expect("counted");
        assert_eq!(second.row.status, AskStatus::Answered, "{name}");
        // An ask without a panel settles on one answer, as ever.
        store.park(&new_ask("plain", 0, None)).await.expect("parks");
        let plain = "UPDATE asks SET status = 'answered' WHERE id = 'plain'";
        assert_eq!(raw(&store, plain).await, None, "{name}");
    }
}
