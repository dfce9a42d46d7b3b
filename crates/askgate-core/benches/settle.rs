//! Throughput of the engine's hot paths, against a bare JSON parse of the
//! same answer measured in the same run.
//!
//! A small self-contained harness (no criterion): each case is calibrated and
//! warmed up, then all cases are timed over several interleaved rounds; the
//! median round of each is reported.
//!
//! Run: `cargo bench -p askgate-core --bench settle`.
//! Knobs (environment): `ASKGATE_BENCH_ROUNDS` (default 7),
//! `ASKGATE_BENCH_ROUND_MS` (default 300), `ASKGATE_BENCH_ONLY` (run only the
//! cases whose name contains this text, plus the baseline; useful under a
//! profiler).
//!
//! Targets: settling a 10-field answer end to end from its JSON text at
//! >= 500,000 answers/s on one core, and within 3x the time of the bare parse.
//!
//! Text is settled two ways: parsed to a `Map` then `Ask::settle` (what a
//! caller holding parsed JSON does), and `Ask::settle_text` (names routed
//! while parsing); both are reported.

// A benchmark binary reports on stdout and has no public API to document.
#![allow(clippy::print_stdout, missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;

use askgate_core::{
    Ask, CheckedSet, Form, Outcome, Provenance, QuestionSet, Reply, Response, Revision, Step,
};
use serde::Deserialize;
use serde_json::{Map, Value as Json};

/// A realistic 10-field form: one field of every type, with constraints.
const FORM: &str = r#"{
  "message": "Schedule the billing-api deploy",
  "fields": [
    {"id": "owner", "title": "Owner", "type": "text", "format": "email", "max_length": 120},
    {"id": "replicas", "title": "Replicas", "type": "integer", "minimum": 1, "maximum": 12},
    {"id": "budget", "title": "Budget (EUR)", "type": "number", "minimum": 0, "maximum": 10000},
    {"id": "notify", "title": "Notify the team", "type": "boolean"},
    {"id": "environment", "title": "Environment", "type": "choice",
     "options": [{"value": "staging", "label": "Staging", "hotkey": "s"},
                 {"value": "production", "label": "Production", "hotkey": "p"},
                 {"value": "canary", "label": "Canary", "hotkey": "c"}]},
    {"id": "regions", "title": "Regions", "type": "choice", "multiple": true,
     "min_items": 1, "max_items": 3,
     "options": [{"value": "eu-west-1", "label": "Ireland"},
                 {"value": "us-east-1", "label": "Virginia"},
                 {"value": "ap-south-1", "label": "Mumbai"},
                 {"value": "sa-east-1", "label": "Sao Paulo"}]},
    {"id": "freeze", "title": "Code freeze", "type": "date"},
    {"id": "start", "title": "Start", "type": "instant", "zone": "Europe/Paris"},
    {"id": "team_zone", "title": "Team time zone", "type": "zone"},
    {"id": "window", "title": "Maintenance window", "type": "time_range", "zone": "Europe/Paris"}
  ]
}"#;

/// A valid answer to [`FORM`] as a 2025-11-25 client sends it (`content` of
/// the `ElicitResult`): every field answered, the multi-select as an array,
/// the time range as its two generated properties.
const CONTENT: &str = r#"{
  "owner": "ada.lovelace@example.com",
  "replicas": 4,
  "budget": 1250.5,
  "notify": true,
  "environment": "production",
  "regions": ["eu-west-1", "us-east-1"],
  "freeze": "2026-06-30",
  "start": "2026-07-01T09:30:00",
  "team_zone": "America/New_York",
  "window.from": "2026-07-01T22:00:00+02:00",
  "window.to": "2026-07-02T02:00:00+02:00"
}"#;

const REVISION: Revision = Revision::V2025_11_25;
const FIELDS: usize = 10;

/// How long and how often each case runs.
struct Plan {
    rounds: usize,
    round: Duration,
    only: Option<String>,
}

