//! A command run on a terminal of its own, typed to: what a person at a
//! shell sees and does. util-linux's `script` gives the command a
//! pseudo-terminal (so `stdin().is_terminal()` holds) and passes it the
//! lines given; a machine without `script` skips the test with a notice.

use std::ffi::OsStr;
use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `program args` run on a pseudo-terminal with `env`, typed `input`
/// (lines, `\n` each): its exit and what the terminal showed (stdout,
/// where the pseudo-terminal's output comes out). `None`, with a notice on
/// stderr, when `script` is not installed.
pub fn typed<S: AsRef<OsStr>>(
    program: impl AsRef<OsStr>,
    args: &[S],
    env: &[(&str, &str)],
    input: &str,
) -> Option<Output> {
    let has_script = Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !has_script {
        eprintln!(
            "skipped: util-linux `script` is not installed, so no terminal can be given to the command"
        );
        return None;
    }
    let line: Vec<String> = std::iter::once(program.as_ref())
        .chain(args.iter().map(AsRef::as_ref))
        .map(|word| quoted(&word.to_string_lossy()))
        .collect();
    let mut command = Command::new("script");
    command
        .args(["--quiet", "--return", "--command"])
        .arg(line.join(" "))
        .arg("/dev/null")
        .env_remove("ASKGATE_STORE")
        .env_remove("ASKGATE_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("script starts");
    child
        .stdin
        .take()
        .expect("its stdin")
        .write_all(input.as_bytes())
        .expect("typed");
    Some(child.wait_with_output().expect("script ends"))
}

/// `word` quoted for the shell `script` runs the command line with.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}
