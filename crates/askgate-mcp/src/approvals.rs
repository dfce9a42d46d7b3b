//! Answers to an ask a panel decides (a team's approval rule, kept with
//! the ask: askgate-core's [`Panel`]), from whichever surface a person
//! answers on — the inbox's page, the CLI, the agent's own client where
//! the rule lets it count. Every surface settles through
//! [`settle_as_person`]: an ask without a panel settles on its first
//! answer as before; one with a panel records the person's answer and
//! settles only when the panel's count says so. The store refuses any
//! other answer to it.

use askgate_core::approval::{Answer, Panel, Progress};
use askgate_core::{CONFIRM_FIELD, Outcome};
use askgate_store::{
    AskRow, AskStatus, AuditEntry, Count, Counted, Decision, PersonAnswer, RecordedAnswer,
    SettleError, Settlement, Store,
};
use jiff::Timestamp;
use serde_json::{Value as Json, json};

use crate::stored::form_outcome;

/// The approval rule a call's confirmation is under (see
/// [`Policy::approval`](crate::Policy::approval)): who may answer its ask,
/// and who the calling agent acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approving {
    /// The rule resolved for this call; kept with its ask.
    pub panel: Panel,
    /// The people the calling agent acts for. Where the rule lets the one
    /// of them answer, the agent's own client's answer counts as theirs;
    /// otherwise the client is not asked, and the ask waits for the
    /// people the rule names.
    pub acts_for: Vec<String>,
    /// How long its ask waits for its answers before it expires, when the
    /// rule says (else the confirmations' `ask_lifetime`).
    pub expires: Option<std::time::Duration>,
    /// Whether the agent's own client speaks for its person: not for an
    /// agent whose name many people's clients may share (an OAuth
    /// client's id, a scope whoever holds it acts as). Then the client is
    /// not asked, and its person answers where they sign in as themselves.
    pub client_speaks: bool,
}

impl Approving {
    /// The person the client's answer counts as, if it counts at all.
    pub fn client_person(&self) -> Option<&str> {
        if !self.client_speaks {
            return None;
        }
        self.panel.elicitation_counts_as(&self.acts_for, false)
    }

    /// The panel as kept with the ask. Should it not serialize, what is
    /// kept still marks the ask as governed, and reads back as no panel
    /// (see [`panel_of`]): nobody's answer settles it — it fails closed.
    pub fn kept(&self) -> Json {
        serde_json::to_value(&self.panel)
            .unwrap_or_else(|_| json!({"rule": self.panel.rule, "unreadable": true}))
    }
}

/// The panel kept with `row`, if a panel decides it.
///
/// # Errors
/// The kept panel cannot be read (a store written by a newer askgate,
/// say): named, so that the ask is refused rather than settled by one
/// answer.
pub fn panel_of(row: &AskRow) -> Result<Option<Panel>, String> {
    row.ask
        .panel
        .as_ref()
        .map(|kept| {
            serde_json::from_value(kept.clone()).map_err(|e| {
                format!(
                    "ask {}'s approval rule cannot be read ({e}); it is not settled",
                    row.ask.id
                )
            })
        })
        .transpose()
}

/// Whether `row`, decided by `panel`, has waited long enough at `now` to
/// escalate.
pub fn escalated(panel: &Panel, row: &AskRow, now: Timestamp) -> bool {
    panel
        .escalates_after()
        .is_some_and(|after| now.duration_since(row.ask.created_at) >= after)
}

/// Where `row` stands under `panel` after `answers`, at `now`.
pub fn progress_of(
    panel: &Panel,
    row: &AskRow,
    answers: &[RecordedAnswer],
    now: Timestamp,
) -> Progress {
    panel.tally(&counted(answers), escalated(panel, row, now))
}

/// How many more approvals `row` waited for just after `person`'s answer
/// (read in order from `answers`), at `now`: `None` once that answer
/// settled it (or when `person` has not answered).
pub fn needed_after(
    panel: &Panel,
    row: &AskRow,
    answers: &[RecordedAnswer],
    person: &str,
    now: Timestamp,
) -> Option<u16> {
    let upto = answers.iter().position(|a| a.answer.person == person)? + 1;
    match progress_of(panel, row, &answers[..upto], now) {
        Progress::Waiting { accepts_needed, .. } => Some(accepts_needed),
        _ => None,
    }
}