impl Plan {
    fn from_env() -> Plan {
        let number = |name: &str, default: u64| -> u64 {
            std::env::var(name)
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .filter(|n| *n > 0)
                .unwrap_or(default)
        };
        Plan {
            rounds: usize::try_from(number("ASKGATE_BENCH_ROUNDS", 7)).unwrap_or(7),
            round: Duration::from_millis(number("ASKGATE_BENCH_ROUND_MS", 300)),
            only: std::env::var("ASKGATE_BENCH_ONLY")
                .ok()
                .filter(|s| !s.is_empty()),
        }
    }

    fn wants(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|only| name.contains(only))
    }
}

/// One case to time: its name and the operation, run through `black_box`.
struct Case<'a> {
    name: &'static str,
    op: Box<dyn FnMut() + 'a>,
    /// Iterations per round, from calibration.
    iterations: u64,
    /// ops/s of each timed round.
    rates: Vec<f64>,
}

impl<'a> Case<'a> {
    fn new<R>(name: &'static str, mut op: impl FnMut() -> R + 'a) -> Case<'a> {
        Case {
            name,
            op: Box::new(move || {
                black_box(op());
            }),
            iterations: 0,
            rates: Vec::new(),
        }
    }

    fn run(&mut self, iterations: u64) -> Duration {
        let start = Instant::now();
        for _ in 0..iterations {
            (self.op)();
        }
        start.elapsed()
    }

    /// Grow a batch until it takes a measurable slice of a round, size the
    /// rounds from it, then warm up for one round (caches, branch
    /// predictors, allocator, CPU clock).
    fn calibrate(&mut self, round: Duration) {
        let slice = (round / 20).max(Duration::from_millis(1));
        let mut batch: u64 = 1;
        let mut took = self.run(batch);
        while took < slice && batch < 1 << 40 {
            batch *= 2;
            took = self.run(batch);
        }
        let per_op = took.as_secs_f64() / batch as f64;
        self.iterations = ((round.as_secs_f64() / per_op) as u64).max(1);
        self.run(self.iterations);
    }

    fn round(&mut self) {
        let took = self.run(self.iterations);
        self.rates.push(self.iterations as f64 / took.as_secs_f64());
    }

    fn measured(&self) -> Measured {
        let mut rates = self.rates.clone();
        rates.sort_by(f64::total_cmp);
        Measured {
            name: self.name,
            median: rates[rates.len() / 2],
            low: rates[0],
            high: rates[rates.len() - 1],
        }
    }
}

