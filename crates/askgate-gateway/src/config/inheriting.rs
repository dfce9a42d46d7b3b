//! `--inherit-env`: without a config, which of askgate's environment the
//! one server inherits beyond the allow-list (see [`crate::environment`]).

use super::{Config, ConfigError, Transport};
use crate::environment::Inherit;

impl Config {
    /// The same config, its one stdio server inheriting the variables
    /// `names` (names, prefixes such as `AWS_*`, or `*`) of askgate's
    /// environment beyond the allow-list.
    ///
    /// # Errors
    /// A name that is no variable, or a config with a file (it says
    /// `inherit_env` per upstream) or with no stdio server.
    pub fn inheriting_env(mut self, names: &[String]) -> Result<Config, ConfigError> {
        if names.is_empty() {
            return Ok(self);
        }
        let flag = Some("--inherit-env");
        if self.file.is_some() {
            return Err(ConfigError::bare(
                flag,
                "--inherit-env is for a server given after --; with a config file, set \
                 inherit_env = [...] in its [[upstreams]] table",
            ));
        }
        let inherit = Inherit::parse(names.iter().map(String::as_str))
            .map_err(|why| ConfigError::bare(flag, why))?;
        match self.upstreams.as_mut_slice() {
            [upstream] => match &mut upstream.transport {
                Transport::Stdio(stdio) => stdio.inherit = inherit,
                Transport::Http(_) => {
                    return Err(ConfigError::bare(flag, "the server is no stdio server"));
                }
            },
            _ => return Err(ConfigError::bare(flag, "no one stdio server to give it to")),
        }
        Ok(self)
    }
}
