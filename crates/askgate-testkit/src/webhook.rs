//! A local webhook receiver (axum on 127.0.0.1:0): it records every post
//! and answers each as scripted.

use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value as Json;

use crate::wait::Seen;

/// How the receiver answers a post.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// With this HTTP status.
    Status(u16),
    /// Never: the post hangs.
    Never,
}

/// A webhook receiver on a free loopback port.
#[derive(Clone, Debug)]
pub struct Receiver {
    /// Where to post (`http://127.0.0.1:PORT/hook/s3cret-path`).
    pub url: String,
    /// Every post so far, with its headers.
    pub posts: Seen<(HeaderMap, Json)>,
    script: Arc<Mutex<Vec<Reply>>>,
}

impl Receiver {
    /// A receiver answering 200 to every post.
    pub async fn start() -> Receiver {
        Receiver::answering(Vec::new()).await
    }

    /// A receiver answering each post as `script` says, in order (then
    /// 200).
    pub async fn answering(script: Vec<Reply>) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds a loopback port");
        let addr = listener.local_addr().expect("has an address");
        let receiver = Receiver {
            url: format!("http://{addr}/hook/s3cret-path"),
            posts: Seen::default(),
            script: Arc::new(Mutex::new(script)),
        };
        let app = axum::Router::new()
            .route("/hook/s3cret-path", axum::routing::post(receive))
            .with_state(receiver.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        receiver
    }

    /// The bodies posted so far.
    pub fn bodies(&self) -> Vec<Json> {
        self.posts.all().into_iter().map(|(_, body)| body).collect()
    }

    /// The bodies, once at least `n` were posted.
    pub async fn at_least(&self, n: usize) -> Vec<Json> {
        let what = format!("{n} webhook posts");
        let posts = self.posts.at_least(&what, n).await;
        posts.into_iter().map(|(_, body)| body).collect()
    }
}

async fn receive(
    State(receiver): State<Receiver>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Json>,
) -> StatusCode {
    receiver.posts.push((headers, body));
    let next = {
        let mut script = receiver
            .script
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if script.is_empty() {
            Reply::Status(200)
        } else {
            script.remove(0)
        }
    };
    match next {
        Reply::Status(code) => StatusCode::from_u16(code).unwrap_or(StatusCode::OK),
        Reply::Never => std::future::pending().await,
    }
}
