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
pub(crate) struct Background {
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

/// Who the tools act for.
#[derive(Clone)]
enum CallerSource {
    /// One user for the whole connection (stdio).
    Fixed(User),
    /// The user the HTTP server authenticated for each request, as an
    /// [`HttpCaller`] in the request's extensions.
    PerRequest,
}

/// The authenticated user of an MCP request over HTTP: the server's
/// authentication puts it into the request's extensions before the request
/// reaches [`RecallMcp::streamable_http`]'s service.
#[derive(Debug, Clone)]
pub struct HttpCaller(pub User);

/// One tool call in progress: the engine and the caller it acts for.
pub(crate) struct Acting<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) user: User,
    pub(crate) config: &'a McpConfig,
    pub(crate) background: &'a Arc<Background>,
}

/// The server: the engine, who the tools act for, and what background
/// remembers left.
#[derive(Clone)]
pub struct RecallMcp {
    engine: Engine,
    caller: CallerSource,
    config: Arc<McpConfig>,
    background: Arc<Background>,
}

/// How the HTTP transport checks the `Host` header (DNS-rebinding
/// protection): `None` accepts any host (a server bound to a public
/// address, where every request is authenticated anyway).
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub allowed_hosts: Option<Vec<String>>,
    /// Cancelled when the server shuts down: open MCP streams end.
    pub shutdown: tokio_util::sync::CancellationToken,
}

impl RecallMcp {
    /// A server whose every call acts for `user` (stdio).
    pub fn new(engine: Engine, user: User, config: McpConfig) -> Self {
        Self { engine, caller: CallerSource::Fixed(user), config: Arc::new(config), background: Arc::default() }
    }

    /// The streamable HTTP transport as a tower service, to mount at
    /// `/mcp` behind the server's authentication: each request acts for its
    /// [`HttpCaller`]; a request without one is refused.
    pub fn streamable_http(
        engine: Engine,
        config: McpConfig,
        options: HttpOptions,
    ) -> rmcp::transport::streamable_http_server::StreamableHttpService<
        RecallMcp,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    > {
        use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
        let server =
            Self { engine, caller: CallerSource::PerRequest, config: Arc::new(config), background: Arc::default() };
        let mut http = StreamableHttpServerConfig::default().with_cancellation_token(options.shutdown);
        http = match options.allowed_hosts {
            Some(hosts) => http.with_allowed_hosts(hosts),
            None => http.disable_allowed_hosts(),
        };
        rmcp::transport::streamable_http_server::StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::default(),
            http,
        )
    }

    /// The caller of one request.
    fn acting(&self, context: &RequestContext<RoleServer>) -> Result<Acting<'_>, McpError> {
        let user = match &self.caller {
            CallerSource::Fixed(user) => user.clone(),
            CallerSource::PerRequest => context
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<HttpCaller>())
                .map(|c| c.0.clone())
                .ok_or_else(|| McpError::invalid_request("this MCP request carries no authenticated user", None))?,
        };
        Ok(Acting { engine: &self.engine, user, config: &self.config, background: &self.background })
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
        let acting = self.acting(&context)?;
        tools::call(&acting, request, context).await.map(CallToolResponse::from)
    }
}
