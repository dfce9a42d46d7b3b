//! A derived struct as a form, and the settled outcome back as the struct.

use askgate_core::{
    Ask, AskChoice, AskForm, FieldKind, Outcome, Response, Revision, Step, TimeRange, Values,
    ValuesMismatch,
};
use askgate_derive::{AskChoice, AskForm};
use jiff::civil::{Date, date};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};
use serde_json::{Value as Json, json};

#[derive(Debug, Clone, Copy, PartialEq, AskChoice)]
enum Environment {
    Staging,
    #[ask(label = "Production", hotkey = 'p')]
    Prod,
}

#[derive(Debug, Clone, Copy, PartialEq, AskChoice)]
enum Channel {
    Slack,
    Email,
    #[ask(value = "pd", label = "PagerDuty")]
    PagerDuty,
}

#[derive(Debug, AskForm)]
#[ask(message = "Schedule the billing deploy")]
struct Deploy {
    #[ask(default = Environment::Staging)]
    environment: Environment,
    #[ask(title = "When", zone = "Europe/Paris")]
    at: ZonedDateTime,
    #[ask(min = 1, max = 5, default = 2)]
    replicas: u8,
    #[ask(min = 0, max = 1, default = 0.5)]
    canary_share: f64,
    #[ask(description = "Who hears about it")]
    notify: Vec<Channel>,
    #[ask(min_items = 1, max_items = 2)]
    approvers: Vec<Channel>,
    #[ask(max_length = 200)]
    reason: Option<String>,
    #[ask(format = "email", rename = "contact-email")]
    contact: String,
    #[ask(default = false)]
    dry_run: bool,
    freeze_from: Option<Date>,
    not_before: Option<Timestamp>,
    #[ask(default = "Europe/Paris")]
    office: TimeZone,
    #[ask(zone = "Asia/Tokyo")]
    window: Option<TimeRange>,
    rollback_after: Option<i32>,
}

fn accepted(ask: &Ask, content: Json) -> Values {
    let Json::Object(content) = content else {
        panic!("content is an object")
    };
    match ask.settle(Revision::V2025_11_25, &Response::accept(content)) {
        Step::Settled(Outcome::Accepted { values }) => values,
        other => panic!("expected an accepted outcome, got {other:?}"),
    }
}

fn deploy_ask() -> Ask {
    Ask::new(Deploy::form()).expect("MCP can carry the derived form")
}

/// The fewest answers the form accepts: everything else is defaulted or
/// optional.
fn required_answers() -> Json {
    json!({
        "at": "2026-07-01T09:30",
        "approvers": ["email"],
        "contact-email": "ops@example.com",
    })
}

#[test]
fn the_derived_form_is_what_the_person_is_asked() {
    insta::assert_json_snapshot!(Deploy::form());
}

#[test]
fn the_derived_form_goes_on_the_wire_of_every_revision() {
    let ask = deploy_ask();
    for revision in Revision::ALL {
        let params = ask.request(revision).expect("a request").to_json();
        assert_eq!(
            params["requestedSchema"]["properties"]["replicas"]["maximum"], 5,
            "{revision:?}"
        );
    }
}

#[test]
fn every_answer_reads_back_as_its_rust_type() {
    let ask = deploy_ask();
    let values = accepted(
        &ask,
        json!({
            "environment": "prod",
            "at": "2026-07-01T09:30",
            "replicas": 4,
            "canary_share": 0.25,
            "notify": ["pd", "slack"],
            "approvers": ["email", "slack"],
            "reason": "INC-12 hotfix",
            "contact-email": "ops@example.com",
            "dry_run": true,
            "freeze_from": "2026-12-20",
            "not_before": "2026-06-30T12:00:00Z",
            "office": "America/New_York",
            "window": {"from": "2026-07-02T10:00", "to": "2026-07-02T12:00"},
            "rollback_after": -5,
        }),
    );
    let deploy = Deploy::from_values(&values).expect("values of the form");
    assert_eq!(deploy.environment, Environment::Prod);
    assert_eq!(
        deploy.at,
        date(2026, 7, 1)
            .at(9, 30, 0, 0)
            .in_tz("Europe/Paris")
            .expect("a time in Paris")
    );
    assert_eq!(deploy.replicas, 4);
    assert_eq!(deploy.canary_share, 0.25);
    // In the order offered, whatever the order picked.
    assert_eq!(deploy.notify, [Channel::Slack, Channel::PagerDuty]);
    assert_eq!(deploy.approvers, [Channel::Slack, Channel::Email]);
    assert_eq!(deploy.reason.as_deref(), Some("INC-12 hotfix"));
    assert_eq!(deploy.contact, "ops@example.com");
    assert!(deploy.dry_run);
    assert_eq!(deploy.freeze_from, Some(date(2026, 12, 20)));
    assert_eq!(
        deploy.not_before,
        Some(
            "2026-06-30T12:00:00Z"
                .parse::<Timestamp>()
                .expect("a timestamp")
        )
    );
    assert_eq!(deploy.office.iana_name(), Some("America/New_York"));
    let window = deploy.window.expect("a window");
    assert_eq!(
        window.from.to_string(),
        "2026-07-02T10:00:00+09:00[Asia/Tokyo]"
    );
    assert_eq!(
        window.to.to_string(),
        "2026-07-02T12:00:00+09:00[Asia/Tokyo]"
    );
    assert_eq!(deploy.rollback_after, Some(-5));
}

