//! An example upstream MCP server with a tool of each risk level, to put
//! behind the gateway: notes kept in memory (or in a directory), a deploy,
//! a tool that asks the person their name (`elicitation/create`, or input
//! requests on 2026-07-28) and one that sends them to a sign-in link (URL
//! mode, then `notifications/elicitation/complete`). It also lists two
//! prompts and two resources: [`PROMPT`] and [`RESOURCE`] answer at once,
//! [`PROMPT_ASKING`] and [`RESOURCE_ASKING`] ask the person's name first
//! (see the `asks` module).
//!
//! | tool | risk | annotations |
//! |---|---|---|
//! | `read_note` | read | `readOnlyHint: true` |
//! | `append_note` | low_write | `destructiveHint: false` (additive), `idempotentHint: false` |
//! | `write_note` | medium_write | `destructiveHint: true` (overwrites), `idempotentHint: true` |
//! | `deploy` | high_write | `destructiveHint: true`, `openWorldHint: true` |
//! | `delete_all_notes` | destructive | `destructiveHint: true`, `idempotentHint: true` |
//! | `ask_name` | read | `readOnlyHint: true` (it only asks) |
//! | `sign_in` | read | `readOnlyHint: true` (it only sends the person to a link) |
//! | `wait_for_note` | read | `readOnlyHint: true` (a read that takes a while; see the `wait` module) |
//! | `ask_name_later` | read | `readOnlyHint: true` (it answers at once, then asks the person's name outside any call) |
//! | `list_note_names_in_alphabetical_order` | read | `readOnlyHint: true` (a name long enough that a namespace can take it past 64 characters) |
//! | `ask_name_then_withdraw` | read | `readOnlyHint: true` (it asks the person's name, then withdraws the question unanswered) |
//!
//! Nothing is written to stdout but MCP; every log line goes to stderr and
//! names a tool, never an argument value.

mod asks;
mod catalogue;
mod pages;
mod wait;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use askgate_core::Risk;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, Role, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value as Json};

use crate::fixture::{argument, unknown};

/// Every tool and the risk it is meant to have, for tests and configs.
pub const TOOLS: [(&str, Risk); 11] = [
    ("read_note", Risk::Read),
    ("append_note", Risk::LowWrite),
    ("write_note", Risk::MediumWrite),
    ("deploy", Risk::HighWrite),
    ("delete_all_notes", Risk::Destructive),
    ("ask_name", Risk::Read),
    ("sign_in", Risk::Read),
    (wait::NAME, Risk::Read),
    ("ask_name_later", Risk::Read),
    (LONG_NAMED, Risk::Read),
    (WITHDRAWING, Risk::Read),
];

/// The tool that asks the person's name (classic elicitation) and, when no
/// answer came within `within_ms` milliseconds (default 300), withdraws
/// the question (`notifications/cancelled`) and says so.
pub const WITHDRAWING: &str = "ask_name_then_withdraw";

/// The tool with the longest name (37 characters): under a long namespace
/// it passes the 64 characters some model APIs allow a tool name.
pub const LONG_NAMED: &str = "list_note_names_in_alphabetical_order";

/// What `ask_name_later` writes to stderr once its ask outside any call
/// ended: this, then `answered`, `declined`, `cancelled` or `refused: `
/// and the reason.
pub const ASKED_LATER: &str = "askgate-example-upstream: ask_name_later:";

/// The line `wait_for_note` writes to stderr when its call is cancelled
/// before the note exists (besides the server's
/// [`CANCELLED_BECAUSE`] line, which every cancel gets).
pub const WAIT_CANCELLED: &str = "askgate-example-upstream: wait_for_note cancelled";

/// What the server writes to stderr at each `notifications/cancelled`,
/// before the reason it was given (quoted; empty when none).
pub const CANCELLED_BECAUSE: &str = "askgate-example-upstream: cancelled because";

/// The prompt that answers at once.
pub const PROMPT: &str = "summarize_notes";

/// The prompt that asks the person's name first, and greets them by it.
pub const PROMPT_ASKING: &str = "greet_me";

/// The resource that answers at once: the names of the notes, one a line.
pub const RESOURCE: &str = "notes://index";

/// The resource that asks the person's name first: whose notes these are.
pub const RESOURCE_ASKING: &str = "notes://owner";

/// The example server's handler.
#[derive(Debug, Clone)]
pub struct Notes {
    shelf: Arc<Shelf>,
    /// How many tools, prompts or resources a list answers at most, the
    /// rest on the pages its `nextCursor` leads to (`None`: all at once).
    page_size: Option<usize>,
    /// One more tool listed, under a name of the test's choosing (it only
    /// says its name): how a gateway treats a name a server chose badly.
    extra_tool: Option<String>,
}

/// Where the notes are.
#[derive(Debug)]
enum Shelf {
    Memory(Mutex<BTreeMap<String, String>>),
    /// One `NAME.txt` file a note.
    Dir(PathBuf),
}

