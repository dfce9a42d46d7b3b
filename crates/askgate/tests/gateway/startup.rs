//! The start: every upstream started at once, not one after another.

use askgate_testkit::binaries;

/// A stdio upstream that says it is starting (touches `mine`), waits for
/// `theirs` to say so too, then runs the example upstream.
fn rendezvous(upstream: &str, mine: &std::path::Path, theirs: &std::path::Path) -> String {
    format!(
        "command = \"sh\"\nargs = [\"-c\", {:?}]\n",
        format!(
            "touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; exec '{upstream}'",
            mine.display(),
            theirs.display()
        )
    )
}

#[test]
fn upstreams_start_together_so_one_waiting_for_another_does_not_hang_the_start() {
    let bins = binaries!();
    let dir = askgate_testkit::Scratch::new();
    let upstream = bins.upstream.display().to_string();
    let (a, b) = (dir.join("a-started"), dir.join("b-started"));
    // Each waits until the other has started: started one after another,
    // the first would wait forever for the second.
    let config = dir.join("askgate.toml");
    std::fs::write(
        &config,
        format!(
            "store = {:?}\n\n[[upstreams]]\nname = \"first\"\n{}\n[[upstreams]]\nname = \"second\"\n{}",
            dir.store_url(),
            rendezvous(&upstream, &a, &b),
            rendezvous(&upstream, &b, &a),
        ),
    )
    .expect("writes the config");
    // Into files: a hung start's children would hold pipes open.
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let file = |path: &std::path::Path| std::fs::File::create(path).expect("creates a file");
    let mut child = std::process::Command::new(&bins.askgate)
        .args(["tools", "--json", "--config"])
        .arg(&config)
        .env("ASKGATE_LOG", "warn")
        .stdout(file(&out))
        .stderr(file(&err))
        .spawn()
        .expect("askgate tools runs");
    // Bounded, so that a start that hangs fails the test: a minute is
    // far past what a start takes, however loaded the machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("waits") {
            break Some(status);
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "the start hung or failed: {stderr}"
    );
    // Both upstreams' tools, listed in the config's order.
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let servers: Vec<String> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter_map(|row| row["server"].as_str().map(str::to_owned))
        .collect();
    let first_of_second = servers.iter().position(|s| s == "second");
    let last_of_first = servers.iter().rposition(|s| s == "first");
    assert!(
        matches!((last_of_first, first_of_second), (Some(f), Some(s)) if f < s),
        "{servers:?}"
    );
}

#[tokio::test]
async fn the_client_is_answered_while_an_upstream_still_starts_and_its_tools_come_when_it_does() {
    let upstream = binaries!().upstream.display().to_string();
    let dir = askgate_testkit::Scratch::new();
    let go = dir.join("go");
    // `slow` starts only once the test says so: after the client's
    // handshake, which so cannot wait for it.
    let slow = format!(
        "[[rules]]\ntool = \"read_note\"\nrisk = \"read\"\n\n[[upstreams]]\nname = \"slow\"\n\
         command = \"sh\"\nargs = [\"-c\", {:?}]\n",
        format!(
            "while [ ! -e '{}' ]; do sleep 0.05; done; exec '{upstream}'",
            go.display()
        )
    );
    let h = askgate_testkit::wait::within(
        "the handshake, with an upstream still starting",
        super::gateway_with(serde_json::json!({}), Vec::new(), &slow),
    )
    .await;
    // notes is there; slow is not, yet.
    let tools = super::tool_names(&h).await;
    assert!(tools.contains(&"notes__read_note".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|t| t.starts_with("slow__")), "{tools:?}");
    // Let it start: a call of its tool waits for it, then runs.
    std::fs::write(&go, "").expect("says go");
    let read = askgate_testkit::wait::within(
        "a call of the upstream that was starting",
        h.client.call_tool(askgate_testkit::mcp::call(
            "slow__read_note",
            serde_json::json!({"name": "absent"}),
        )),
    )
    .await
    .expect("a result");
    assert!(
        askgate_testkit::mcp::text(&read).contains("no note named"),
        "{}",
        askgate_testkit::mcp::text(&read)
    );
    let tools = super::tool_names(&h).await;
    assert!(tools.contains(&"slow__read_note".to_owned()), "{tools:?}");
}

