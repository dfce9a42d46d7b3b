//! The example upstream MCP server: notes, a deploy and a question, one tool
//! per risk level (see `askgate_conformance::example_upstream`), on stdio.
//! A binary of the askgate package, so that cargo builds it for the
//! gateway tests.
//!
//! `askgate-example-upstream [--dir DIR] [--page-size N]`: notes in
//! memory, or as `NAME.txt` files in `DIR`; lists in pages of `N`. Stdout is the MCP channel: every log goes to
//! stderr.

use std::path::PathBuf;

use askgate_conformance::example_upstream::Notes;
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::transport::stdio;

#[derive(Parser)]
#[command(about = "An example MCP server with a tool of each risk level, on stdio")]
struct Args {
    /// Keep the notes as NAME.txt files in this directory (default: in
    /// memory, gone on exit).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Answer tools/list, prompts/list and resources/list in pages of this
    /// many, each with a `nextCursor` to the next (default: all at once).
    #[arg(long, value_name = "N")]
    page_size: Option<usize>,
    /// List one more tool under this name; a call of it answers the name.
    #[arg(long, value_name = "NAME")]
    extra_tool: Option<String>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let notes = match args.dir {
        Some(dir) => Notes::in_dir(dir)?,
        None => Notes::in_memory(),
    };
    let notes = match args.page_size {
        Some(size) => notes.in_pages_of(size),
        None => notes,
    };
    let notes = match args.extra_tool {
        Some(name) => notes.with_extra_tool(name),
        None => notes,
    };
    let running = notes.serve(stdio()).await?;
    running.waiting().await?;
    Ok(())
}