/// Time every case: calibrate and warm each, then run the rounds
/// interleaved (round 1 of every case, then round 2, ...), so a change in
/// machine load hits all cases alike and the ratios stay meaningful.
fn measure_all(plan: &Plan, cases: &mut [Case<'_>]) -> Vec<Measured> {
    for case in cases.iter_mut() {
        case.calibrate(plan.round);
    }
    for _ in 0..plan.rounds {
        for case in cases.iter_mut() {
            case.round();
        }
    }
    cases.iter().map(Case::measured).collect()
}

/// The timings of one case.
struct Measured {
    name: &'static str,
    /// Median ops/s over the rounds.
    median: f64,
    /// Slowest and fastest round, ops/s.
    low: f64,
    high: f64,
}

impl Measured {
    fn nanos_per_op(&self) -> f64 {
        1e9 / self.median
    }

    /// How many times longer one op takes than one op of `baseline`.
    fn ratio(&self, baseline: &Measured) -> f64 {
        baseline.median / self.median
    }
}

fn parse_content(text: &str) -> Map<String, Json> {
    serde_json::from_str(text).expect("CONTENT is a JSON object")
}

/// Check, once and before any timing, that the cases measure what they
/// claim: the form maps, every answered property is one the request asks
/// for, and the answer settles to `Accepted` with all 10 fields answered.
fn check_setup(ask: &Ask) {
    let request = ask.request(REVISION).expect("the form maps to 2025-11-25");
    let content = parse_content(CONTENT);
    for key in content.keys() {
        assert!(
            request.requested_schema.property(key).is_some(),
            "CONTENT answers {key:?}, which the request does not ask"
        );
    }
    serde_json::to_string(&request).expect("the request serializes");
    let from_text = ask.settle_text(REVISION, CONTENT).expect("CONTENT parses");
    let Step::Settled(from_text) = from_text else {
        panic!("the answer must be accepted from its text too");
    };
    match ask.settle(REVISION, &Response::accept(content)) {
        Step::Settled(outcome) if outcome != from_text => {
            panic!("settle_text and settle must agree: {from_text:?} vs {outcome:?}")
        }
        Step::Settled(Outcome::Accepted { values }) => {
            assert_eq!(values.len(), FIELDS, "every field settles");
            for settled in &values {
                assert_eq!(
                    settled.source,
                    Provenance::Answered,
                    "{} is answered, not defaulted",
                    settled.id
                );
            }
        }
        Step::Settled(other) => panic!("the answer must be accepted, got {other:?}"),
        Step::ReAsk(again) => panic!(
            "the answer must be accepted, got a re-ask: {:?}",
            again.reasons()
        ),
    }
}

/// A 5-question set: single and multiple choice, free text, a typed date.
fn questions() -> Json {
    common::migration_set([
        serde_json::json!({"id": "ticket", "prompt": "Ticket?", "allow_free_text": true, "defaults": ["OPS-1"],
         "options": [{"value": "OPS-1", "label": "OPS-1"}]}),
        serde_json::json!({"id": "day", "prompt": "Which day?", "input": {"type": "date"}, "defaults": ["2026-12-01"]}),
        serde_json::json!({"id": "notify", "prompt": "Notify the team?", "defaults": ["yes"],
         "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}]}),
    ])
}

/// A reply answering every question of [`questions`].
const REPLY: &str = r#"{"answers": {"env": ["prod"], "tables": ["payments", "refunds"], "ticket": ["INC-42"], "day": ["2026-12-03"], "notify": ["no"]}, "answered_by": "alice", "answered_via": "web"}"#;

fn main() {
    let plan = Plan::from_env();
    let form: Form = serde_json::from_str(FORM).expect("FORM is a valid form");
    assert_eq!(form.fields.len(), FIELDS);
    let ask = Ask::new(form).expect("FORM is askable");
    check_setup(&ask);
    let accepted = Response::accept(parse_content(CONTENT));

    println!(
        "askgate-core settle bench: {FIELDS}-field form, revision {REVISION}, \
         {} rounds x {} ms, median reported",
        plan.rounds,
        plan.round.as_millis()
    );

    let questions = QuestionSet::deserialize(&questions())
        .expect("the questions are a question set")
        .prepare()
        .expect("the questions are valid");
    let reply: Reply = serde_json::from_str(REPLY).expect("REPLY is a reply");
    questions.settle(&reply).expect("REPLY settles");
    let mut cases = cases(&ask, &accepted, &questions);
    // The baseline (first) always runs: every ratio is against it.
    let mut position = 0;
    cases.retain(|case| {
        position += 1;
        position == 1 || plan.wants(case.name)
    });
    let measured = measure_all(&plan, &mut cases);
    let (baseline, cases) = measured
        .split_first()
        .expect("the baseline is always measured");
    print_table(baseline, cases);
    print_targets(baseline, cases);
}

/// Every case, the baseline (a bare parse of the answer) first.
fn cases<'a>(ask: &'a Ask, accepted: &'a Response, questions: &'a CheckedSet) -> Vec<Case<'a>> {
    let mut cases = vec![Case::new(
        "bare parse: CONTENT -> serde_json::Value",
        move || serde_json::from_str::<Json>(black_box(CONTENT)).expect("CONTENT parses"),
    )];
    cases.push(Case::new("map a 10-field form: request()", move || {
        black_box(ask).request(REVISION).expect("the form maps")
    }));
    cases.push(Case::new(
        "map a 10-field form: request() + to_string",
        move || {
            let request = black_box(ask).request(REVISION).expect("the form maps");
            serde_json::to_string(&request).expect("the request serializes")
        },
    ));
    cases.push(Case::new(
        "settle a 10-field answer: pre-parsed map",
        move || black_box(ask).settle(REVISION, black_box(accepted)),
    ));
    cases.push(Case::new(
        "settle a 10-field answer: from text",
        move || {
            let content: Map<String, Json> =
                serde_json::from_str(black_box(CONTENT)).expect("CONTENT parses");
            black_box(ask).settle(REVISION, &Response::accept(content))
        },
    ));
    cases.push(Case::new(
        "settle a 10-field answer: from text, settle_text",
        move || {
            black_box(ask)
                .settle_text(REVISION, black_box(CONTENT))
                .expect("CONTENT parses")
        },
    ));
    cases.push(Case::new(
        "bare parse: REPLY -> serde_json::Value",
        move || serde_json::from_str::<Json>(black_box(REPLY)).expect("REPLY parses"),
    ));
    cases.push(Case::new(
        "settle a 5-question set: reply from text",
        move || {
            let reply: Reply = serde_json::from_str(black_box(REPLY)).expect("REPLY parses");
            black_box(questions).settle(&reply).expect("REPLY settles")
        },
    ));
    cases
}

/// One line per case: its rate, time per operation, spread and ratio.
fn print_table(baseline: &Measured, cases: &[Measured]) {
    let name_width = std::iter::once(baseline)
        .chain(cases)
        .map(|m| m.name.len())
        .max()
        .unwrap_or(0);
    println!();
    println!(
        "{:<name_width$} | {:>12} | {:>9} | {:>23} | ratio vs bare parse",
        "case", "ops/s", "ns/op", "spread ops/s (min-max)"
    );
    println!(
        "{:-<name_width$}-|-{:->12}-|-{:->9}-|-{:->23}-|-{:-<19}",
        "", "", "", "", ""
    );
    for m in std::iter::once(baseline).chain(cases) {
        println!(
            "{:<name_width$} | {:>12.0} | {:>9.1} | {:>23} | {:.2}x",
            m.name,
            m.median,
            m.nanos_per_op(),
            format!("{:.0}-{:.0}", m.low, m.high),
            m.ratio(baseline),
        );
    }
    println!();
}

/// How the question set and every way to settle an answer stand against
/// their targets.
fn print_targets(baseline: &Measured, cases: &[Measured]) {
    let reply_parse = cases
        .iter()
        .find(|m| m.name.starts_with("bare parse: REPLY"));
    let set_settle = cases
        .iter()
        .find(|m| m.name.starts_with("settle a 5-question set"));
    if let (Some(parse), Some(settle)) = (reply_parse, set_settle) {
        println!(
            "question set: settle from text {:.0} replies/s, {:.2}x the bare parse of the same reply (target <= 3.00x: {})",
            settle.median,
            settle.ratio(parse),
            if settle.ratio(parse) <= 3.0 {
                "met"
            } else {
                "MISSED"
            },
        );
    }
    let text_paths: Vec<&Measured> = cases
        .iter()
        .filter(|m| m.name.starts_with("settle a 10-field answer:"))
        .collect();
    if text_paths.is_empty() {
        println!("targets: not checked (the settle cases were filtered out)");
        return;
    }
    // Every way to settle is reported against both targets: pre-parsed
    // content (how answers reach askgate through rmcp, which hands over
    // `ElicitResult.content` parsed), the map path from text (parse to a
    // `Map`, then `settle`) and `settle_text` (properties routed while
    // parsing). The verdict is for the best of them; read every line.
    let mut held = false;
    for settle in text_paths {
        let rate_ok = settle.median >= 500_000.0;
        let ratio = settle.ratio(baseline);
        let ratio_ok = ratio <= 3.0;
        held |= rate_ok && ratio_ok;
        println!(
            "targets ({}): {:.0} answers/s (target >= 500000: {}), \
             {ratio:.2}x the bare parse (target <= 3.00x: {})",
            settle.name.trim_start_matches("settle a 10-field answer: "),
            settle.median,
            if rate_ok { "met" } else { "MISSED" },
            if ratio_ok { "met" } else { "MISSED" },
        );
    }
    println!(
        "targets: {}",
        if held {
            "TARGETS HOLD"
        } else {
            "TARGETS MISSED"
        }
    );
}
