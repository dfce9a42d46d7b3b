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

/// A config with one stdio upstream, `files`, and `rest`.
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
fn error_with_upstream(rest: &str) -> String {
    match with_upstream(rest) {
        Ok(_) => "(parsed)".into(),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_token_of_both_a_person_and_an_agent_is_refused_naming_both() {
    let said = error_with_upstream(
        "[[principals]]\nname = \"ci-agent\"\ntoken = \"shared-s3cret-0123456789\"\n\
         [[people]]\nname = \"bob\"\ntoken = \"bob-s3cret-0123456789\"\noperator = true\n\
         [[people]]\nname = \"alice\"\ntoken = \"shared-s3cret-0123456789\"\n\
         answers_for = [\"ci-agent\"]\n",
    );
    assert!(
        !said.contains("s3cret"),
        "the token is never quoted: {said}"
    );
    insta::assert_snapshot!(said, @r#"askgate.toml:14: people[1].token: people[1] ("alice") has the same token as principals[0] ("ci-agent"): an agent must never hold a person's credential; give each its own token"#);
}

#[test]
fn operator_on_a_principal_is_refused_with_why() {
    let said = error_with_upstream(
        "[[principals]]\nname = \"ci-agent\"\ntoken = \"agent-token-0123456789\"\noperator = true\n",
    );
    insta::assert_snapshot!(said, @"askgate.toml:8: principals[0].operator: principals[0] (\"ci-agent\") cannot be an operator: [[principals]] are agents' MCP bearer tokens and never sign in to the inbox, so that an agent never holds what approves its own asks; put operator = true on a [[people]] entry, with a token of its own");
}

#[test]
fn a_person_who_answers_for_nobody_is_refused() {
    let nobody = "[[people]]\nname = \"alice\"\ntoken = \"alice-token-0123456789\"\n";
    insta::assert_snapshot!(error_with_upstream(nobody), @r#"askgate.toml:5: people[0]: people[0] ("alice") may answer nobody's asks: give them answers_for = ["PRINCIPAL", ...] (the principals whose asks they answer, or ["*"] for every principal), or operator = true"#);
    let empty = format!("{nobody}answers_for = []\noperator = false\n");
    assert_eq!(error_with_upstream(&empty), error_with_upstream(nobody));
}

#[test]
fn people_answer_for_principals_or_are_operators() {
    let config = with_upstream(
        "[[principals]]\nname = \"ci-agent\"\ntoken = \"agent-token-0123456789\"\n\
         [[people]]\nname = \"alice\"\ntoken = \"alice-token-0123456789\"\n\
         answers_for = [\"ci-agent\", \"deployer\", \"ci-agent\"]\n\
         [[people]]\nname = \"ops\"\ntoken = \"ops-token-0123456789\"\noperator = true\n",
    )
    .expect("parses");
    assert_eq!(config.principals.len(), 1);
    let people: Vec<(&str, &[String], bool)> = config
        .people
        .iter()
        .map(|p| (p.name.as_str(), &p.answers_for[..], p.operator))
        .collect();
    let alice = ["ci-agent".to_owned(), "deployer".to_owned()];
    assert_eq!(
        people,
        [("alice", &alice[..], false), ("ops", &[][..], true)],
        "a principal named twice is kept once"
    );
}

#[test]
fn an_unreadable_file_is_named() {
    let error = Config::load(Path::new("/nonexistent/askgate.toml")).expect_err("no such file");
    assert_eq!(
        error.file.as_deref(),
        Some(Path::new("/nonexistent/askgate.toml"))
    );
    assert!(
        error
            .to_string()
            .starts_with("/nonexistent/askgate.toml: cannot read")
    );
}

#[test]
fn debug_never_shows_a_secret() {
    let config = parse(
        "store = \"postgres://app:pg-s3cret@db/askgate\"\n\
         [[upstreams]]\nname = \"a\"\ncommand = \"x\"\nenv = { API_KEY = \"env-s3cret\" }\n\
         [[upstreams]]\nname = \"b\"\nurl = \"https://h/mcp\"\n\
         headers = { Authorization = \"Bearer header-s3cret\" }\n\
         [[principals]]\nname = \"alice\"\ntoken = \"token-s3cret-0123456789\"\n\
         [[people]]\nname = \"carol\"\ntoken = \"person-s3cret-0123456789\"\noperator = true\n",
    )
    .expect("parses");
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("API_KEY")
            && shown.contains("Authorization")
            && shown.contains("alice")
            && shown.contains("carol")
    );
    assert_eq!(config.store.to_string(), "postgres://app@db/askgate");
    assert_eq!(config.store.expose(), "postgres://app:pg-s3cret@db/askgate");
}

#[test]
fn the_environment_can_lower_the_threshold_but_not_raise_it() {
    let config = with_upstream("").map(|c| Config {
        auto_approve: Some(Risk::MediumWrite),
        ..c
    });
    let config = config.expect("parses");
    assert_eq!(config.auto_approve_with(None), Ok(Some(Risk::MediumWrite)));
    assert_eq!(
        config.auto_approve_with(Some("")),
        Ok(Some(Risk::MediumWrite))
    );
    assert_eq!(config.auto_approve_with(Some("read")), Ok(Some(Risk::Read)));
    assert_eq!(
        config.auto_approve_with(Some("destructive")),
        Ok(Some(Risk::MediumWrite))
    );
    assert_eq!(config.auto_approve_with(Some("none")), Ok(None));
}

#[test]
fn the_environment_can_raise_the_threshold_when_the_config_allows() {
    let config = with_upstream("").map(|c| Config {
        auto_approve: Some(Risk::LowWrite),
        allow_session_raise: true,
        ..c
    });
    let config = config.expect("parses");
    assert_eq!(
        config.auto_approve_with(Some("high_write")),
        Ok(Some(Risk::HighWrite))
    );
    assert_eq!(config.auto_approve_with(Some("read")), Ok(Some(Risk::Read)));
    assert_eq!(config.auto_approve_with(Some("none")), Ok(None));
}

#[test]
fn a_config_without_a_threshold_takes_the_environments_lower_one() {
    // No threshold approves nothing: a request can only keep it so.
    let config = with_upstream("").expect("parses");
    assert_eq!(config.auto_approve_with(Some("high_write")), Ok(None));
}

#[test]
fn a_bad_threshold_in_the_environment_is_refused_by_name() {
    let config = with_upstream("").expect("parses");
    let error = config
        .auto_approve_with(Some("everything"))
        .expect_err("not a risk level");
    insta::assert_snapshot!(error.to_string(), @r#"ASKGATE_AUTO_APPROVE_RISK: unknown threshold "everything"; expected none, read, low_write, medium_write, high_write or destructive"#);
}

#[test]
fn no_config_wraps_the_command_under_the_default_policy() {
    let argv = ["npx", "-y", "@modelcontextprotocol/server-everything"].map(String::from);
    let config = Config::for_command_with_store(argv.to_vec(), "sqlite:///tmp/a.db".into())
        .expect("a command");
    assert_eq!(config.upstreams.len(), 1);
    assert_eq!(config.upstreams[0].name, "server-everything");
    assert_eq!(
        config.upstreams[0].transport,
        Transport::Stdio(Stdio {
            command: "npx".into(),
            args: argv[1..].to_vec(),
            env: BTreeMap::new(),
            cwd: None,
        })
    );
    assert!(config.file.is_none());
    assert_eq!(config.rules.default_risk(), Risk::MediumWrite);
    assert_eq!(config.auto_approve, None);
    assert!(config.listen.is_none());
    assert_eq!(config.replay, Replay::AppAuthorized);
    assert_eq!(
        config
            .rules
            .risk_of("server-everything", "echo", &Map::new())
            .rule,
        RuleRef::Default
    );
}

#[test]
fn no_config_keeps_the_store_in_the_data_directory() {
    let config = Config::for_command(vec!["my-server".into()]).expect("a data directory");
    let store = config.store.expose();
    match std::env::var("ASKGATE_STORE") {
        Ok(url) => assert_eq!(store, url),
        Err(_) => assert!(
            store.starts_with("sqlite://") && store.ends_with("askgate.db"),
            "{store}"
        ),
    }
}

#[test]
fn no_command_is_an_error_that_says_what_to_run() {
    let error =
        Config::for_command_with_store(Vec::new(), "sqlite://x".into()).expect_err("no command");
    insta::assert_snapshot!(error.to_string(), @"no server command: run `askgate gateway -- COMMAND [ARGS...]`, or pass --config FILE");
}

#[test]
fn an_upstream_is_named_after_its_program() {
    let name = |argv: &[&str]| {
        let args: Vec<String> = argv[1..].iter().map(|a| (*a).to_owned()).collect();
        server_name(argv[0], &args)
    };
    assert_eq!(name(&["/usr/local/bin/mcp-server-git"]), "mcp-server-git");
    assert_eq!(name(&["./Server.PY"]), "server");
    assert_eq!(name(&["node", "build/index.js"]), "index");
    assert_eq!(
        name(&["python3", "-m", "mcp_server_time"]),
        "mcp_server_time"
    );
    assert_eq!(name(&["uvx", "mcp-server-fetch"]), "mcp-server-fetch");
    assert_eq!(
        name(&["uv", "run", "--with", "mcp", "weather.py"]),
        "weather"
    );
    assert_eq!(name(&["npx", "-y", "@scope/thing@1.2.3"]), "thing");
    assert_eq!(name(&["npx"]), "npx");
    assert_eq!(name(&["my server (v2)"]), "my_server__v2");
    assert_eq!(name(&["..."]), "upstream");
    assert_eq!(name(&[&"x".repeat(40)]).len(), 32);
}

#[test]
fn the_first_matching_intake_applies() {
    let config = with_upstream(
        "[[intake]]\ntool = \"deploy_prod\"\nquestions = [{ id = \"a\", prompt = \"A?\" }]\n\
         [[intake]]\ntool = \"deploy_*\"\nwhen = \"every_turn\"\n\
         questions = [{ id = \"b\", prompt = \"B?\" }]\n",
    )
    .expect("parses");
    let (_, first) = super::intake_for(&config.intake, "files", "deploy_prod").expect("an intake");
    assert_eq!(first.questions.questions[0].id, "a");
    let (_, second) = super::intake_for(&config.intake, "files", "deploy_dev").expect("an intake");
    assert_eq!(
        (second.when, second.questions.questions[0].id.as_str()),
        (IntakeWhen::EveryTurn, "b")
    );
    assert!(super::intake_for(&config.intake, "files", "read").is_none());
}

#[test]
fn an_unknown_upstream_protocol_names_the_line_and_the_expected_values() {
    let text = "store = \"sqlite:///tmp/a.db\"\n[[upstreams]]\nname = \"x\"\ncommand = \"x\"\nprotocol = \"2024-11-05\"\n";
    let said = error(text);
    assert!(said.starts_with("askgate.toml:5:"), "{said}");
    assert!(said.contains("\"2024-11-05\""), "{said}");
    assert!(
        said.contains("\"2025-11-25\" (the default) or \"2026-07-28\""),
        "{said}"
    );
}

#[test]
fn the_example_notify_table_posts_to_slack() {
    let webhook = example().notify.expect("the example has [notify]");
    assert_eq!(webhook.preset, askgate_inbox::notify::Preset::Slack);
    assert!(webhook.url.starts_with("https://hooks.slack.com/"));
    assert!(webhook.headers.is_empty());
}

#[test]
fn notify_takes_a_webhook_a_preset_and_headers() {
    let config = with_upstream(
        "[notify]\nwebhook = \"https://hooks.example/askgate\"\n\
         headers = { Authorization = \"Bearer hook-secret\" }\n",
    )
    .expect("parses");
    let webhook = config.notify.expect("a webhook");
    assert_eq!(webhook.preset, askgate_inbox::notify::Preset::Generic);
    assert_eq!(webhook.headers["Authorization"], "Bearer hook-secret");
    assert!(!format!("{webhook:?}").contains("hook-secret"));
    assert!(with_upstream("").expect("parses").notify.is_none());
}

#[test]
fn notify_errors_name_the_line_and_the_key_and_never_the_url() {
    let cases = [
        (
            "[notify]\nwebhook = \"https://h/x\"\npreset = \"teams\"\n",
            "askgate.toml:7: notify.preset: unknown preset \"teams\": expected \"generic\" (the \
             default) or \"slack\"",
        ),
        (
            "[notify]\nwebhook = \"hooks.slack.com/services/s3cret\"\n",
            "askgate.toml:6: notify.webhook: invalid webhook URL; expected http://HOST/... or \
             https://HOST/...",
        ),
        (
            "[notify]\nwebhook = \"https://h/x\"\nheaders = { \"X Y\" = \"1\" }\n",
            "askgate.toml:7: notify.headers: invalid header name \"X Y\"",
        ),
        (
            "[notify]\nwebhok = \"https://h/x\"\n",
            "askgate.toml:6: notify.webhok: unknown field `webhok`, expected one of `webhook`, \
             `preset`, `headers`",
        ),
    ];
    for (text, expected) in cases {
        let got = match with_upstream(text) {
            Ok(_) => "(parsed)".to_owned(),
            Err(error) => error.to_string(),
        };
        assert_eq!(got, expected, "for {text:?}");
    }
}

#[test]
fn the_express_lane_is_on_unless_the_config_turns_it_off() {
    let on = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{UPSTREAM}"
    ))
    .expect("parses");
    assert!(on.express_lane);
    let off = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\nexpress_lane = false\n{UPSTREAM}"
    ))
    .expect("parses");
    assert!(!off.express_lane);
}

