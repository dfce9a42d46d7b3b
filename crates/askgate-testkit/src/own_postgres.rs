//! A PostgreSQL server of one test's own — made with `initdb` in a scratch
//! directory and run with `pg_ctl` on a free loopback port — that the test
//! stops and starts again, to see an outage as askgate sees one. Never the
//! machine's own server.
//!
//! It runs where the other PostgreSQL tests run (`ASKGATE_TEST_POSTGRES_URL`
//! is set, as `.ci/run` sets it); otherwise the test is skipped with a
//! notice. Run as root, the server runs as the `postgres` user, as
//! PostgreSQL requires.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::postgres::URL_VAR;
use crate::scratch::Scratch;

/// A PostgreSQL server of the test's own, stopped and removed when
/// dropped.
#[derive(Debug)]
pub struct OwnPostgres {
    dir: Scratch,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl OwnPostgres {
    /// A new server, started; `None` (with a notice that `what` is
    /// skipped) where PostgreSQL tests do not run.
    ///
    /// # Panics
    /// PostgreSQL tests run and `initdb` is not found, or the server does
    /// not start: the message says which command failed and what it said.
    pub fn start(what: &str) -> Option<OwnPostgres> {
        if std::env::var_os(URL_VAR).is_none() {
            let _ = writeln!(
                std::io::stderr(),
                "notice: {URL_VAR} is not set; {what} is skipped"
            );
            return None;
        }
        let bin = binaries().unwrap_or_else(|| {
            panic!(
                "{URL_VAR} is set but PostgreSQL's initdb is not on PATH nor in /usr/lib/postgresql/*/bin; {what} needs it"
            )
        });
        let dir = Scratch::new();
        // Root runs the server as `postgres` (`id`, not libc: no unsafe).
        let as_postgres = run(Command::new("id").arg("-u")).stdout.trim_ascii() == b"0";
        let server = OwnPostgres {
            dir,
            bin,
            port: free_port(),
            as_postgres,
        };
        if as_postgres {
            let owner = run(Command::new("id").args(["-u", "postgres"]));
            let group = run(Command::new("id").args(["-g", "postgres"]));
            let id = |out: &Output| -> u32 {
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse()
                    .expect("a user id")
            };
            std::os::unix::fs::chown(server.dir.path(), Some(id(&owner)), Some(id(&group)))
                .expect("the scratch directory is given to postgres");
        }
        let data = server.data();
        server.pg(
            "initdb",
            &[
                "-D",
                &data.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        server.start_again();
        Some(server)
    }

    /// Its URL, as a store is named.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Its address, `127.0.0.1:PORT`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Stop it (`pg_ctl stop -m fast`: every connection is closed) and wait
    /// until it is down.
    pub fn stop(&self) {
        let data = self.data().display().to_string();
        self.pg("pg_ctl", &["-D", &data, "-m", "fast", "-w", "stop"]);
    }

    /// Start it (again), on the same port, and wait until it takes
    /// connections.
    pub fn start_again(&self) {
        let data = self.data().display().to_string();
        let log = self.dir.join("server.log").display().to_string();
        let options = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {} -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        self.pg(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-o", &options, "-w", "start"],
        );
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Run the PostgreSQL tool `tool` with `args`, as `postgres` when this
    /// is root; panics with what it said when it fails.
    fn pg(&self, tool: &str, args: &[&str]) -> Output {
        let program = self.bin.join(tool);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(&program);
            command
        } else {
            Command::new(&program)
        };
        command.args(args).current_dir(self.dir.path());
        let output = run(&mut command);
        assert!(
            output.status.success(),
            "{tool} {} failed: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let data = self.data().display().to_string();
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command
                .args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
            command
        } else {
            Command::new(self.bin.join("pg_ctl"))
        };
        // Down already, or going down now: either way nothing is left.
        let _ = command
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .output();
    }
}

/// The directory holding `initdb` and `pg_ctl`.
fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("initdb"))
            .collect::<Vec<_>>()
    });
    let installed = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|version| version.path().join("bin").join("initdb"));
    on_path
        .chain(installed)
        .find(|initdb| initdb.is_file())
        .and_then(|initdb| std::fs::canonicalize(initdb).ok())
        .and_then(|initdb| initdb.parent().map(Path::to_path_buf))
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

fn run(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("{command:?} could not run: {e}"))
}