/// `askgate tools` over the config of `setup` (written first), with the
/// key beside the store: what it said.
fn tools_of(setup: &askgate_testkit::gateway::Setup) -> std::process::Output {
    // Writes the config file.
    let _ = setup.command();
    std::process::Command::new(&setup.binaries().askgate)
        .args(["tools", "--config"])
        .arg(setup.config_path())
        .env("ASKGATE_LOG", "warn")
        .env("NO_COLOR", "1")
        .env_remove(askgate_gateway::keys::KEY_FILE_ENV)
        .output()
        .expect("askgate runs")
}

#[test]
fn a_process_with_another_key_than_its_stores_refuses_to_start_and_names_the_file() {
    let setup = super::setup().config("");
    let tools = || tools_of(&setup);
    // The first process over the store records its key.
    let first = tools();
    assert!(first.status.success(), "{first:?}");
    let key_file = askgate_gateway::keys::key_path(setup.store_url());
    let key = std::fs::read(&key_file).expect("the key was made");

    // A replica that made a key of its own.
    std::fs::write(&key_file, [7u8; 32]).expect("writes");
    let other = tools();
    assert_eq!(other.status.code(), Some(1), "{other:?}");
    let said = String::from_utf8_lossy(&other.stderr);
    assert!(
        said.contains("is not the key of the store")
            && said.contains(&key_file.display().to_string())
            && said.contains("ASKGATE_KEY_FILE"),
        "{said}"
    );

    // The key shared: it starts.
    std::fs::write(&key_file, &key).expect("writes");
    assert!(tools().status.success());
}

#[tokio::test]
async fn a_stdio_upstream_gets_the_allow_list_and_what_its_config_names_and_nothing_else() {
    use rmcp::ServiceExt;
    let setup = super::setup().config("");
    let seen = setup.dir().join("upstream-env");
    let script = format!("env > \"$0\"; exec '{}'", setup.upstream_command());
    let setup = setup.tables(&format!(
        "[[upstreams]]\nname = \"envs\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}, {:?}]\n\
         inherit_env = [\"KEPT_*\"]\n[upstreams.env]\nNOTES_TOKEN = \"given\"\n",
        seen.display().to_string()
    ));
    let mut command = setup.command();
    command
        .env("ASKGATE_WEBHOOK", "https://hooks.example/T0/secret-path")
        .env("ASKGATE_STORE", setup.store_url())
        .env("ASKGATE_TEST_MARK", "inherited-by-askgate")
        .env("KEPT_BY_NAME", "named")
        .env("AWS_SECRET_ACCESS_KEY", "the-shells-own");
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("the gateway starts");
    let client = super::person(serde_json::json!({}), vec![])
        .serve(transport)
        .await
        .expect("connects");
    client.list_all_tools().await.expect("tools");
    client.cancel().await.expect("the gateway stops");
    let env = std::fs::read_to_string(&seen).expect("the upstream wrote its environment");
    assert!(
        !env.lines().any(|line| line.starts_with("ASKGATE_")),
        "askgate's own settings (a store URL with its password, webhook URLs) stay with askgate: {env}"
    );
    assert!(env.lines().any(|line| line == "NOTES_TOKEN=given"), "{env}");
    assert!(
        env.lines().any(|line| line.starts_with("PATH=")),
        "the allow-list is inherited: {env}"
    );
    assert!(
        env.lines().any(|line| line == "KEPT_BY_NAME=named"),
        "inherit_env's prefix is inherited: {env}"
    );
    assert!(
        !env.contains("AWS_SECRET_ACCESS_KEY"),
        "what nobody named stays with askgate: {env}"
    );
}