/// Apply `settlement`, `person`'s answer to `row`, at `now` — their
/// sign-in having put them in `groups` (an OpenID provider's groups claim;
/// none for a person of the config): the ask
/// settled by it (first answer wins) when no panel decides it; else the
/// person's answer recorded, and the ask settled when its panel says so.
/// The ask as it stands afterwards, pending while the panel waits on
/// others.
///
/// # Errors
/// Each refusal, as [`SettleError`]: settled or expired meanwhile, a
/// second answer of the same person, a person the rule excludes (with the
/// part of the rule that does).
pub async fn settle_as_person(
    store: &Store,
    row: &AskRow,
    settlement: &Settlement,
    person: &str,
    groups: &[String],
    now: Timestamp,
) -> Result<AskRow, SettleError> {
    let id = &row.ask.id;
    if row.ask.panel.is_none() {
        return store.settle(id, settlement, now).await;
    }
    let answer = PersonAnswer {
        person: person.to_owned(),
        accepted: accepts(settlement),
        reply: settlement.reply.clone(),
        via: settlement.answered_via.clone(),
        groups: groups.to_vec(),
    };
    let counted: Counted = store.answer_as(id, &answer, now, count_at(now)).await?;
    let entry = answer_entry(&counted, &answer, now);
    if let Err(error) = store.append_audit(&entry).await {
        // Counted, and the ask's own decision names everyone who settled
        // it; this answer's entry is missing from the chain.
        tracing::error!(ask = %id, person, %error, "a person's answer was counted but its audit entry could not be written");
    }
    Ok(counted.row)
}

/// Carry the no's given to the earlier asks of `row`'s call (withdrawn,
/// and asked again as `row`) over to `row`, at `now`: a person's no counts
/// whatever it was asked with, so with `veto = false` the no's a quorum
/// had gathered still count. Yes's are not carried: they were given to
/// another question. Each carried no is its own audit entry. The ask as
/// it stands after them, when any was carried.
///
/// # Errors
/// The store failed reading or writing.
pub async fn carry_noes(
    store: &Store,
    row: &AskRow,
    now: Timestamp,
) -> Result<Option<AskRow>, askgate_store::Error> {
    let Some(call_key) = &row.ask.call_key else {
        return Ok(None);
    };
    let Ok(Some(panel)) = panel_of(row) else {
        return Ok(None);
    };
    let Some(earlier) = store
        .asks_of_call(call_key, 2)
        .await?
        .into_iter()
        .find(|earlier| earlier.ask.id != row.ask.id)
    else {
        return Ok(None);
    };
    // Only from the ask withdrawn for this one while it was live (its
    // question changed, its caller gave up): never from one answered,
    // declined or run out of time — a no stands for its ask's lifetime.
    let live_then = match (earlier.settled_at, earlier.ask.expires_at) {
        (Some(settled), Some(expires)) => settled < expires,
        (Some(_), None) => true,
        (None, _) => false,
    };
    let withdrawn = matches!(earlier.status, AskStatus::Expired | AskStatus::Cancelled)
        && earlier.ask.panel.is_some()
        && live_then;
    if !withdrawn {
        return Ok(None);
    }
    let escalated = escalated(&panel, row, now);
    let noes: Vec<PersonAnswer> = store
        .answers(&earlier.ask.id)
        .await?
        .into_iter()
        .map(|recorded| recorded.answer)
        // Those who may answer this ask now: nothing is recorded as an
        // attempt nobody made.
        .filter(|answer| {
            !answer.accepted
                && panel
                    .eligible_in(&answer.person, &answer.groups, escalated)
                    .is_ok()
        })
        .collect();
    let mut after = None;
    for no in noes {
        match store.answer_as(&row.ask.id, &no, now, count_at(now)).await {
            Ok(counted) => {
                let mut entry = answer_entry(&counted, &no, now);
                entry.reason = format!(
                    "{} (carried over from the call's earlier ask)",
                    entry.reason
                );
                store.append_audit(&entry).await?;
                after = Some(counted.row);
            }
            // Answered here already, no longer eligible, or settled by the
            // no's carried so far: nothing more to carry.
            Err(SettleError::Store(error)) => return Err(error),
            Err(_) => {}
        }
    }
    Ok(after)
}

/// The audit entry of `answer`, counted at `now` as `counted` says: who,
/// through which surface, yes or no, and what the ask waits for now.
fn answer_entry(counted: &Counted, answer: &PersonAnswer, now: Timestamp) -> AuditEntry {
    let row = &counted.row;
    let rule = panel_of(row)
        .ok()
        .flatten()
        .map_or_else(String::new, |panel| {
            format!(" under {} ({})", panel.rule, panel.who)
        });
    let said = if answer.accepted {
        "approved"
    } else {
        "declined"
    };
    let standing = match row.status {
        AskStatus::Pending => "the ask waits for more answers".to_owned(),
        status => format!("the ask is {}", status.as_str()),
    };
    AuditEntry {
        at: now,
        server: row.ask.server.clone().unwrap_or_default(),
        tool: row.ask.tool.clone().unwrap_or_default(),
        risk: row.ask.risk.clone().unwrap_or_default(),
        decision: Decision::Answered,
        reason: format!("{} {said}{rule}; {standing}", answer.person),
        answered_by: Some(answer.person.clone()),
        principal: Some(row.ask.principal.clone()),
        answered_via: Some(answer.via.clone()),
        arguments_digest: None,
        ask_id: Some(row.ask.id.clone()),
        decision_key: Some(format!("answer:{}:{}", row.ask.id, answer.person)),
    }
}

