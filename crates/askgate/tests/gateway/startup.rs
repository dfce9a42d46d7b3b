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
