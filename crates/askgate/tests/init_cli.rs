//! `askgate init` and `--trust-read-only-hints` (issue 21, "Getting
//! started"): from a server's command to a config a desktop client can
//! start, its tools' risks shown, the key and the operator's token made
//! for their owner only, the client's JSON printed, and nothing written
//! over.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

use askgate_testkit::{Scratch, binaries};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn askgate(args: &[&str]) -> Output {
    Command::new(binaries!().askgate)
        .args(args)
        .env_remove("ASKGATE_STORE")
        .env("ASKGATE_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("askgate runs")
}

#[test]
fn init_writes_a_config_the_gateway_loads_and_says_how_to_start_it() {
    let dir = Scratch::new();
    let config = dir.path().join("askgate.toml");
    let store = format!("sqlite://{}", dir.path().join("askgate.db").display());
    let notes = dir.path().join("notes").display().to_string();
    let upstream = binaries!().upstream.display().to_string();
    let config_arg = config.display().to_string();
    let args = [
        "init",
        "--config",
        &config_arg,
        "--store",
        &store,
        "--trust-read-only-hints",
        "--",
        &upstream,
        "--dir",
        &notes,
    ];
    let made = askgate(&args);
    let said = text(&made.stdout);
    assert_eq!(
        made.status.code(),
        Some(0),
        "{}{}",
        said,
        text(&made.stderr)
    );
    let line = |tool: &str| {
        said.lines()
            .find(|l| l.trim_start().starts_with(&format!("{tool} ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("read_note").contains("read") && line("read_note").contains("runs"),
        "{said}"
    );
    assert!(
        line("write_note").contains("destructive") && line("write_note").contains("asks first"),
        "{said}"
    );
    assert!(
        said.contains("\"mcpServers\"") && said.contains(&config_arg),
        "{said}"
    );
    assert!(
        said.contains("operator-token"),
        "says where the token is: {said}"
    );
    let written = std::fs::read_to_string(&config).expect("written");
    assert!(
        written.contains("trust_read_only_hints = true"),
        "{written}"
    );
    // The gateway reads it: its tools as init showed them.
    let tools = askgate(&["tools", "--config", &config_arg]);
    assert_eq!(tools.status.code(), Some(0), "{}", text(&tools.stderr));
    assert!(
        text(&tools.stdout).contains("read_note"),
        "{}",
        text(&tools.stdout)
    );
    let key = dir.path().join("askgate.db.key");
    let token = dir.path().join("askgate.db.key.operator-token");
    for file in [&config, &key, &token] {
        let mode = std::fs::metadata(file).expect("made").permissions().mode();
        assert_eq!(mode & 0o077, 0, "{}: {mode:o}", file.display());
    }
    // The token is never printed.
    let secret = std::fs::read_to_string(&token).expect("reads");
    assert!(!said.contains(secret.trim()), "the token was printed");
    // Run again: nothing is written over.
    let again = askgate(&args);
    assert_ne!(again.status.code(), Some(0));
    assert!(
        text(&again.stderr).contains("exists already; pass --force"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).expect("reads"), written);
}

#[test]
fn without_a_command_or_a_terminal_init_says_what_it_needs() {
    let dir = Scratch::new();
    let config = dir.path().join("askgate.toml").display().to_string();
    let refused = askgate(&["init", "--config", &config]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        text(&refused.stderr).contains("give the MCP server's command after --"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.path().join("askgate.toml").exists());
}

#[test]
fn zero_config_trusts_read_only_hints_only_when_told() {
    let dir = Scratch::new();
    let store = format!("sqlite://{}", dir.path().join("askgate.db").display());
    let upstream = binaries!().upstream.display().to_string();
    let notes = dir.path().join("notes").display().to_string();
    let risk_of_read_note = |trust: bool| {
        let mut args = vec!["tools", "--store", &store];
        if trust {
            args.push("--trust-read-only-hints");
        }
        args.extend(["--", &upstream, "--dir", &notes]);
        let listed = askgate(&args);
        assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
        text(&listed.stdout)
            .lines()
            .find(|l| l.starts_with("read_note "))
            .map(|l| l.split_whitespace().nth(2).unwrap_or_default().to_owned())
            .unwrap_or_default()
    };
    assert_eq!(risk_of_read_note(false), "medium_write");
    assert_eq!(risk_of_read_note(true), "read");
}

#[test]
fn at_a_terminal_init_asks_for_the_server_and_whether_to_trust_its_hints() {
    let dir = Scratch::new();
    let config = dir.path().join("askgate.toml");
    let store = format!("sqlite://{}", dir.path().join("askgate.db").display());
    let notes = dir.path().join("notes").display().to_string();
    let upstream = binaries!().upstream.display().to_string();
    let config_arg = config.display().to_string();
    let typed = format!("{upstream} --dir {notes}\ny\n");
    let Some(made) = askgate_testkit::terminal::typed(
        binaries!().askgate,
        &["init", "--config", &config_arg, "--store", &store],
        &[("ASKGATE_LOG", "warn")],
        &typed,
    ) else {
        return;
    };
    let shown = text(&made.stdout);
    assert_eq!(made.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("The MCP server to put behind askgate"),
        "{shown}"
    );
    assert!(shown.contains("Trust these hints"), "{shown}");
    let written = std::fs::read_to_string(&config).expect("written");
    assert!(
        written.contains("trust_read_only_hints = true"),
        "{written}"
    );
    assert!(written.contains(&upstream), "{written}");
    // No to the hints: not trusted.
    let other = dir.path().join("other.toml").display().to_string();
    let store = format!("sqlite://{}", dir.path().join("other.db").display());
    let typed = format!("{upstream} --dir {notes}\n\n");
    let made = askgate_testkit::terminal::typed(
        binaries!().askgate,
        &["init", "--config", &other, "--store", &store],
        &[("ASKGATE_LOG", "warn")],
        &typed,
    )
    .expect("script is there");
    assert_eq!(made.status.code(), Some(0), "{}", text(&made.stdout));
    let written = std::fs::read_to_string(&other).expect("written");
    assert!(
        !written.contains("trust_read_only_hints = true"),
        "{written}"
    );
}