#[tokio::test]
async fn a_listener_open_to_the_network_needs_plain_http_allowed_and_says_it_serves_it() {
    let setup = super::setup().config("").tables(
        "[[principals]]\nname = \"ci\"\ntoken = \"ci-token-0123456789abcdef\"\n\n\
         [inbox]\nlisten = \"127.0.0.1:0\"\n",
    );
    // The config is written when a command is made from the setup.
    drop(setup.command());
    let refused = std::process::Command::new(&setup.binaries().askgate)
        .arg("gateway")
        .arg("--config")
        .arg(setup.config_path())
        .args(["--listen", "0.0.0.0:0"])
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("runs");
    assert!(!refused.status.success(), "refused without the flag");
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("reachable from other machines") && said.contains("--allow-plain-http"),
        "{said}"
    );
    let mut command = std::process::Command::new(&setup.binaries().askgate);
    command
        .arg("gateway")
        .arg("--config")
        .arg(setup.config_path())
        .args(["--listen", "0.0.0.0:0", "--allow-plain-http"])
        .env("ASKGATE_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    let process = askgate_testkit::process::Process::spawn(command);
    let warned = process
        .log
        .line_with(&["serves plain HTTP on every network interface"])
        .await;
    assert!(warned.contains("put TLS in front"), "{warned}");
    process.log.line_with(&["Streamable HTTP at "]).await;
}

#[tokio::test]
async fn the_logs_are_json_lines_only_and_never_hold_an_upstreams_secret() {
    use rmcp::ServiceExt;
    // An HTTP upstream nobody listens on, its key in its URL's query: the
    // failed connection's error names the URL.
    let secret = "query-secret-0123456789";
    let setup = super::setup().config("").tables(&format!(
        "[[upstreams]]\nname = \"web\"\nurl = \"http://127.0.0.1:9/mcp?api_key={secret}\"\n\
         [upstreams.headers]\nX-Api-Key = \"header-secret-0123456789\"\n"
    ));
    let mut command = setup.command();
    command
        .arg("--log-format")
        .arg("json")
        .env("ASKGATE_LOG", "debug");
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the gateway starts");
    let log = askgate_testkit::wait::Seen::default();
    askgate_testkit::process::keep_lines_async(stderr.expect("stderr"), log.clone());
    let client = super::person(serde_json::json!({}), vec![])
        .serve(transport)
        .await
        .expect("connects");
    client.list_all_tools().await.expect("tools");
    log.line_with(&["\"web\"", "127.0.0.1:9"]).await;
    client.cancel().await.expect("the gateway stops");
    // The example upstream's own stderr too: logged line by line.
    let lines = log.all();
    assert!(!lines.is_empty());
    for line in &lines {
        assert!(!line.contains(secret), "a secret in the log: {line}");
        assert!(
            !line.contains("header-secret"),
            "a secret in the log: {line}"
        );
        assert!(
            serde_json::from_str::<serde_json::Value>(line).is_ok(),
            "not a JSON line: {line}"
        );
        assert!(!line.contains('\u{1b}'), "a colour code: {line}");
    }
}

