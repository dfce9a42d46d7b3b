//! `askgate gateway` as a test runs it: over the example upstream (`notes`),
//! on a store in a scratch directory, with or without a config file; on
//! stdio with a [`Person`] as its client, or listening on a free port. Its
//! stderr is read into a log the test can wait on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use askgate_store::Store;
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;

use crate::person::Person;
use crate::process::{Process, keep_lines_async};
use crate::scratch::Scratch;
use crate::wait::Seen;

/// The binaries a gateway test runs; [`binaries!`](crate::binaries) names
/// the test crate's.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `askgate`.
    pub askgate: PathBuf,
    /// `askgate-example-upstream`.
    pub upstream: PathBuf,
}

/// The [`Binaries`] cargo built for the calling test crate (a test of the
/// `askgate` package).
#[macro_export]
macro_rules! binaries {
    () => {
        $crate::gateway::Binaries {
            askgate: ::std::path::PathBuf::from(env!("CARGO_BIN_EXE_askgate")),
            upstream: ::std::path::PathBuf::from(env!("CARGO_BIN_EXE_askgate-example-upstream")),
        }
    };
}

/// How a gateway is started: its scratch directory and store, its config
/// (none: `--store URL -- UPSTREAM`), and how much it logs.
#[derive(Debug)]
pub struct Setup {
    bins: Binaries,
    dir: Scratch,
    store_url: String,
    config: Option<String>,
    upstream: String,
    tables: String,
    log: String,
}

impl Setup {
    /// A gateway over the example upstream with no config file, on a SQLite
    /// store in a scratch directory of its own.
    pub fn new(bins: Binaries) -> Setup {
        let dir = Scratch::new();
        let store_url = dir.store_url();
        Setup {
            bins,
            dir,
            store_url,
            config: None,
            upstream: String::new(),
            tables: String::new(),
            log: String::new(),
        }
    }

    /// With a config file: `store`, then `extra` (TOML: keys, then tables),
    /// then the upstream `notes`.
    #[must_use]
    pub fn config(mut self, extra: &str) -> Setup {
        self.config = Some(extra.to_owned());
        self
    }

    /// With `keys` (TOML) in the upstream's table.
    #[must_use]
    pub fn upstream_keys(mut self, keys: &str) -> Setup {
        keys.clone_into(&mut self.upstream);
        self
    }

    /// With `tables` (TOML) after the upstream's.
    #[must_use]
    pub fn tables(mut self, tables: &str) -> Setup {
        tables.clone_into(&mut self.tables);
        self
    }

    /// On the store at `url` instead of the scratch one.
    #[must_use]
    pub fn store(mut self, url: &str) -> Setup {
        url.clone_into(&mut self.store_url);
        self
    }

    /// Logging `directives` too (`ASKGATE_LOG`, after `ASKGATE_TEST_LOG`
    /// or `warn`).
    #[must_use]
    pub fn logging(mut self, directives: &str) -> Setup {
        directives.clone_into(&mut self.log);
        self
    }

    /// The binaries it runs.
    pub fn binaries(&self) -> &Binaries {
        &self.bins
    }

    /// Its scratch directory.
    pub fn dir(&self) -> &Scratch {
        &self.dir
    }

    /// Its store's URL.
    pub fn store_url(&self) -> &str {
        &self.store_url
    }

    /// Its config file (written by the first start).
    pub fn config_path(&self) -> PathBuf {
        self.dir.join("askgate.toml")
    }

    /// The example upstream, as a config names it.
    pub fn upstream_command(&self) -> String {
        self.bins.upstream.display().to_string()
    }

    /// The arguments after `askgate gateway`, writing the config file.
    fn arguments(&self) -> Vec<String> {
        match self.write_config() {
            None => vec![
                "--store".into(),
                self.store_url.clone(),
                "--".into(),
                self.upstream_command(),
            ],
            Some(file) => vec!["--config".into(), file],
        }
    }

    /// Write the config file, if this setup has one: its path.
    pub(crate) fn write_config(&self) -> Option<String> {
        let extra = self.config.as_ref()?;
        let text = format!(
            "store = {:?}\n{extra}\n\n[[upstreams]]\nname = \"notes\"\ncommand = {:?}\n{}\n\n{}\n",
            self.store_url,
            self.upstream_command(),
            self.upstream,
            self.tables,
        );
        let file = self.config_path();
        std::fs::write(&file, text).expect("writes the config");
        Some(file.display().to_string())
    }

    /// What `ASKGATE_LOG` says: quiet unless a developer asks for more
    /// (`ASKGATE_TEST_LOG=debug`), and what the test reads.
    fn log_filter(&self) -> String {
        let base = std::env::var("ASKGATE_TEST_LOG").unwrap_or_else(|_| "warn".into());
        if self.log.is_empty() {
            base
        } else {
            format!("{base},{}", self.log)
        }
    }