#[test]
fn fields_left_empty_read_back_as_defaults_none_and_empty_lists() {
    let ask = deploy_ask();
    let deploy = Deploy::from_values(&accepted(&ask, required_answers())).expect("values");
    assert_eq!(deploy.environment, Environment::Staging);
    assert_eq!(deploy.replicas, 2);
    assert_eq!(deploy.canary_share, 0.5);
    assert!(!deploy.dry_run);
    assert_eq!(deploy.office.iana_name(), Some("Europe/Paris"));
    assert_eq!(deploy.notify, []);
    assert_eq!(deploy.reason, None);
    assert_eq!(deploy.freeze_from, None);
    assert_eq!(deploy.not_before, None);
    assert_eq!(deploy.window, None);
    assert_eq!(deploy.rollback_after, None);
}

#[test]
fn an_instant_given_at_another_offset_reads_back_in_the_fields_zone() {
    let ask = deploy_ask();
    let mut answers = required_answers();
    answers["at"] = json!("2026-07-01T07:30:00Z");
    let deploy = Deploy::from_values(&accepted(&ask, answers)).expect("values");
    assert_eq!(
        deploy.at.to_string(),
        "2026-07-01T09:30:00+02:00[Europe/Paris]"
    );
}

#[test]
fn a_vec_with_min_items_must_be_answered_and_a_plain_vec_need_not() {
    let form = Deploy::form();
    let field = |id: &str| {
        form.fields
            .iter()
            .find(|field| field.id == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    assert!(!field("notify").required);
    assert!(field("approvers").required);
    assert!(!field("reason").required);
    assert!(field("replicas").required);
}

#[test]
fn unsigned_integers_take_their_natural_bounds() {
    #[derive(AskForm)]
    #[ask(message = "How many?")]
    #[allow(dead_code)]
    struct Count {
        count: u16,
        #[ask(max = 10)]
        at_most_ten: u32,
    }
    let form = Count::form();
    let bounds = |index: usize| match &form.fields[index].kind {
        FieldKind::Integer(spec) => (spec.minimum, spec.maximum),
        other => panic!("an integer, not {other:?}"),
    };
    assert_eq!(bounds(0), (Some(0), Some(65_535)));
    assert_eq!(bounds(1), (Some(0), Some(10)));
}

#[test]
fn a_choice_enum_lists_its_variants_with_values_and_labels() {
    let options = Channel::options();
    let pairs: Vec<(&str, &str)> = options
        .iter()
        .map(|option| (option.value.as_str(), option.label.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("slack", "Slack"), ("email", "Email"), ("pd", "PagerDuty")]
    );
    assert_eq!(Channel::from_choice("pd"), Some(Channel::PagerDuty));
    assert_eq!(Channel::from_choice("PagerDuty"), None);
    assert_eq!(Environment::Prod.value(), "prod");
}

#[test]
fn values_of_another_form_are_refused_without_showing_them() {
    #[derive(Debug, AskForm)]
    #[ask(message = "Another form")]
    #[allow(dead_code)]
    struct Other {
        #[ask(rename = "contact-email")]
        contact: u8,
    }
    let values = accepted(&deploy_ask(), required_answers());
    let error = Other::from_values(&values).expect_err("text is no u8");
    assert!(matches!(error, ValuesMismatch::Unfit { .. }));
    assert_eq!(
        error.to_string(),
        "field \"contact-email\" holds a text value that does not fit `u8`; read values settled from this type's own form"
    );

    #[derive(Debug, AskForm)]
    #[ask(message = "A third form")]
    #[allow(dead_code)]
    struct Third {
        missing: String,
    }
    let error = Third::from_values(&values).expect_err("no such field");
    assert_eq!(
        error,
        ValuesMismatch::Missing {
            field: "missing".into()
        }
    );
}

#[test]
fn a_secret_field_is_sensitive_and_needs_url_mode() {
    #[derive(AskForm)]
    #[ask(message = "Connect the billing database")]
    #[allow(dead_code)]
    struct Connect {
        #[ask(secret)]
        password: String,
    }
    assert!(Connect::form().fields[0].sensitive);
    assert!(
        Ask::new(Connect::form())
            .expect("askable through a URL")
            .needs_url_mode()
    );
}
