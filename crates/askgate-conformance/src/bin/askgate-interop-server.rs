//! The interop fixture server: the `deploy` tool, which asks a person
//! through askgate-mcp, for the clients of other SDKs (`interop/`).
//!
//! - `askgate-interop-server --stdio`: MCP on stdin/stdout, for a client
//!   that spawns it. Stdout is the MCP channel: every log goes to stderr.
//! - `askgate-interop-server [--port 0]`: Streamable HTTP at
//!   `http://127.0.0.1:<port>/mcp` (2025-11-25 sessions and 2026-07-28
//!   stateless requests alike); prints `listening on <url>` to stderr once
//!   it accepts connections.

use std::sync::Arc;

use askgate_conformance::interop::Deploy;
use askgate_conformance::store::StoreArg;
use askgate_mcp::Rounds;
use clap::Parser;
use rmcp::ServiceExt;
use rmcp::transport::stdio;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

#[derive(Parser)]
#[command(about = "The askgate interop fixture server: a deploy tool that asks a person")]
struct Args {
    /// Serve MCP on stdin/stdout instead of HTTP.
    #[arg(long)]
    stdio: bool,
    /// The HTTP port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0, conflicts_with = "stdio")]
    port: u16,
    #[command(flatten)]
    store: StoreArg,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let store = args.store.open("askgate-interop").await?;
    // A fixture key: the clients check the rounds, not that the key is
    // secret.
    let rounds = Rounds::new(*b"askgate interop fixture key, 32!", store.store.clone());
    let served = if args.stdio {
        serve_stdio(rounds).await
    } else {
        serve_http(rounds, args.port).await
    };
    store.close().await;
    served
}

async fn serve_stdio(rounds: Rounds) -> Result<(), Box<dyn std::error::Error>> {
    let serving = async {
        let running = Deploy::new(rounds).serve(stdio()).await?;
        running.waiting().await?;
        Ok(())
    };
    // Until the client closes stdin, or the process is told to stop (a
    // client that spawned it may end it with SIGTERM, even before the
    // handshake).
    tokio::select! {
        served = serving => served,
        () = shutdown() => Ok(()),
    }
}

async fn serve_http(rounds: Rounds, port: u16) -> Result<(), Box<dyn std::error::Error>> {
    let service = StreamableHttpService::new(
        move || Ok(Deploy::new(rounds.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let address = listener.local_addr()?;
    eprintln!("listening on http://{address}/mcp");
    // Stop at once on a signal: a graceful end would wait for clients'
    // open event streams.
    tokio::select! {
        served = axum::serve(listener, app) => Ok(served?),
        () = shutdown() => Ok(()),
    }
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM: either ends the server
/// cleanly, so the scratch store is removed.
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut terminate) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