    /// `askgate gateway ...` as a command, for stdio.
    pub fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.bins.askgate);
        command
            .arg("gateway")
            .args(self.arguments())
            .env("ASKGATE_LOG", self.log_filter())
            .env("NO_COLOR", "1");
        command
    }

    /// Start the gateway on stdio: its transport, its process id, and its
    /// stderr's log.
    pub fn spawn(&self) -> (TokioChildProcess, u32, Seen<String>) {
        let (transport, stderr) = TokioChildProcess::builder(self.command())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the gateway starts");
        let pid = transport.id().expect("the gateway runs");
        let log = Seen::default();
        keep_lines_async(stderr.expect("stderr is piped"), log.clone());
        (transport, pid, log)
    }

    /// Start the gateway on stdio with `person` as its client.
    pub async fn connect(self, person: Person) -> Gateway {
        let (transport, pid, log) = self.spawn();
        let client = person
            .clone()
            .serve(transport)
            .await
            .expect("the client connects to the gateway");
        Gateway {
            client,
            person,
            log,
            pid,
            setup: self,
        }
    }

    /// Start the gateway on Streamable HTTP, on a free loopback port.
    pub async fn listen(self) -> Listening {
        let mut command = Command::new(&self.bins.askgate);
        command
            .arg("gateway")
            .args(self.arguments())
            .args(["--listen", "127.0.0.1:0"])
            .env("ASKGATE_LOG", self.log_filter())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let process = Process::spawn(command);
        let line = process.log.line_with(&["Streamable HTTP at "]).await;
        let url = line
            .split("Streamable HTTP at ")
            .nth(1)
            .unwrap_or_default()
            .trim()
            .to_owned();
        Listening {
            process,
            url,
            setup: self,
        }
    }

    /// `askgate asks ARGS` as the person whose token is `token`, with this
    /// gateway's config.
    pub fn as_person(&self, token: &str, args: &[&str]) -> Output {
        as_person(&self.bins.askgate, &self.config_path(), token, args)
    }
}

/// A gateway on stdio and its client.
#[derive(Debug)]
pub struct Gateway {
    /// The client, speaking for [`Gateway::person`].
    pub client: RunningService<RoleClient, Person>,
    /// The person behind the client: what they were asked and told.
    pub person: Person,
    /// What the gateway and its upstreams wrote to stderr so far.
    pub log: Seen<String>,
    /// The gateway's process id.
    pub pid: u32,
    /// How it was started.
    pub setup: Setup,
}

impl Gateway {
    /// Its store's URL.
    pub fn store_url(&self) -> &str {
        self.setup.store_url()
    }

    /// Its store, opened beside it.
    pub async fn store(&self) -> Store {
        Store::open(self.store_url())
            .await
            .expect("the store opens")
    }

    /// Its ledger's states, oldest first.
    pub async fn ledger(&self) -> Vec<String> {
        ledger(self.store_url()).await
    }

    /// Close the client's side, as a desktop client quits, and wait for
    /// the gateway to exit; what it was started with (its store and
    /// scratch directory) stays.
    pub async fn stop(self) -> Setup {
        self.client.cancel().await.expect("the gateway stops");
        self.setup
    }

    /// `askgate asks ARGS` as the person whose token is `token`.
    pub fn as_person(&self, token: &str, args: &[&str]) -> Output {
        self.setup.as_person(token, args)
    }
}

/// A gateway on Streamable HTTP; killed when dropped.
#[derive(Debug)]
pub struct Listening {
    /// The gateway's process and its stderr.
    pub process: Process,
    /// Its MCP endpoint (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    /// How it was started.
    pub setup: Setup,
}

impl Listening {
    /// What the gateway and its upstreams wrote to stderr so far.
    pub fn log(&self) -> &Seen<String> {
        &self.process.log
    }

    /// Its store's URL.
    pub fn store_url(&self) -> &str {
        self.setup.store_url()
    }

    /// `askgate asks ARGS` as the person whose token is `token`.
    pub fn as_person(&self, token: &str, args: &[&str]) -> Output {
        self.setup.as_person(token, args)
    }
}

/// `askgate asks ARGS --config CONFIG` with `ASKGATE_TOKEN=token` and no
/// terminal.
pub fn as_person(askgate: &Path, config: &Path, token: &str, args: &[&str]) -> Output {
    Command::new(askgate)
        .arg("asks")
        .args(args)
        .arg("--config")
        .arg(config)
        .env("ASKGATE_TOKEN", token)
        .stdin(Stdio::null())
        .output()
        .expect("askgate runs")
}

/// The ledger's states in the store at `store_url` (SQLite or
/// PostgreSQL), oldest first.
pub async fn ledger(store_url: &str) -> Vec<String> {
    const STATES: &str = "SELECT state FROM calls ORDER BY prepared_at";
    if store_url.starts_with("postgres") {
        let pool = sqlx::postgres::PgPool::connect(store_url)
            .await
            .expect("connects");
        let states = sqlx::query_scalar(STATES)
            .fetch_all(&pool)
            .await
            .expect("reads the ledger");
        pool.close().await;
        return states;
    }
    let pool = sqlx::sqlite::SqlitePool::connect(store_url)
        .await
        .expect("connects");
    let states = sqlx::query_scalar(STATES)
        .fetch_all(&pool)
        .await
        .expect("reads the ledger");
    pool.close().await;
    states
}

/// Write a config over `store` (with an upstream that does nothing) whose
/// one person, `name`, answers for everyone with `token`; its path.
pub fn people_config(dir: &Scratch, store: &str, name: &str, token: &str) -> PathBuf {
    dir.write(
        "askgate.toml",
        &format!(
            "store = {store:?}\n\n[[upstreams]]\nname = \"none\"\ncommand = \"true\"\n\n\
             [[people]]\nname = {name:?}\ntoken = {token:?}\nanswers_for = [\"*\"]\n"
        ),
    )
}