impl Notes {
    /// Notes kept in memory, gone when the process ends.
    pub fn in_memory() -> Notes {
        Notes {
            shelf: Arc::new(Shelf::Memory(Mutex::new(BTreeMap::new()))),
            page_size: None,
            extra_tool: None,
        }
    }

    /// One more tool listed, named `name`, which answers its own name.
    #[must_use]
    pub fn with_extra_tool(mut self, name: String) -> Notes {
        self.extra_tool = Some(name);
        self
    }

    /// Lists answered in pages of `size` (at least one), as a server with
    /// many tools pages them: a client follows `nextCursor` for the rest.
    #[must_use]
    pub fn in_pages_of(mut self, size: usize) -> Notes {
        self.page_size = Some(size.max(1));
        self
    }

    /// Notes kept as `NAME.txt` files in `dir` (created if missing).
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn in_dir(dir: PathBuf) -> std::io::Result<Notes> {
        std::fs::create_dir_all(&dir)?;
        Ok(Notes {
            shelf: Arc::new(Shelf::Dir(dir)),
            page_size: None,
            extra_tool: None,
        })
    }

    fn read(&self, name: &str) -> Result<Option<String>, ErrorData> {
        match &*self.shelf {
            Shelf::Memory(map) => Ok(lock(map)?.get(name).cloned()),
            Shelf::Dir(dir) => match std::fs::read_to_string(dir.join(format!("{name}.txt"))) {
                Ok(text) => Ok(Some(text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io_error(&e)),
            },
        }
    }

    fn write(&self, name: &str, text: &str, append: bool) -> Result<(), ErrorData> {
        match &*self.shelf {
            Shelf::Memory(map) => {
                let mut map = lock(map)?;
                let note = map.entry(name.to_owned()).or_default();
                if !append {
                    note.clear();
                }
                note.push_str(text);
                Ok(())
            }
            Shelf::Dir(dir) => {
                use std::io::Write;
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(append)
                    .truncate(!append)
                    .open(dir.join(format!("{name}.txt")))
                    .map_err(|e| io_error(&e))?;
                file.write_all(text.as_bytes()).map_err(|e| io_error(&e))
            }
        }
    }

    fn names(&self) -> Result<Vec<String>, ErrorData> {
        match &*self.shelf {
            Shelf::Memory(map) => Ok(lock(map)?.keys().cloned().collect()),
            Shelf::Dir(dir) => {
                let mut names: Vec<String> = std::fs::read_dir(dir)
                    .map_err(|e| io_error(&e))?
                    .filter_map(|entry| {
                        let name = entry.ok()?.file_name().into_string().ok()?;
                        let stem = name.strip_suffix(".txt")?;
                        valid_name(stem).then(|| stem.to_owned())
                    })
                    .collect();
                names.sort();
                Ok(names)
            }
        }
    }

    fn delete_all(&self) -> Result<usize, ErrorData> {
        match &*self.shelf {
            Shelf::Memory(map) => {
                let mut map = lock(map)?;
                let count = map.len();
                map.clear();
                Ok(count)
            }
            Shelf::Dir(dir) => {
                let names = self.names()?;
                for name in &names {
                    std::fs::remove_file(dir.join(format!("{name}.txt")))
                        .map_err(|e| io_error(&e))?;
                }
                Ok(names.len())
            }
        }
    }

    async fn call(
        &self,
        params: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let empty = Map::new();
        let args = params.arguments.as_ref().unwrap_or(&empty);
        if self.extra_tool.as_deref() == Some(params.name.as_ref()) {
            return Ok(success(params.name.to_string()));
        }
        match params.name.as_ref() {
            "read_note" => {
                let name = note_name(args)?;
                Ok(match self.read(name)? {
                    Some(text) => success(text),
                    None => failure(format!("no note named {name:?}")),
                })
            }
            "append_note" => {
                let (name, text) = (note_name(args)?, string(args, "text")?);
                self.write(name, text, true)?;
                Ok(success(format!("appended to {name:?}")))
            }
            "write_note" => {
                let (name, text) = (note_name(args)?, string(args, "text")?);
                self.write(name, text, false)?;
                Ok(success(format!("wrote {name:?}")))
            }
            "deploy" => {
                let (service, env) = (string(args, "service")?, string(args, "env")?);
                Ok(success(format!("deployed {service} to {env}")))
            }
            "delete_all_notes" => {
                let count = self.delete_all()?;
                Ok(success(format!("deleted {count} notes")))
            }
            "ask_name" => asks::ask_name(cx).await,
            "sign_in" => asks::sign_in(cx).await,
            "ask_name_later" => asks::ask_name_later(args, cx),
            WITHDRAWING => asks::ask_name_then_withdraw(args, cx).await,
            LONG_NAMED => {
                let mut names = self.names()?;
                names.sort();
                Ok(success(names.join("\n")))
            }
            wait::NAME => wait::wait_for_note(self, args, cx).await,
            other => Err(unknown("tool", other, "tools/list names the tools")),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> Result<std::sync::MutexGuard<'_, T>, ErrorData> {
    mutex
        .lock()
        .map_err(|_| ErrorData::internal_error("the notes lock is poisoned", None))
}

fn io_error(error: &std::io::Error) -> ErrorData {
    ErrorData::internal_error(format!("the notes directory: {error}"), None)
}

fn success(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text.into())])
}