/// The count [`Store::answer_as`] takes for an ask its panel decides, at
/// `now`: the newest answer's person checked against the panel, the
/// answers tallied, and the settlement when they settle it — naming
/// everyone who did.
pub fn count_at(now: Timestamp) -> impl FnOnce(&AskRow, &[RecordedAnswer]) -> Count + Send {
    move |row, answers| {
        let panel = match panel_of(row) {
            Ok(Some(panel)) => panel,
            Ok(None) => return Count::Refuse("the ask has no approval rule to count".into()),
            Err(why) => return Count::Refuse(why),
        };
        let escalated = escalated(&panel, row, now);
        let Some(newest) = answers.last() else {
            return Count::Wait;
        };
        let (person, groups) = (&newest.answer.person, &newest.answer.groups);
        if let Err(why) = panel.eligible_in(person, groups, escalated) {
            return Count::Refuse(why.to_string());
        }
        let (status, by) = match panel.tally(&counted(answers), escalated) {
            Progress::Waiting { .. } => return Count::Wait,
            Progress::Accepted { by } => (AskStatus::Answered, by),
            Progress::Declined { by } => (AskStatus::Declined, by),
            Progress::Unreachable { declined_by } => (AskStatus::Declined, declined_by),
        };
        let reply = match status {
            AskStatus::Answered => json!({"action": "accept", "content": {CONFIRM_FIELD: true}}),
            _ => json!({"action": "decline"}),
        };
        let outcome = form_outcome(&row.ask.request, Some(&reply))
            .ok()
            .flatten()
            .map_or(Json::Null, |outcome: Outcome| {
                serde_json::to_value(outcome).unwrap_or(Json::Null)
            });
        Count::Settle(Settlement {
            status,
            reply,
            outcome,
            answered_by: Some(by.join(", ")),
            answered_via: via_of(answers, &by),
        })
    }
}

/// Whether `settlement` says yes: accepted, with the confirmation ticked.
fn accepts(settlement: &Settlement) -> bool {
    settlement.status == AskStatus::Answered
        && settlement
            .reply
            .pointer(&format!("/content/{CONFIRM_FIELD}"))
            == Some(&Json::Bool(true))
}

/// The answers as the panel counts them.
fn counted(answers: &[RecordedAnswer]) -> Vec<Answer> {
    answers
        .iter()
        .map(|a| Answer {
            person: a.answer.person.clone(),
            accepted: a.answer.accepted,
            groups: a.answer.groups.clone(),
        })
        .collect()
}

/// The surfaces the answers of `by` came through, each once, in order
/// (`web`, `web, cli`).
fn via_of(answers: &[RecordedAnswer], by: &[String]) -> String {
    let mut surfaces: Vec<&str> = Vec::new();
    for answer in answers.iter().filter(|a| by.contains(&a.answer.person)) {
        if !surfaces.contains(&answer.answer.via.as_str()) {
            surfaces.push(&answer.answer.via);
        }
    }
    surfaces.join(", ")
}

/// Where an ask a rule decides stands: what its page, `askgate asks show`
/// and their JSON show.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Standing {
    /// The rule, as the panel names it (`approvals[0]: 2 of sre`, and whom
    /// it escalated to once it has).
    pub rule: String,
    /// Each answer so far, in order: who, and whether they approved.
    pub answers: Vec<(String, bool)>,
    /// Approvals still needed, while it waits.
    pub needed: Option<u16>,
    /// Who may still answer, by name, while it waits.
    pub waiting_on: Vec<String>,
}

impl Standing {
    /// The standing as lines of text.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!("rule: {}", self.rule)];
        for (person, approved) in &self.answers {
            let said = if *approved { "approved" } else { "declined" };
            lines.push(format!("  {person} {said}"));
        }
        if let Some(needed) = self.needed {
            let s = if needed == 1 { "" } else { "s" };
            lines.push(format!("needed: {needed} more approval{s}"));
            if !self.waiting_on.is_empty() {
                lines.push(format!("may still answer: {}", self.waiting_on.join(", ")));
            }
        }
        lines
    }
}

/// The standing of `row` at `now`, when a rule decides it.
///
/// # Errors
/// The store failed reading its answers.
pub async fn standing(
    store: &Store,
    row: &AskRow,
    now: Timestamp,
) -> Result<Option<Standing>, askgate_store::Error> {
    let Ok(Some(panel)) = panel_of(row) else {
        return Ok(None);
    };
    let answers = store.answers(&row.ask.id).await?;
    let escalated = escalated(&panel, row, now);
    let counted = counted(&answers);
    let (needed, waiting_on) = match panel.tally(&counted, escalated) {
        Progress::Waiting { accepts_needed, .. } if row.status == AskStatus::Pending => (
            Some(accepts_needed),
            panel
                .yet_to_answer(&counted, escalated)
                .into_iter()
                .map(str::to_owned)
                .chain(
                    panel
                        .signed_in(escalated)
                        .map(|group| format!("anyone signed in as {group}")),
                )
                .collect(),
        ),
        _ => (None, Vec::new()),
    };
    Ok(Some(Standing {
        rule: format!("{}: {}", panel.rule, panel.describe(escalated)),
        answers: counted
            .into_iter()
            .map(|a| (a.person, a.accepted))
            .collect(),
        needed,
        waiting_on,
    }))
}
