//! How an upstream is reached: a command on stdio, or a Streamable HTTP
//! URL, as its config says.

/// How to reach an upstream.
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// A command speaking MCP on stdio.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment.
        env: Vec<(String, String)>,
        /// What it inherits of askgate's own.
        inherit: crate::environment::Inherit,
        /// The working directory.
        cwd: Option<std::path::PathBuf>,
    },
    /// A Streamable HTTP URL.
    Http {
        /// The URL.
        url: String,
        /// Headers sent with every request (credentials: never logged).
        headers: Vec<(String, String)>,
    },
}

impl From<&crate::config::Transport> for Endpoint {
    fn from(transport: &crate::config::Transport) -> Endpoint {
        match transport {
            crate::config::Transport::Stdio(stdio) => Endpoint::Command {
                program: stdio.command.clone(),
                args: stdio.args.clone(),
                env: stdio.env.clone().into_iter().collect(),
                inherit: stdio.inherit.clone(),
                cwd: stdio.cwd.clone(),
            },
            crate::config::Transport::Http(http) => Endpoint::Http {
                url: http.url.clone(),
                headers: http.headers.clone().into_iter().collect(),
            },
        }
    }
}
