//! What an operator notices about the config: the example parses and means
//! what its comments say, every error names the file, the line and the key,
//! secrets stay out of `Debug`, and the defaults fail closed.

use std::path::{Path, PathBuf};

use askgate_core::{IntakeWhen, Risk};
use serde_json::{Map, Value, json};

use super::*;
use crate::rules::{Hints, RuleRef};

const UPSTREAM: &str = "[[upstreams]]\nname = \"files\"\ncommand = \"files-server\"\n";

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(Path::new("askgate.toml"), text)
}

/// The first TOML block of the README's section `heading`.
fn readme_toml(heading: &str) -> &'static str {
    let readme = include_str!("../../../../../README.md");
    readme
        .split(heading)
        .nth(1)
        .and_then(|section| section.split("```toml\n").nth(1))
        .and_then(|rest| rest.split("```").next())
        .unwrap_or_else(|| panic!("no TOML under the README's {heading:?}"))
}

/// A config with one stdio upstream, `files`, and `rest`.
/// A config of top-level keys `top`, the `files` upstream, then `tables`.
fn above(top: &str, tables: &str) -> Result<Config, ConfigError> {
    parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{top}{UPSTREAM}{tables}"
    ))
}

fn with_upstream(rest: &str) -> Result<Config, ConfigError> {
    parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{UPSTREAM}{rest}"
    ))
}

fn error(text: &str) -> String {
    match parse(text) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn example() -> Config {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/askgate.toml");
    match Config::load(&path) {
        Ok(config) => config,
        Err(error) => panic!("the example config does not load: {error}"),
    }
}

#[test]
fn the_example_config_parses() {
    let config = example();
    let names: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["files", "notes", "deployer"]);
    let Transport::Stdio(files) = &config.upstreams[0].transport else {
        panic!("files is a stdio upstream");
    };
    assert_eq!(files.command, "npx");
    assert_eq!(files.args.len(), 3);
    assert_eq!(
        files.env.get("NODE_ENV").map(String::as_str),
        Some("production")
    );
    assert_eq!(files.cwd.as_deref(), Some(Path::new("/srv")));
    let Transport::Http(deployer) = &config.upstreams[2].transport else {
        panic!("deployer is an HTTP upstream");
    };
    assert_eq!(deployer.url, "https://deploy.internal.example/mcp");
    assert!(deployer.headers.contains_key("Authorization"));
    assert_eq!(config.upstreams[2].protocol, UpstreamProtocol::Discover);
    assert_eq!(config.upstreams[0].protocol, UpstreamProtocol::Initialize);
    assert_eq!(config.rules.default_risk(), Risk::MediumWrite);
    assert!(!config.rules.trusts_read_only_hints());
    assert_eq!(config.auto_approve, Some(Risk::LowWrite));
    assert!(!config.allow_session_raise);
    assert!(config.offer_ask_tool);
    assert_eq!(
        config.store.expose(),
        "sqlite:///var/lib/askgate/askgate.db"
    );
    assert_eq!(config.replay, Replay::AppAuthorized);
    assert!(!config.durable_reads);
    let trust = &config.confirmations;
    assert_eq!(trust.caller_confirm, None, "only a person approves");
    assert_eq!(trust.min_answer, std::time::Duration::from_millis(250));
    assert_eq!(
        trust.min_answer_for(Some("my-voice-client")),
        std::time::Duration::from_millis(100)
    );
    assert_eq!(trust.inbox_wait, std::time::Duration::ZERO);
    assert_eq!(
        trust.ask_lifetime,
        std::time::Duration::from_secs(24 * 3600)
    );
    assert_eq!(config.inbox.listen.to_string(), "127.0.0.1:7878");
    assert_eq!(
        config.inbox.base_url.as_deref(),
        Some("https://askgate.example.com")
    );
    assert_eq!(
        config.listen.as_ref().map(|l| l.addr.to_string()),
        Some("127.0.0.1:8080".into())
    );
    assert_eq!(config.principals.len(), 2);
    let people: Vec<(&str, bool)> = config
        .people
        .iter()
        .map(|p| (p.name.as_str(), p.operator))
        .collect();
    assert_eq!(people, [("alice", false), ("dana", true)]);
    assert_eq!(config.people[0].answers_for, ["alice-ide"]);
    let (_, intake) =
        super::intake_for(&config.intake, "deployer", "deploy").expect("the deploy intake");
    assert_eq!(intake.when, IntakeWhen::Once);
    assert_eq!(intake.questions.questions.len(), 2);
    assert!(super::intake_for(&config.intake, "files", "deploy").is_none());
}

