//! What a stdio upstream inherits of askgate's environment: an allow-list,
//! and what the config names.
//!
//! askgate's environment holds its own secrets (`ASKGATE_STORE` with a
//! database password, `ASKGATE_WEBHOOK`) and often others' (cloud
//! credentials, tokens of other tools). An upstream is a program the
//! operator chose, but not one that should read all of them, so it gets
//! only:
//!
//! - the variables a program needs to run at all, as the official MCP
//!   SDKs' stdio clients pass them ([`BASE`]: `PATH`, `HOME`, `USER`,
//!   `SHELL`, `TERM`, …, their Windows counterparts), and the locale and
//!   time zone (`LANG`, `LC_*`, `TZ`) and temporary folder (`TMPDIR`);
//! - the variables its `inherit_env` names (`"GITHUB_TOKEN"`, a prefix
//!   `"AWS_*"`, or `"*"` for all), or `--inherit-env` without a config;
//! - its `env` table, set on purpose.
//!
//! askgate's own (`ASKGATE_*`) never pass, whatever `inherit_env` says.
//! The names left out are logged once per start (names only, no value),
//! so that a server that misses one says why.

/// The variables every upstream inherits (compared without case, as
/// Windows reads them).
pub(crate) const BASE: [&str; 26] = [
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
    "PROGRAMDATA",
    "COMSPEC",
    "PATHEXT",
    "WINDIR",
];

/// The prefix of the locale's variables, inherited too.
const LOCALE: &str = "LC_";

/// The prefix of askgate's own variables, which never pass.
const OWN: &str = "ASKGATE_";

/// Which of askgate's variables an upstream inherits beyond [`BASE`]:
/// names, prefixes (`AWS_*`), or every one (`*`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Inherit {
    names: Vec<String>,
}

impl Inherit {
    /// `entries` as written (`inherit_env`, `--inherit-env`).
    ///
    /// # Errors
    /// The first entry that is no variable name, prefix or `*`, naming it
    /// and what is expected.
    pub(crate) fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Inherit, String> {
        let mut names = Vec::new();
        for entry in entries {
            let name = entry.strip_suffix('*').unwrap_or(entry);
            let fits = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && (!name.is_empty() || entry == "*");
            if !fits {
                return Err(format!(
                    "{entry:?} is no environment variable: expected a name (letters, digits, \
                     _), a prefix ending in * (\"AWS_*\"), or \"*\" for every variable"
                ));
            }
            names.push(entry.to_owned());
        }
        Ok(Inherit { names })
    }

    /// Whether the variable `name` of askgate's environment passes.
    pub(crate) fn passes(&self, name: &str) -> bool {
        if name.starts_with(OWN) {
            return false;
        }
        let base = BASE.iter().any(|b| b.eq_ignore_ascii_case(name)) || name.starts_with(LOCALE);
        base || self
            .names
            .iter()
            .any(|entry| match entry.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => entry == name,
            })
    }

    /// Give `command` the variables of askgate's environment that pass
    /// (and nothing else of it); the names of those left out, sorted.
    pub(crate) fn apply(&self, command: &mut tokio::process::Command) -> Vec<String> {
        command.env_clear();
        let mut left_out = Vec::new();
        for (key, value) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if self.passes(&name) {
                command.env(&key, value);
            } else if !name.starts_with(OWN) {
                left_out.push(name.into_owned());
            }
        }
        left_out.sort();
        left_out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_base_and_what_is_named_pass_and_never_askgates_own() {
        let none = Inherit::default();
        for name in ["PATH", "HOME", "LANG", "LC_ALL", "TZ", "Path", "SystemRoot"] {
            assert!(none.passes(name), "{name}");
        }
        for name in [
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "PGPASSWORD",
            "ASKGATE_STORE",
        ] {
            assert!(!none.passes(name), "{name}");
        }
        let some = Inherit::parse(["GITHUB_TOKEN", "AWS_*"]).expect("parses");
        assert!(some.passes("GITHUB_TOKEN"));
        assert!(some.passes("AWS_PROFILE"));
        assert!(!some.passes("GITHUB_TOKEN_2"));
        assert!(!some.passes("PGPASSWORD"));
        let all = Inherit::parse(["*"]).expect("parses");
        assert!(all.passes("PGPASSWORD"));
        assert!(!all.passes("ASKGATE_WEBHOOK"), "askgate's own never pass");
    }

    #[test]
    fn an_entry_that_is_no_variable_is_refused_naming_it() {
        for bad in ["", "A-B", "X=1", "*AWS", "PATH HOME"] {
            let refused = Inherit::parse([bad]).expect_err(bad);
            assert!(refused.contains(&format!("{bad:?}")), "{refused}");
        }
    }
}
