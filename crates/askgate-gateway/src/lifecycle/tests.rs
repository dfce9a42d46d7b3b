//! Every order of events a call can meet, and what each path then does.

use askgate_core::{Method, Risk};

use super::{Answer, Audited, Decision, Effect, Lifecycle, Recorded, when_recorded};
use crate::record::Ended;

/// What happens to a call.
#[derive(Debug, Clone)]
enum Event {
    Decided(Decision),
    Cancelled,
    Recorded(bool),
    Ended(Ended),
}

/// The effects of `events`, in order.
fn run(events: &[Event]) -> Vec<Effect> {
    let mut call = Lifecycle::new();
    let mut effects = Vec::new();
    for event in events {
        match event.clone() {
            Event::Decided(decision) => call.handle_decided(decision),
            Event::Cancelled => call.handle_cancelled(),
            Event::Recorded(written) => call.handle_recorded(written),
            Event::Ended(ended) => call.handle_ended(ended),
        }
        effects.extend(std::iter::from_fn(|| call.poll()));
    }
    assert!(call.is_over(), "every call here ends: {events:?}");
    effects
}

fn decided(method: Method, proceeds: bool, recorded: Recorded) -> Event {
    Event::Decided(Decision {
        method,
        proceeds,
        recorded,
        cancelled: false,
    })
}

fn answered() -> Ended {
    Ended::Answered {
        is_error: false,
        blocks: 1,
    }
}

#[test]
fn every_path_gives_its_effects_in_order() {
    let gone = Ended::Failed("its connection closed".into());
    let cancelled_while_decided = Event::Decided(Decision {
        method: Method::Elicited,
        proceeds: true,
        recorded: Recorded::BeforeSent,
        cancelled: true,
    });
    let cases: Vec<(&str, Vec<Event>, Vec<Effect>)> = vec![
        (
            "a read nobody decided is sent, then recorded with its end before the answer",
            vec![
                decided(Method::AutoApproved, true, Recorded::WhenEnded),
                Event::Ended(answered()),
            ],
            vec![
                Effect::CountDecision(Method::AutoApproved),
                Effect::Send,
                Effect::RecordEnd(answered()),
                Effect::Answer(Answer::Result),
            ],
        ),
        (
            "a write is durable before it is sent",
            vec![
                decided(Method::Elicited, true, Recorded::BeforeSent),
                Event::Recorded(true),
                Event::Ended(answered()),
            ],
            vec![
                Effect::CountDecision(Method::Elicited),
                Effect::RecordSent,
                Effect::Send,
                Effect::RecordEnd(answered()),
                Effect::Answer(Answer::Result),
            ],
        ),
        (
            "a refused call is audited and answered, never recorded as sent",
            vec![decided(Method::Blocked, false, Recorded::BeforeSent)],
            vec![
                Effect::CountDecision(Method::Blocked),
                Effect::Audit(Audited::Decision),
                Effect::Answer(Answer::NotSent(Audited::Decision)),
            ],
        ),
        (
            "a call cancelled while decided is audited as withdrawn and not sent",
            vec![cancelled_while_decided],
            vec![
                Effect::CountDecision(Method::Elicited),
                Effect::Audit(Audited::Withdrawal),
                Effect::Answer(Answer::NotSent(Audited::Withdrawal)),
            ],
        ),
        (
            "a call cancelled while its record is written is answered at once and ends not sent \
             (a second cancel and a late end change nothing)",
            vec![
                decided(Method::Elicited, true, Recorded::BeforeSent),
                Event::Cancelled,
                Event::Cancelled,
                Event::Recorded(true),
                Event::Ended(answered()),
            ],
            vec![
                Effect::CountDecision(Method::Elicited),
                Effect::RecordSent,
                Effect::Answer(Answer::NotSent(Audited::Withdrawal)),
                Effect::RecordEnd(Ended::Cancelled),
            ],
        ),
        (
            "a cancel after sending still records the end; a failure is answered as one",
            vec![
                decided(Method::NotRequired, true, Recorded::WhenEnded),
                Event::Cancelled,
                Event::Ended(gone.clone()),
            ],
            vec![
                Effect::CountDecision(Method::NotRequired),
                Effect::Send,
                Effect::RecordEnd(gone.clone()),
                Effect::Answer(Answer::Failed(gone)),
            ],
        ),
    ];
    for (path, events, expected) in cases {
        assert_eq!(run(&events), expected, "{path}");
    }
}

#[test]
fn a_record_that_fails_sends_nothing() {
    let failed = run(&[
        decided(Method::Elicited, true, Recorded::BeforeSent),
        Event::Recorded(false),
    ]);
    assert_eq!(
        failed[1..],
        [Effect::RecordSent, Effect::Answer(Answer::Unrecorded)]
    );
    // Cancelled, then failed: answered once, nothing to record.
    let cancelled = run(&[
        decided(Method::Elicited, true, Recorded::BeforeSent),
        Event::Cancelled,
        Event::Recorded(false),
    ]);
    assert_eq!(
        cancelled[1..],
        [
            Effect::RecordSent,
            Effect::Answer(Answer::NotSent(Audited::Withdrawal))
        ]
    );
}

#[test]
fn a_second_decision_or_end_is_ignored() {
    let mut call = Lifecycle::new();
    call.handle_decided(Decision {
        method: Method::NotRequired,
        proceeds: true,
        recorded: Recorded::WhenEnded,
        cancelled: false,
    });
    call.handle_decided(Decision {
        method: Method::Blocked,
        proceeds: false,
        recorded: Recorded::BeforeSent,
        cancelled: false,
    });
    call.handle_ended(answered());
    call.handle_ended(Ended::KeptAsking);
    let effects: Vec<Effect> = std::iter::from_fn(|| call.poll()).collect();
    assert_eq!(effects.len(), 4, "{effects:?}");
    assert!(call.is_over());
}

#[test]
fn only_a_read_nobody_decided_is_recorded_when_it_ends() {
    use Recorded::{BeforeSent, WhenEnded};
    // (risk, how it was decided, durable reads) -> when it is recorded.
    let table = [
        (Risk::Read, Method::NotRequired, false, WhenEnded),
        (Risk::Read, Method::AutoApproved, false, WhenEnded),
        (Risk::Read, Method::AutoApproved, true, BeforeSent),
        (Risk::LowWrite, Method::AutoApproved, false, BeforeSent),
        (Risk::Read, Method::Elicited, false, BeforeSent),
    ];
    for (risk, method, durable_reads, expected) in table {
        assert_eq!(
            when_recorded(risk, method, durable_reads),
            expected,
            "{risk:?} {method:?} durable_reads={durable_reads}"
        );
    }
}