#[tokio::test]
async fn with_json_logs_an_upstreams_own_stderr_comes_out_as_json_lines_naming_it() {
    use rmcp::ServiceExt;
    let setup = super::setup()
        .config("")
        .logging("askgate_gateway::upstream_stderr=info");
    // It says something on its stderr before it serves, with a CRLF.
    let script = format!(
        "printf 'upstream says hi\\r\\n' >&2; exec '{}'",
        setup.upstream_command()
    );
    let setup = setup.tables(&format!(
        "[[upstreams]]\nname = \"chatty\"\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n"
    ));
    let mut command = setup.command();
    command.arg("--log-format").arg("json");
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the gateway starts");
    let log = askgate_testkit::wait::Seen::default();
    askgate_testkit::process::keep_lines_async(stderr.expect("stderr"), log.clone());
    let client = super::person(serde_json::json!({}), vec![])
        .serve(transport)
        .await
        .expect("connects");
    client.list_all_tools().await.expect("tools");
    let said = log.line_with(&["upstream says hi"]).await;
    client.cancel().await.expect("the gateway stops");
    let event: serde_json::Value = serde_json::from_str(&said).expect("a JSON line");
    assert_eq!(event["fields"]["server"], "chatty", "{said}");
    assert_eq!(event["fields"]["line"], "upstream says hi", "{said}");
    assert_eq!(
        event["target"], "askgate_gateway::upstream_stderr",
        "{said}"
    );
    assert_eq!(event["level"], "INFO", "{said}");
    for line in log.all() {
        assert!(
            serde_json::from_str::<serde_json::Value>(&line).is_ok(),
            "not a JSON line: {line}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_key_file_others_can_read_is_warned_about_and_one_they_can_write_refused() {
    use std::os::unix::fs::PermissionsExt;
    let setup = super::setup().config("");
    let tools = || tools_of(&setup);
    let made = tools();
    assert!(made.status.success(), "{made:?}");
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(
        !said.contains("key file is open"),
        "its own key is private: {said}"
    );
    let key_file = askgate_gateway::keys::key_path(setup.store_url());
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let shared = tools();
    assert!(
        shared.status.success(),
        "a warning, not a refusal: {shared:?}"
    );
    let said = String::from_utf8_lossy(&shared.stderr);
    assert!(
        said.contains("key file is open to others") && said.contains("chmod 600"),
        "{said}"
    );
    assert!(said.contains("0644"), "{said}");
    // One others may write is refused: anyone could have put their key
    // in it.
    for mode in [0o666, 0o620] {
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(mode)).expect("chmod");
        let open = tools();
        assert!(!open.status.success(), "{mode:o}: refused: {open:?}");
        let said = String::from_utf8_lossy(&open.stderr);
        assert!(
            said.contains("writable by others than its owner") && said.contains("chmod 600"),
            "{mode:o}: {said}"
        );
    }
}

#[test]
fn a_client_whose_stdout_is_a_file_is_served_to_the_end_and_screened() {
    use std::io::Write;
    let setup = super::setup();
    // Writes nothing: no config; the command's store is the setup's.
    let command = setup.command();
    let program = command.as_std().get_program().to_owned();
    let args: Vec<_> = command.as_std().get_args().map(ToOwned::to_owned).collect();
    let out = setup.dir().join("stdout.jsonl");
    let mut gateway = std::process::Command::new(program)
        .args(args)
        .env("ASKGATE_LOG", "warn")
        .stdin(std::process::Stdio::piped())
        .stdout(std::fs::File::create(&out).expect("a file"))
        .spawn()
        .expect("the gateway starts");
    let mut stdin = gateway.stdin.take().expect("stdin");
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        // Params that do not fit: screened as on a pipe (rmcp answered
        // it -32601, naming no params).
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
    ] {
        writeln!(stdin, "{line}").expect("the gateway reads");
    }
    // Every answer written before the end of stdin ends the session.
    let answered = || {
        std::fs::read_to_string(&out)
            .is_ok_and(|text| text.contains(r#""id":2"#) && text.contains(r#""id":3"#))
    };
    let started = std::time::Instant::now();
    while !answered() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no answer to tools/list in {}",
            std::fs::read_to_string(&out).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(stdin);
    let status = gateway.wait().expect("it ends");
    assert!(status.success(), "{status:?}");
    let text = std::fs::read_to_string(&out).expect("reads");
    assert!(
        text.contains(r#""id":1"#) && text.contains("read_note"),
        "{text}"
    );
    let misfit = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|message| message["id"] == 3)
        .unwrap_or_default();
    assert_eq!(misfit["error"]["code"], -32602, "{text}");
}

#[tokio::test]
async fn a_call_of_a_tool_whose_server_failed_to_start_says_that_server_is_not_running() {
    // `broken` exits at once: its start fails, and is tried again later.
    let broken =
        "[[upstreams]]\nname = \"broken\"\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\n";
    let h = askgate_testkit::wait::within(
        "the handshake, with an upstream that fails to start",
        super::gateway_with(serde_json::json!({}), Vec::new(), broken),
    )
    .await;
    let error = askgate_testkit::wait::within(
        "a call of the broken upstream's tool",
        h.client.call_tool(askgate_testkit::mcp::call(
            "broken__read_note",
            serde_json::json!({"name": "absent"}),
        )),
    )
    .await
    .expect_err("no server lists the tool");
    let said = error.to_string();
    // Not only "unknown": the client is told which server is down, and
    // that it is tried again (an agent should not take the tool for gone).
    assert!(
        said.contains("unknown tool \"broken__read_note\"")
            && said.contains("not running: broken (its start failed; it is tried again")
            && !said.contains("notes"),
        "{said}"
    );
    // Any tool no server lists is told so while one is down: it may be
    // that server's.
    let error = h
        .client
        .call_tool(askgate_testkit::mcp::call(
            "notes__nothing",
            serde_json::json!({}),
        ))
        .await
        .expect_err("no such tool");
    assert!(error.to_string().contains("not running: broken"), "{error}");
}
