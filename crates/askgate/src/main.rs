//! `askgate`: human-in-the-loop for the Model Context Protocol.
//!
//! For now the binary carries the `form` commands (print the
//! `elicitation/create` params of a form, settle an answer against it),
//! the store commands (`asks`, `audit`), and `ask` (put a form to a person
//! from a script, and wait for the answer).

mod ask_cmd;
mod failure;
mod form_cmd;
mod gateway_cmd;
mod inbox_cmd;
mod init_cmd;
mod key_cmd;
mod logs;
mod store_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// Human-in-the-loop for MCP: typed, validated asks a person can answer.
#[derive(Debug, Parser)]
#[command(name = "askgate", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with form files: print their MCP wire form, settle answers.
    #[command(subcommand, after_help = "Example:\n  askgate form schema deploy.json")]
    Form(form_cmd::FormCommand),
    /// Pending and settled asks in the store: list, show, answer, approve,
    /// deny, decline, skip.
    #[command(
        after_help = "Examples:\n  askgate asks list --config askgate.toml\n  \
        askgate asks show ask_01J9ZC5W6M\n  askgate asks approve ask_01J9ZC5W6M"
    )]
    Asks {
        #[command(flatten)]
        store: store_cmd::StoreArg,
        #[command(subcommand)]
        command: store_cmd::AsksCommand,
    },
    /// Put a typed ask to a person from a script: park it, print its inbox
    /// link, and (with --wait) print the settled outcome as JSON.
    Ask(ask_cmd::AskArgs),
    /// Set up a gateway for an MCP server: its tools and their risks, a
    /// config, the key and the operator's token, the desktop client's JSON.
    Init(init_cmd::InitArgs),
    /// Put an MCP server behind typed, durable, audited confirmation.
    #[command(after_help = "Examples:\n  \
        askgate gateway -- npx -y @modelcontextprotocol/server-filesystem ~/projects\n  \
        askgate gateway --config askgate.toml\n  \
        askgate gateway --config askgate.toml --listen 127.0.0.1:8080")]
    Gateway(gateway_cmd::GatewayArgs),
    /// Serve the inbox page on its own, over a store.
    #[command(after_help = "Examples:\n  askgate inbox --config askgate.toml\n  \
        askgate inbox --store postgres://askgate@db/askgate")]
    Inbox(inbox_cmd::InboxArgs),
    /// Every upstream tool with its risk, the rule that gave it, and what a
    /// call would do now (the operator's dry run).
    #[command(after_help = "Examples:\n  askgate tools --config askgate.toml\n  \
        askgate tools -- npx -y @modelcontextprotocol/server-filesystem ~/projects")]
    Tools(gateway_cmd::ToolsArgs),
    /// The audit log: list entries, verify the hash chain.
    #[command(
        after_help = "Examples:\n  askgate audit verify --config askgate.toml\n  \
        askgate audit list"
    )]
    Audit {
        #[command(flatten)]
        store: store_cmd::StoreArg,
        #[command(subcommand)]
        command: store_cmd::AuditCommand,
    },
    /// Print a shell's completions for askgate.
    #[command(after_help = "Examples:\n  \
        askgate completions bash > ~/.local/share/bash-completion/completions/askgate\n  \
        askgate completions zsh > ~/.zfunc/_askgate\n  \
        askgate completions fish > ~/.config/fish/completions/askgate.fish")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// The deployment's key: where it is, its fingerprint; rotate it.
    #[command(after_help = "Example:\n  askgate key show --config askgate.toml")]
    Key {
        #[command(flatten)]
        store: store_cmd::StoreArg,
        #[command(subcommand)]
        command: key_cmd::KeyCommand,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Form(command) => form_cmd::run(command),
        Command::Ask(args) => ask_cmd::run(args),
        Command::Gateway(args) => gateway_cmd::run(args),
        Command::Init(args) => init_cmd::run(args),
        Command::Tools(args) => gateway_cmd::tools(args),
        Command::Inbox(args) => inbox_cmd::run(args),
        Command::Asks { store, command } => store_cmd::run_asks(store, command),
        Command::Audit { store, command } => store_cmd::run_audit(store, command),
        Command::Key { store, command } => key_cmd::run(store, command),
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "askgate",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
    }
}
