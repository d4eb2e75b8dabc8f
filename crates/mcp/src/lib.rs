//! Recall's MCP server (docs/mcp.md): memory as tools an agent mounts with
//! one command. cognee-mcp's tools, with its names, parameters and result
//! texts — `remember`, `recall`, `forget`, `cognify_status`, `code_search`
//! — and what a Recall user also wants as tools: `search` with an explicit
//! search type, `list_datasets` and `session_feedback`. Every call acts for
//! one caller. A driving adapter: a tool parses its arguments into one of
//! the application layer's requests (`recall_api::Application`) and renders
//! the outcome as cognee-mcp does; it never names a storage adapter.

mod format;
mod tools;

use std::sync::Arc;

use recall_api::Application;
use recall_core::User;
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

/// How long `recall mcp` waits, once its client has gone, for the
/// background remembers it started.
pub const STDIO_DRAIN: std::time::Duration = std::time::Duration::from_secs(30);

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

/// One tool call in progress: the use cases and the caller they act for.
pub(crate) struct Acting<'a> {
    pub(crate) app: &'a Application,
    pub(crate) user: User,
    pub(crate) config: &'a McpConfig,
}

/// The server: the use cases and who the tools act for.
#[derive(Clone)]
pub struct RecallMcp {
    app: Application,
    caller: CallerSource,
    config: Arc<McpConfig>,
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
    pub fn new(app: Application, user: User, config: McpConfig) -> Self {
        Self { app, caller: CallerSource::Fixed(user), config: Arc::new(config) }
    }

    /// The streamable HTTP transport as a tower service, to mount at
    /// `/mcp` behind the server's authentication: each request acts for its
    /// [`HttpCaller`]; a request without one is refused.
    pub fn streamable_http(
        app: Application,
        config: McpConfig,
        options: HttpOptions,
    ) -> rmcp::transport::streamable_http_server::StreamableHttpService<
        RecallMcp,
        rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
    > {
        use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
        let server = Self { app, caller: CallerSource::PerRequest, config: Arc::new(config) };
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
        Ok(Acting { app: &self.app, user, config: &self.config })
    }

    /// Serves MCP over standard input and output until the client closes
    /// the stream, then waits (up to `drain`) for background remembers.
    /// Nothing else may write to standard output meanwhile (logs go to
    /// standard error).
    pub async fn serve_stdio(self, drain: std::time::Duration) -> recall_core::Result<()> {
        let app = self.app.clone();
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| recall_core::RecallError::invalid_input(format!("MCP initialisation failed: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| recall_core::RecallError::backend_msg(format!("the MCP server stopped: {e}")))?;
        app.background().drain(drain).await;
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
