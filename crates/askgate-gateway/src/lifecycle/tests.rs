//! Every order of events a call can meet, and what each path then does.

use askgate_core::{Method, Risk};

use super::{Answer, Audited, Decision, Effect, Lifecycle, Recorded, when_recorded};
use crate::record::{CANCELLED, Ended};

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
fn a_read_nobody_decided_is_sent_then_recorded_with_its_end_before_the_answer() {
    let effects = run(&[
        decided(Method::AutoApproved, true, Recorded::WhenEnded),
        Event::Ended(answered()),
    ]);
    assert_eq!(
        effects,
        [
            Effect::CountDecision(Method::AutoApproved),
            Effect::Send,
            Effect::RecordEnd(answered()),
            Effect::Answer(Answer::Result),
        ]
    );
}

#[test]
fn a_write_is_durable_before_it_is_sent() {
    let effects = run(&[
        decided(Method::Elicited, true, Recorded::BeforeSent),
        Event::Recorded(true),
        Event::Ended(answered()),
    ]);
    assert_eq!(
        effects,
        [
            Effect::CountDecision(Method::Elicited),
            Effect::RecordSent,
            Effect::Send,
            Effect::RecordEnd(answered()),
            Effect::Answer(Answer::Result),
        ]
    );
}

#[test]
fn a_refused_call_is_audited_and_answered_and_never_recorded_as_sent() {
    let effects = run(&[decided(Method::Blocked, false, Recorded::BeforeSent)]);
    assert_eq!(
        effects,
        [
            Effect::CountDecision(Method::Blocked),
            Effect::Audit(Audited::Decision),
            Effect::Answer(Answer::NotSent(Audited::Decision)),
        ]
    );
}

#[test]
fn a_call_cancelled_while_decided_is_audited_as_withdrawn_and_not_sent() {
    let effects = run(&[Event::Decided(Decision {
        method: Method::Elicited,
        proceeds: true,
        recorded: Recorded::BeforeSent,
        cancelled: true,
    })]);
    assert_eq!(
        effects,
        [
            Effect::CountDecision(Method::Elicited),
            Effect::Audit(Audited::Withdrawal),
            Effect::Answer(Answer::NotSent(Audited::Withdrawal)),
        ]
    );
}

#[test]
fn a_call_cancelled_while_its_record_is_written_is_answered_at_once_and_ends_not_sent() {
    let effects = run(&[
        decided(Method::Elicited, true, Recorded::BeforeSent),
        Event::Cancelled,
        Event::Cancelled,
        Event::Recorded(true),
        // A late end changes nothing: it was never sent.
        Event::Ended(answered()),
    ]);
    assert_eq!(
        effects,
        [
            Effect::CountDecision(Method::Elicited),
            Effect::RecordSent,
            Effect::Answer(Answer::NotSent(Audited::Withdrawal)),
            Effect::RecordEnd(Ended::NotSent(CANCELLED.to_owned())),
        ]
    );
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
fn a_cancel_after_sending_still_records_the_end_and_a_failure_is_answered_as_one() {
    let gone = Ended::Failed("its connection closed".into());
    let effects = run(&[
        decided(Method::NotRequired, true, Recorded::WhenEnded),
        Event::Cancelled,
        Event::Ended(gone.clone()),
    ]);
    assert_eq!(
        effects[1..],
        [
            Effect::Send,
            Effect::RecordEnd(gone.clone()),
            Effect::Answer(Answer::Failed(gone)),
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
    assert_eq!(
        when_recorded(Risk::Read, Method::NotRequired, false),
        WhenEnded
    );
    assert_eq!(
        when_recorded(Risk::Read, Method::AutoApproved, false),
        WhenEnded
    );
    assert_eq!(
        when_recorded(Risk::Read, Method::AutoApproved, true),
        BeforeSent
    );
    assert_eq!(
        when_recorded(Risk::LowWrite, Method::AutoApproved, false),
        BeforeSent
    );
    assert_eq!(
        when_recorded(Risk::Read, Method::Elicited, false),
        BeforeSent
    );
}
