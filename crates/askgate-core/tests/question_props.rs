//! Properties of settling question sets, over random sets and replies.

use std::collections::BTreeMap;

use askgate_core::{
    Awaiting, ChoiceOption, Decision, Delivery, Question, QuestionSet, Reply, Source, Surface,
};
use proptest::prelude::*;

fn question(index: usize) -> impl Strategy<Value = Question> {
    (
        1usize..5,
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(0usize..5, 0..3),
    )
        .prop_map(move |(count, multiple, allow_free_text, picks)| {
            let options: Vec<ChoiceOption> = (0..count)
                .map(|i| ChoiceOption {
                    value: format!("v{i}"),
                    label: format!("Option {i}"),
                    hotkey: None,
                })
                .collect();
            let mut defaults: Vec<String> =
                picks.iter().map(|p| format!("v{}", p % count)).collect();
            defaults.sort();
            defaults.dedup();
            if !multiple {
                defaults.truncate(1);
            }
            Question {
                id: format!("q{index}"),
                prompt: format!("Question {index}?"),
                description: None,
                options,
                input: None,
                multiple,
                defaults,
                allow_free_text,
            }
        })
}

fn question_set() -> impl Strategy<Value = QuestionSet> {
    (1usize..=5)
        .prop_flat_map(|n| (0..n).map(question).collect::<Vec<_>>())
        .prop_map(|questions| QuestionSet {
            preamble: None,
            questions,
            source: Source::Ask,
        })
}

/// A reply answering a random subset of the questions with values on and off offer.
fn reply_for(set: &QuestionSet) -> impl Strategy<Value = Reply> + use<> {
    let ids: Vec<String> = set.questions.iter().map(|q| q.id.clone()).collect();
    let answer = proptest::collection::vec(
        prop_oneof![
            (0usize..6).prop_map(|i| format!("v{i}")),
            "[a-z]{1,6}",
            Just(String::new())
        ],
        0..4,
    );
    (
        proptest::collection::vec(proptest::option::of(answer), ids.len()),
        any::<bool>(),
    )
        .prop_map(move |(answers, skipped)| {
            let answers: BTreeMap<String, Vec<String>> = ids
                .iter()
                .zip(answers)
                .filter_map(|(id, answer)| answer.map(|a| (id.clone(), a)))
                .collect();
            Reply {
                answers,
                skipped,
                answered_by: Some("p".into()),
                answered_via: Surface::Web,
            }
        })
}

fn set_and_reply() -> impl Strategy<Value = (QuestionSet, Reply)> {
    question_set().prop_flat_map(|set| {
        let reply = reply_for(&set);
        (Just(set), reply)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn settling_is_deterministic_and_idempotent((set, reply) in set_and_reply()) {
        let checked = set.prepare().expect("generated sets are valid");
        let first = serde_json::to_string(&checked.settle(&reply).expect("known ids")).expect("json");
        let second = serde_json::to_string(&checked.settle(&reply).expect("known ids")).expect("json");
        prop_assert_eq!(&first, &second);
        // Feeding the settled values back as a reply settles to the same values.
        let outcome = checked.settle(&reply).expect("known ids");
        let again = Reply {
            answers: outcome.answers.iter()
                .map(|a| (a.id.clone(), a.chosen.iter().map(|c| c.value.clone()).collect()))
                .collect(),
            ..reply.clone()
        };
        let replayed = checked.settle(&again).expect("known ids");
        for (a, b) in outcome.answers.iter().zip(&replayed.answers) {
            prop_assert_eq!(&a.chosen, &b.chosen);
        }
    }

    #[test]
    fn absent_answers_take_their_defaults((set, reply) in set_and_reply()) {
        let outcome = set.settle(&reply).expect("known ids");
        for (question, answer) in set.questions.iter().zip(&outcome.answers) {
            if reply.skipped || !reply.answers.contains_key(&question.id) {
                prop_assert!(answer.defaulted);
                let values: Vec<&String> = answer.chosen.iter().map(|c| &c.value).collect();
                prop_assert_eq!(values, question.defaults.iter().collect::<Vec<_>>());
            } else {
                prop_assert!(!answer.defaulted);
            }
        }
    }

    #[test]
    fn only_offered_values_survive_unless_free_text((set, reply) in set_and_reply()) {
        let outcome = set.settle(&reply).expect("known ids");
        for (question, answer) in set.questions.iter().zip(&outcome.answers) {
            for chosen in &answer.chosen {
                let offered = question.options.iter().any(|o| o.value == chosen.value);
                prop_assert!(offered || question.allow_free_text, "{} kept {:?}", question.id, chosen.value);
                prop_assert!(!chosen.value.is_empty());
            }
            if !question.multiple {
                prop_assert!(answer.chosen.len() <= 1);
            }
        }
    }

    #[test]
    fn approve_is_defaults_and_reject_is_skip(set in question_set(), approve in any::<bool>()) {
        let checked = set.prepare().expect("valid");
        let decision = Delivery::Decision(Decision { approve, answered_by: None, answered_via: Surface::Approvals });
        let decided = checked.settle_delivery(Awaiting::Answers, &decision).expect("settles");
        let reply = Reply { skipped: !approve, ..Reply::new(Surface::Approvals) };
        prop_assert_eq!(decided, checked.settle(&reply).expect("settles"));
    }
}
