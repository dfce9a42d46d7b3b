//! The conformance fixture server over Streamable HTTP.
//!
//! `askgate-conformance-server [--port 8001] [--store URL]`: serves
//! `http://127.0.0.1:<port>/mcp`, 2025-11-25 sessions and 2026-07-28
//! stateless requests alike, and prints `listening on <url>` to stderr
//! once it accepts connections.

use std::sync::Arc;

use askgate_conformance::changes::Changes;
use askgate_conformance::server::Fixtures;
use askgate_conformance::store::StoreArg;
use askgate_conformance::streams::Sessions;
use askgate_mcp::Rounds;
use clap::Parser;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

#[derive(Parser)]
#[command(about = "The askgate fixture server for the MCP conformance suite")]
struct Args {
    /// The port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8001)]
    port: u16,
    #[command(flatten)]
    store: StoreArg,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let store = args.store.open("askgate-conformance").await?;
    // A fixture key: the suite checks that altered state is refused, not
    // that the key is secret.
    let rounds = Rounds::new(*b"askgate conformance fixture key!", store.store.clone());
    let tasks = Fixtures::tasks(rounds.clone());
    let sessions = Arc::new(Sessions::default());
    let changes = Changes::default();
    let service = StreamableHttpService::new(
        {
            let sessions = sessions.clone();
            move || {
                Ok(Fixtures::with_tasks(rounds.clone(), tasks.clone())
                    .in_sessions(sessions.clone())
                    .announcing(changes.clone()))
            }
        },
        sessions,
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await?;
    let address = listener.local_addr()?;
    eprintln!("listening on http://{address}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    store.close().await;
    Ok(())
}