#[test]
fn durable_reads_makes_reads_wait_for_the_store() {
    let config = parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\ndurable_reads = true\n{UPSTREAM}"
    ))
    .expect("parses");
    assert!(config.durable_reads);
}

/// A config with `top` (top-level keys and tables) and one stdio upstream.
fn with_top(top: &str) -> Result<Config, ConfigError> {
    parse(&format!(
        "store = \"sqlite:///tmp/askgate-test.db\"\n{top}\n{UPSTREAM}"
    ))
}

#[test]
fn the_trust_settings_mean_what_they_say() {
    let config = with_top(
        "caller_confirm = \"medium_write\"\nmin_answer_ms = 400\ninbox_wait = \"30s\"\n\
         ask_expires = \"2h\"\n\n[clients.\"claude-code\"]\nmin_answer_ms = 0\n",
    )
    .expect("parses");
    let c = &config.confirmations;
    assert_eq!(c.caller_confirm, Some(Risk::MediumWrite));
    assert_eq!(c.min_answer, std::time::Duration::from_millis(400));
    assert_eq!(
        c.min_answer_for(Some("claude-code")),
        std::time::Duration::ZERO
    );
    assert_eq!(
        c.min_answer_for(Some("codex")),
        std::time::Duration::from_millis(400)
    );
    assert_eq!(c.inbox_wait, std::time::Duration::from_secs(30));
    assert_eq!(c.ask_lifetime, std::time::Duration::from_secs(2 * 3600));
    // High risks need the named setting.
    let config =
        with_top("caller_confirm = \"destructive\"\ndanger_caller_confirm_high_risk = true\n")
            .expect("parses");
    assert_eq!(config.confirmations.caller_confirm, Some(Risk::Destructive));
}

#[test]
fn by_default_only_a_person_approves() {
    for config in [
        with_top("").expect("parses"),
        Config::for_command_with_store(vec!["server".into()], "sqlite://x.db".into())
            .expect("a config"),
    ] {
        let c = &config.confirmations;
        assert_eq!(c.caller_confirm, None, "the caller never stands in");
        assert_eq!(c.min_answer, std::time::Duration::from_millis(250));
        assert_eq!(c.inbox_wait, std::time::Duration::ZERO);
    }
}

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
