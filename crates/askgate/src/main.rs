//! `askgate`: human-in-the-loop for the Model Context Protocol.
//!
//! For now the binary carries the `form` commands: print the
//! `elicitation/create` params of a form for a revision, and settle an answer
//! against a form the way every askgate surface does.

mod form_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    #[command(subcommand)]
    Form(form_cmd::FormCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Form(command) => form_cmd::run(command),
    }
}
