//! The threshold from the environment, and the gateway with no config.

use super::*;

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
            inherit: crate::environment::Inherit::default(),
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
    assert_eq!(name(&["my server (v2)"]), "my_server_v2");
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
fn a_servers_own_name_is_made_usable_or_refused() {
    use crate::config::usable_name;
    for (reported, usable) in [
        ("everything", Some("everything")),
        ("Secure Filesystem Server", Some("secure_filesystem_server")),
        ("--", None),
        ("", None),
        (
            "a-name-far-longer-than-thirty-two-characters",
            Some("a-name-far-longer-than-thirty-tw"),
        ),
        (
            "ends-at-32-with-a-dash-----------x",
            Some("ends-at-32-with-a-dash"),
        ),
    ] {
        assert_eq!(usable_name(reported).as_deref(), usable, "{reported:?}");
    }
}

#[test]
fn name_names_the_one_server_and_only_with_a_usable_name() {
    let config = Config::for_command_with_store(vec!["index.js".into()], "sqlite://x".into())
        .expect("a config");
    let named = config.clone().with_upstream_name("notes").expect("named");
    assert_eq!(named.upstreams[0].name, "notes");
    assert!(
        named.names_given,
        "--name is not replaced by the server's own"
    );
    let refused = config
        .with_upstream_name("Not A Name")
        .expect_err("refused");
    assert_eq!(refused.key.as_deref(), Some("--name"));
    assert!(
        refused.message.contains("invalid upstream name"),
        "{}",
        refused.message
    );
}