#[test]
fn the_example_rules_mean_what_their_comments_say() {
    let config = example();
    let judge = |server: &str, tool: &str, arguments: Value| {
        let judged = config.rules.risk_of(server, tool, &args(arguments));
        format!("{server}/{tool}: {} by {}", judged.risk, judged.rule)
    };
    let lines = [
        judge("files", "read_file", json!({"path": "/etc/passwd"})),
        judge("files", "write_file", json!({"path": "/etc/hosts"})),
        judge("files", "write_file", json!({"path": "/srv/shared/a.txt"})),
        judge(
            "files",
            "move_file",
            json!({"source": "a", "destination": "b"}),
        ),
        judge("files", "unknown_tool", json!({})),
        judge("notes", "ask_name", json!({})),
        judge("notes", "write_note", json!({"name": "a", "text": "b"})),
        judge(
            "notes",
            "deploy",
            json!({"service": "a", "env": "production"}),
        ),
        judge("notes", "delete_all_notes", json!({})),
        judge(
            "deployer",
            "deploy",
            json!({"target": {"env": "production"}}),
        ),
        judge("deployer", "deploy", json!({"target": {"env": "staging"}})),
    ];
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn a_minimal_config_fails_closed() {
    let config = with_upstream("").expect("parses");
    assert_eq!(config.rules.default_risk(), Risk::MediumWrite);
    assert_eq!(config.auto_approve, None);
    assert!(!config.allow_session_raise);
    assert!(config.offer_ask_tool);
    assert_eq!(config.replay, Replay::AppAuthorized);
    assert!(!config.durable_reads, "reads do not wait for the store");
    assert_eq!(config.inbox.listen.to_string(), "127.0.0.1:7878");
    assert!(config.listen.is_none());
    let hints = Hints {
        read_only: Some(true),
        destructive: None,
    };
    let judged = config
        .rules
        .risk_with_hints("files", "list", hints, &Map::new());
    assert_eq!(
        (judged.risk, judged.rule),
        (Risk::MediumWrite, RuleRef::Default)
    );
}

#[test]
fn every_config_error_names_the_file_the_line_and_the_key() {
    let cases: &[(&str, String)] = &[
        ("syntax", format!("{UPSTREAM}auto_approve = low_write\n")),
        (
            "unknown top-level key",
            format!("auto_aprove = \"read\"\n{UPSTREAM}"),
        ),
        (
            "unknown upstream key",
            "[[upstreams]]\nname = \"files\"\ncomand = \"x\"\n".into(),
        ),
        (
            "wrong type",
            "[[upstreams]]\nname = \"files\"\ncommand = [\"x\"]\n".into(),
        ),
        (
            "unknown risk level",
            format!("{UPSTREAM}\n[[rules]]\ntool = \"x\"\nrisk = \"hgh_write\"\n"),
        ),
        (
            "a key below [rules.arguments] belongs to it",
            format!(
                "{UPSTREAM}\n[[rules]]\ntool = \"x\"\n[rules.arguments]\npath = \"/etc/**\"\n\
                 risk = \"destructive\"\n"
            ),
        ),
        (
            "unknown default risk",
            format!("default_risk = \"safe\"\n{UPSTREAM}"),
        ),
        ("no upstreams", "store = \"sqlite://x.db\"\n".into()),
        (
            "command and url",
            "[[upstreams]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/mcp\"\n".into(),
        ),
        (
            "neither command nor url",
            "[[upstreams]]\nname = \"a\"\n".into(),
        ),
        ("missing name", "[[upstreams]]\ncommand = \"x\"\n".into()),
        (
            "invalid upstream name",
            "[[upstreams]]\nname = \"My Files\"\ncommand = \"x\"\n".into(),
        ),
        (
            "duplicate upstream name",
            format!("{UPSTREAM}\n[[upstreams]]\nname = \"files\"\nurl = \"http://h/mcp\"\n"),
        ),
        (
            "headers on a stdio upstream",
            format!("{UPSTREAM}headers = {{ Authorization = \"Bearer s3cret\" }}\n"),
        ),
        (
            "env on a url upstream",
            "[[upstreams]]\nname = \"a\"\nurl = \"http://h/mcp\"\nenv = { K = \"v\" }\n".into(),
        ),
        (
            "invalid url",
            "[[upstreams]]\nname = \"a\"\nurl = \"ftp://h/mcp\"\n".into(),
        ),
        (
            "invalid header name",
            "[[upstreams]]\nname = \"a\"\nurl = \"http://h/mcp\"\nheaders = { \"X Y\" = \"v\" }\n"
                .into(),
        ),
        (
            "invalid tool glob",
            format!("{UPSTREAM}\n[[rules]]\ntool = \"delete_[\"\nrisk = \"destructive\"\n"),
        ),
        (
            "invalid argument glob",
            format!(
                "{UPSTREAM}\n[[rules]]\narguments = {{ path = \"/etc/{{a\" }}\nrisk = \"read\"\n"
            ),
        ),
        (
            "invalid JSON pointer",
            format!("{UPSTREAM}\n[[rules]]\narguments = {{ \"/a~2\" = \"x\" }}\nrisk = \"read\"\n"),
        ),
        (
            "a rule without conditions",
            format!("{UPSTREAM}\n[[rules]]\nrisk = \"read\"\n"),
        ),
        (
            "a rule for a server that is not there",
            format!("{UPSTREAM}\n[[rules]]\nserver = \"fils\"\ntool = \"*\"\nrisk = \"read\"\n"),
        ),
        (
            "unknown threshold",
            format!("auto_approve = \"some\"\n{UPSTREAM}"),
        ),
        (
            "unknown replay policy",
            format!("replay = \"strict\"\n{UPSTREAM}"),
        ),
        (
            "unknown store",
            format!("store = \"mysql://u:pw@h/db\"\n{UPSTREAM}"),
        ),
        (
            "invalid inbox address",
            format!("{UPSTREAM}[inbox]\nlisten = \"localhost\"\n"),
        ),
        (
            "invalid base url",
            format!("{UPSTREAM}[inbox]\nbase_url = \"askgate.example\"\n"),
        ),
        (
            "a listener open to the network without principals",
            format!("{UPSTREAM}[listen]\naddr = \"0.0.0.0:8080\"\n"),
        ),
        (
            "a plain HTTP listener open to the network",
            format!(
                "{UPSTREAM}[[principals]]\nname = \"ci\"\ntoken = \"0123456789abcdef0\"\n\
                 [listen]\naddr = \"0.0.0.0:8080\"\n"
            ),
        ),
        (
            "a plain HTTP inbox open to the network",
            format!("{UPSTREAM}[inbox]\nlisten = \"192.0.2.7:7878\"\n"),
        ),
        (
            "a limit out of range",
            format!("{UPSTREAM}[limits]\nsessions = 0\n"),
        ),
        (
            "a per-peer limit above the whole",
            format!("{UPSTREAM}[limits]\nconnections = 10\nconnections_per_peer = 11\n"),
        ),
        (
            "a message size out of range",
            format!("{UPSTREAM}[limits]\nanswer_mib = 2048\n"),
        ),
        (
            "a limit's duration out of range",
            format!("{UPSTREAM}[limits]\nheader_timeout = \"0s\"\n"),
        ),
        (
            "an unknown limit",
            format!("{UPSTREAM}[limits]\nsesions = 10\n"),
        ),
        (
            "an inherited variable that is no name",
            format!("{UPSTREAM}inherit_env = [\"AWS-KEY\"]\n"),
        ),
        (
            "a weak metrics token",
            format!("{UPSTREAM}[inbox]\nmetrics_token = \"short\"\n"),
        ),
        (
            "a metrics token that is an agent's",
            format!(
                "{UPSTREAM}[inbox]\nmetrics_token = \"agent-token-0123456789\"\n\
                 [[principals]]\nname = \"ci\"\ntoken = \"agent-token-0123456789\"\n"
            ),
        ),
        (
            "a weak token",
            format!("{UPSTREAM}[[principals]]\nname = \"alice\"\ntoken = \"hunter2\"\n"),
        ),
        (
            "duplicate principal",
            format!(
                "{UPSTREAM}[[principals]]\nname = \"alice\"\ntoken = \"0123456789abcdef0\"\n\
                 [[principals]]\nname = \"alice\"\ntoken = \"0123456789abcdef1\"\n"
            ),
        ),
        (
            "a shared token",
            format!(
                "{UPSTREAM}[[principals]]\nname = \"alice\"\ntoken = \"0123456789abcdef0\"\n\
                 [[principals]]\nname = \"bob\"\ntoken = \"0123456789abcdef0\"\n"
            ),
        ),
        (
            "a weak person token",
            format!(
                "{UPSTREAM}[[people]]\nname = \"alice\"\ntoken = \"hunter2\"\n\
                 answers_for = [\"*\"]\n"
            ),
        ),
        (
            "duplicate person",
            format!(
                "{UPSTREAM}[[people]]\nname = \"alice\"\ntoken = \"0123456789abcdef0\"\n\
                 operator = true\n[[people]]\nname = \"alice\"\ntoken = \"0123456789abcdef1\"\n\
                 operator = true\n"
            ),
        ),
        (
            "two people with one token",
            format!(
                "{UPSTREAM}[[people]]\nname = \"alice\"\ntoken = \"0123456789abcdef0\"\n\
                 operator = true\n[[people]]\nname = \"bob\"\ntoken = \"0123456789abcdef0\"\n\
                 answers_for = [\"ci\"]\n"
            ),
        ),
        (
            "a person with the operator's token",
            format!(
                "{UPSTREAM}[inbox]\ntoken = \"0123456789abcdef0\"\n[[people]]\nname = \"alice\"\n\
                 token = \"0123456789abcdef0\"\noperator = true\n"
            ),
        ),
        (
            "an agent with the operator's token",
            format!(
                "{UPSTREAM}[inbox]\ntoken = \"0123456789abcdef0\"\n[[principals]]\nname = \"ci\"\n\
                 token = \"0123456789abcdef0\"\n"
            ),
        ),
        (
            "a person named as the inbox names others",
            format!(
                "{UPSTREAM}[[people]]\nname = \"link:alice\"\ntoken = \"0123456789abcdef0\"\n\
                 answers_for = [\"alice\"]\n"
            ),
        ),
        (
            "an empty name in answers_for",
            format!(
                "{UPSTREAM}[[people]]\nname = \"alice\"\ntoken = \"0123456789abcdef0\"\n\
                 answers_for = [\"ci\", \"\"]\n"
            ),
        ),
        (
            "an agent named as askgate names a loopback listener's user",
            format!("{UPSTREAM}[[principals]]\nname = \"local\"\ntoken = \"0123456789abcdef0\"\n"),
        ),
        (
            "an agent named as askgate names a caller no token names",
            format!(
                "{UPSTREAM}[[principals]]\nname = \"anonymous\"\ntoken = \"0123456789abcdef0\"\n"
            ),
        ),
        (
            "an allowed origin with a path",
            format!(
                "{UPSTREAM}[[principals]]\nname = \"ci\"\ntoken = \"0123456789abcdef0\"\n\
                 [listen]\naddr = \"127.0.0.1:8080\"\nallowed_origins = [\"https://app.example.com/x\"]\n"
            ),
        ),
        (
            "a call timeout past a day",
            format!("{UPSTREAM}call_timeout = \"25h\"\n"),
        ),
        (
            "a start timeout of nothing",
            format!("{UPSTREAM}start_timeout = \"0s\"\n"),
        ),
        (
            "an agent named *",
            format!("{UPSTREAM}[[principals]]\nname = \"*\"\ntoken = \"0123456789abcdef0\"\n"),
        ),
        (
            "unknown person key",
            format!(
                "{UPSTREAM}[[people]]\nname = \"alice\"\ntoken = \"0123456789abcdef0\"\n\
                 answer_for = [\"ci\"]\n"
            ),
        ),
        (
            "unknown question key",
            format!(
                "{UPSTREAM}[[intake]]\ntool = \"x\"\n[[intake.questions]]\nid = \"a\"\n\
                 promt = \"A?\"\n"
            ),
        ),
        (
            "an intake question set that cannot be asked",
            format!("{UPSTREAM}[[intake]]\ntool = \"x\"\nquestions = []\n"),
        ),
        (
            "unknown intake timing",
            format!(
                "{UPSTREAM}[[intake]]\ntool = \"x\"\nwhen = \"always\"\n\
                 questions = [{{ id = \"a\", prompt = \"A?\" }}]\n"
            ),
        ),
    ];
    let report: Vec<String> = cases
        .iter()
        .map(|(what, text)| format!("{what}:\n  {}", error(text)))
        .collect();
    let report = report.join("\n");
    // No secret from the inputs reaches a message.
    for secret in ["s3cret", "hunter2", "0123456789abcdef", ":pw@"] {
        assert!(!report.contains(secret), "{secret} leaked into:\n{report}");
    }
    insta::assert_snapshot!(report);
}

/// The error of `rest` after one upstream.
#[test]
fn every_trust_setting_error_names_the_line_and_what_is_expected() {
    let cases = [
        (
            "caller_confirm above medium_write",
            "caller_confirm = \"high_write\"\n",
        ),
        (
            "caller_confirm not a level",
            "caller_confirm = \"always\"\n",
        ),
        ("min_answer_ms below zero", "min_answer_ms = -1\n"),
        ("min_answer_ms past a minute", "min_answer_ms = 90000\n"),
        ("inbox_wait not a duration", "inbox_wait = \"a while\"\n"),
        ("inbox_wait past an hour", "inbox_wait = \"2h\"\n"),
        ("ask_expires under a minute", "ask_expires = \"10s\"\n"),
        ("retry_window past a day", "retry_window = \"25h\"\n"),
        ("stop_grace past ten minutes", "stop_grace = \"11m\"\n"),
        (
            "unknown client setting",
            "[clients.\"claude-code\"]\nmin_answer = 0\n",
        ),
    ];
    let mut report = String::new();
    for (name, rest) in cases {
        let message = match with_top(rest) {
            Ok(_) => "(parsed)".into(),
            Err(error) => error.to_string(),
        };
        report.push_str(&format!("{name}:\n  {message}\n"));
    }
    insta::assert_snapshot!(report);
}

/// A config with `top` (top-level keys and tables) and one stdio upstream.
fn with_top(top: &str) -> Result<Config, ConfigError> {
    parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{top}\n{UPSTREAM}"
    ))
}

mod approvals;
mod environment;
mod namespaces;
mod oauth_agents;
mod oidc;
mod people;
mod settings;
