//! Recall's MCP server (docs/mcp.md): memory as tools an agent mounts with
//! one command. cognee-mcp's tools, with its names, parameters and result
//! texts — `remember`, `recall`, `forget`, `cognify_status`, `code_search`
//! — and what a Recall user also wants as tools: `search` with an explicit
//! search type, `list_datasets` and `session_feedback`. Every call acts for
//! one caller. A driving adapter: it depends on the engine, never on a
//! storage adapter.

mod format;
mod tools;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use recall_core::User;
use recall_engine::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};

pub use format::agent_dataset;

/// The dataset `remember` and `cognify_status` use when the agent names none
/// and agent scoping is off (or the client has no name).
pub const DEFAULT_DATASET: &str = "main_dataset";
/// The background errors kept per dataset (newest first in `cognify_status`).
const BACKGROUND_ERRORS_KEPT: usize = 50;

/// Settings of the MCP server, from the environment of the composition crate.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// `remember` and `cognify_status` default to `<client>_memory`
    /// (`COGNEE_MCP_AGENT_SCOPED`, default true).
    pub agent_scoped: bool,
    /// The system prompt `recall` uses when the agent passes none
    /// (`COGNEE_MCP_RECALL_SYSTEM_PROMPT`, or the file named by
    /// `COGNEE_MCP_RECALL_SYSTEM_PROMPT_FILE`).
    pub recall_system_prompt: Option<String>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self { agent_scoped: true, recall_system_prompt: None }
    }
}

/// What background remembers left: how many run per dataset, and their errors.
#[derive(Default)]
struct Background {
    running: Mutex<HashMap<String, usize>>,
    errors: Mutex<HashMap<String, VecDeque<(String, String)>>>,
}

impl Background {
    fn start(&self, dataset: &str) {
        if let Ok(mut running) = self.running.lock() {
            *running.entry(dataset.to_string()).or_default() += 1;
        }
    }

    fn finish(&self, dataset: &str, error: Option<String>) {
        if let Ok(mut running) = self.running.lock() {
            if let Some(n) = running.get_mut(dataset) {
                *n = n.saturating_sub(1);
            }
        }
        if let (Some(error), Ok(mut errors)) = (error, self.errors.lock()) {
            let ring = errors.entry(dataset.to_string()).or_default();
            ring.push_front((chrono::Utc::now().to_rfc3339(), error));
            ring.truncate(BACKGROUND_ERRORS_KEPT);
        }
    }

    /// Whether a background remember runs for one of `datasets` (any, when empty).
    fn running_for(&self, datasets: &[String]) -> bool {
        self.running.lock().is_ok_and(|running| {
            running.iter().any(|(d, n)| *n > 0 && (datasets.is_empty() || datasets.iter().any(|x| x == d)))
        })
    }

    fn errors_of(&self, dataset: &str) -> Vec<(String, String)> {
        self.errors
            .lock()
            .map(|e| e.get(dataset).map(|r| r.iter().cloned().collect()).unwrap_or_default())
            .unwrap_or_default()
    }
}

/// The server: the engine, the caller every tool acts for, and what
/// background remembers left.
#[derive(Clone)]
pub struct RecallMcp {
    engine: Engine,
    user: User,
    config: Arc<McpConfig>,
    background: Arc<Background>,
}

impl RecallMcp {
    pub fn new(engine: Engine, user: User, config: McpConfig) -> Self {
        Self { engine, user, config: Arc::new(config), background: Arc::default() }
    }

    /// Serves MCP over standard input and output until the client closes
    /// the stream. Nothing else may write to standard output meanwhile
    /// (logs go to standard error).
    pub async fn serve_stdio(self) -> recall_core::Result<()> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| recall_core::RecallError::invalid_input(format!("MCP initialisation failed: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| recall_core::RecallError::backend_msg(format!("the MCP server stopped: {e}")))?;
        Ok(())
    }
}

impl ServerHandler for RecallMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("Recall", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Long-term memory. `remember` stores text or a file; `recall` answers a question from memory \
                 (it picks the search type); `search` runs one search type; `forget` deletes; \
                 `cognify_status` follows a background remember; `list_datasets` shows what you can read.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        tools::call(self, request, context).await.map(CallToolResponse::from)
    }
}
