//! The gateway in the test's own process: started from the library
//! ([`askgate_gateway::start`]) with the config a [`Setup`] writes, over
//! the example upstream (still a child process, as a server is), its
//! client a [`Person`] on one end of a [`tokio::io::duplex`] and the
//! gateway serving the other end through rmcp.
//!
//! No `askgate` process is spawned and no stderr is read: a test that
//! waits on the gateway's log, kills its process or needs the express lane
//! (stdio pipes) uses [`Setup::connect`]. The process-level tests prove
//! the binary works; these prove the library does, without a process
//! between the test and the code.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};

use crate::gateway::Setup;
use crate::person::Person;

/// How many bytes each direction of the duplex holds before a writer
/// waits: more than a large answer's line, so nothing stalls on it.
const DUPLEX_BUFFER: usize = 1 << 20;

/// A gateway served in the test's process, and its client.
#[derive(Debug)]
pub struct InProcess {
    /// The client, speaking for [`InProcess::person`].
    pub client: RunningService<RoleClient, Person>,
    /// The person behind the client: what they were asked and told.
    pub person: Person,
    /// The gateway serving, until its client goes away.
    served: tokio::task::JoinHandle<Result<(), askgate_gateway::Error>>,
    /// How it was started (its store: [`Setup::store_url`]).
    pub setup: Setup,
}

impl Setup {
    /// Start the gateway in this process, with this setup's config (a
    /// setup without one gets none of the binary's no-config default: call
    /// [`Setup::config`] first, with `""` for no keys), and `person` as its
    /// client.
    ///
    /// # Panics
    /// When the setup has no config, the config does not load, the gateway
    /// cannot start, or the client cannot connect: the test fails, saying
    /// which.
    pub async fn in_process(self, person: Person) -> InProcess {
        let file = self
            .write_config()
            .expect("an in-process gateway needs a config: call Setup::config first");
        let config = askgate_gateway::Config::load(Path::new(&file)).expect("the config loads");
        let started = askgate_gateway::start(config, self.store_url(), false)
            .await
            .expect("the gateway starts");
        let (client_end, gateway_end) = tokio::io::duplex(DUPLEX_BUFFER);
        let (reader, writer) = tokio::io::split(gateway_end);
        let served = tokio::spawn(started.serve_over(reader, writer));
        let client = person
            .clone()
            .serve(client_end)
            .await
            .expect("the client connects to the gateway");
        InProcess {
            client,
            person,
            served,
            setup: self,
        }
    }
}

impl InProcess {
    /// Close the client's side, as a desktop client quits, and wait for
    /// the gateway to finish serving (what the answers did not wait for
    /// kept, the store closed); what it was started with stays.
    ///
    /// # Panics
    /// When the gateway ends with an error.
    pub async fn stop(self) -> Setup {
        self.client.cancel().await.expect("the client closes");
        self.served
            .await
            .expect("the gateway's task ends")
            .expect("the gateway served without an error");
        self.setup
    }
}