fn failure(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text.into())])
}

/// A note name: 1 to 64 of `A-Z a-z 0-9 _ -` (it names a file).
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn string<'a>(args: &'a Map<String, Json>, key: &str) -> Result<&'a str, ErrorData> {
    argument(Some(args), key).ok_or_else(|| {
        ErrorData::invalid_params(format!("a string argument {key:?} is required"), None)
    })
}

fn note_name(args: &Map<String, Json>) -> Result<&str, ErrorData> {
    let name = string(args, "name")?;
    if valid_name(name) {
        Ok(name)
    } else {
        Err(ErrorData::invalid_params(
            "\"name\" must be 1 to 64 of A-Z, a-z, 0-9, _ and -",
            None,
        ))
    }
}

impl ServerHandler for Notes {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new(
            "askgate-example-upstream",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(
            "askgate example upstream: notes, a deploy and a question, one tool per risk level",
        )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut all = catalogue::tools();
        if let Some(name) = &self.extra_tool {
            all.push(Tool::new(
                name.clone(),
                "Answers its own name",
                Arc::new(Map::new()),
            ));
        }
        let (tools, next) = pages::page(self.page_size, all, request.as_ref())?;
        let mut listed = ListToolsResult::with_all_items(tools);
        listed.next_cursor = next;
        Ok(listed)
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The tool's name only: arguments are the person's data.
        eprintln!("askgate-example-upstream: call {}", params.name);
        if params.name == "ask_name" && asks::in_rounds(&cx) {
            return asks::ask_name_in_rounds(&params, &cx);
        }
        self.call(&params, &cx).await.map(Into::into)
    }

    async fn on_cancelled(
        &self,
        params: rmcp::model::CancelledNotificationParam,
        _cx: rmcp::service::NotificationContext<RoleServer>,
    ) {
        // The canceller's text (a client's, or a gateway's), written by
        // this test server only: a server for real use would not log it.
        eprintln!(
            "{CANCELLED_BECAUSE} {:?}",
            params.reason.as_deref().unwrap_or("")
        );
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let style = PromptArgument::new("style")
            .with_description("How to summarize: brief (default) or detailed")
            .with_required(false);
        let prompts = vec![
            Prompt::new(PROMPT, Some("Summarize the notes"), Some(vec![style])),
            Prompt::new(
                PROMPT_ASKING,
                Some("Greet the person by name (they are asked it)"),
                None,
            ),
        ];
        let (prompts, next) = pages::page(self.page_size, prompts, request.as_ref())?;
        let mut listed = ListPromptsResult::with_all_items(prompts);
        listed.next_cursor = next;
        Ok(listed)
    }

    async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if params.name == PROMPT_ASKING {
            let responses = params.input_responses.as_ref();
            return asks::say(&asks::GREETING, responses, &cx, |text| {
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]).into()
            })
            .await;
        }
        if params.name != PROMPT {
            let known = format!("the prompts are {PROMPT:?} and {PROMPT_ASKING:?}");
            return Err(unknown("prompt", &params.name, known));
        }
        let style = params
            .arguments
            .as_ref()
            .and_then(|a| a.get("style"))
            .and_then(Json::as_str)
            .unwrap_or("brief");
        let names = self.names()?.join(", ");
        Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            format!("Write a {style} summary of my notes: {names}."),
        )])
        .into())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = vec![
            Resource::new(RESOURCE, "index")
                .with_description("The names of the notes, one a line")
                .with_mime_type("text/plain"),
            Resource::new(RESOURCE_ASKING, "owner")
                .with_description("Whose notes these are (the person is asked their name)")
                .with_mime_type("text/plain"),
        ];
        let (resources, next) = pages::page(self.page_size, resources, request.as_ref())?;
        let mut listed = ListResourcesResult::with_all_items(resources);
        listed.next_cursor = next;
        Ok(listed)
    }

    async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if params.uri == RESOURCE_ASKING {
            let responses = params.input_responses.as_ref();
            return asks::say(&asks::OWNER, responses, &cx, |text| {
                let contents = ResourceContents::text(text, RESOURCE_ASKING);
                ReadResourceResult::new(vec![contents.with_mime_type("text/plain")]).into()
            })
            .await;
        }
        if params.uri != RESOURCE {
            return Err(ErrorData::resource_not_found(
                format!(
                    "unknown resource {:?}; the resources are {RESOURCE:?} and {RESOURCE_ASKING:?}",
                    params.uri
                ),
                None,
            ));
        }
        let index = self.names()?.join("\n");
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(index, RESOURCE).with_mime_type("text/plain"),
        ])
        .into())
    }
}

#[cfg(test)]
mod tests;
