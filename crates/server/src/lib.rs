//! Recall's HTTP server: Cognee's REST API over axum (docs/http.md), so
//! Cognee's own clients — its Python SDK in remote mode, its UI — can use
//! Recall unchanged. A driving adapter: its routes parse a request into
//! one of the application layer's (`recall_api::Application`), call it and
//! render the outcome; it names no storage backend.
//!
//! ```no_run
//! # async fn run(app: recall_api::Application, default_user: recall_core::User) -> std::io::Result<()> {
//! // The front end decides who unauthenticated requests act for.
//! let state = recall_server::AppState::prepare(app, recall_server::ServerConfig::new(), default_user)
//!     .await
//!     .map_err(std::io::Error::other)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8000").await?;
//! recall_server::serve(listener, state, recall_server::shutdown_signal()).await
//! # }
//! ```

mod auth;
mod body;
mod error;
mod forms;
mod routes;
mod sse;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use axum::Router;
use recall_api::Application;
use recall_core::{RecallError, User};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

pub use auth::{AuthPosture, TokenConfig};
pub use routes::visualize::graph_page;
pub use sse::wants_event_stream;

/// How the server runs (docs/http.md, "Configuration").
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Whether requests must authenticate.
    pub posture: AuthPosture,
    pub tokens: TokenConfig,
    /// `DEFAULT_USER_PASSWORD`: makes the default user loginable (set once,
    /// never overwritten).
    pub default_user_password: Option<String>,
    /// Origins browsers may call from (`CORS_ALLOWED_ORIGINS`, else `UI_APP_URL`).
    pub cors_origins: Vec<String>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// The longest a request may run (a blocking remember must answer
    /// within the SDK's 600 s).
    pub request_timeout: Duration,
    /// `LLM_ANSWER_STREAMING`: stream answer tokens as `delta` frames.
    pub answer_streaming: bool,
    /// How long shutdown waits for background work.
    pub drain_timeout: Duration,
    /// Reported by `/health`.
    pub version: String,
    /// The MCP tools at `/mcp` (docs/mcp.md).
    pub mcp: recall_mcp::McpConfig,
    /// The `Host` values `/mcp` accepts (DNS-rebinding protection); `None`
    /// accepts any (every request is authenticated anyway).
    pub mcp_allowed_hosts: Option<Vec<String>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerConfig {
    /// Cognee's defaults: authentication required, a random token secret,
    /// CORS for `http://localhost:3000`.
    pub fn new() -> Self {
        Self {
            posture: AuthPosture::resolve(None, None),
            tokens: TokenConfig {
                secret: TokenConfig::random_secret(),
                lifetime: Duration::from_secs(3600),
                cookie_name: "auth_token".into(),
                cookie_domain: None,
            },
            default_user_password: None,
            cors_origins: vec!["http://localhost:3000".into()],
            body_limit: 100 * 1024 * 1024,
            request_timeout: Duration::from_secs(590),
            answer_streaming: false,
            drain_timeout: Duration::from_secs(8),
            version: env!("CARGO_PKG_VERSION").to_string(),
            mcp: recall_mcp::McpConfig::default(),
            mcp_allowed_hosts: Some(LOOPBACK_HOSTS.iter().map(|h| h.to_string()).collect()),
        }
    }
}

/// The hosts `/mcp` accepts by default: a server on a loopback address.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    app: Application,
    config: ServerConfig,
    default_user: User,
    started: Instant,
    /// Cancelled at shutdown: open MCP streams end.
    shutdown: tokio_util::sync::CancellationToken,
}

impl AppState {
    /// The state for serving `engine`. `default_user` (resolved by the
    /// composition crate) is who requests act for when authentication is
    /// off; it gets `DEFAULT_USER_PASSWORD` when it has no password yet.
    pub async fn prepare(app: Application, config: ServerConfig, default_user: User) -> Result<Self, RecallError> {
        if let Some(password) = config.default_user_password.as_deref().filter(|p| !p.is_empty()) {
            if app.password_stamp(&default_user).await?.is_none() {
                app.set_password(&default_user, password).await?;
            }
        }
        if let Some(warning) = &config.posture.warning {
            tracing::warn!("{warning}");
        }
        Ok(Self {
            inner: Arc::new(Inner {
                app,
                config,
                default_user,
                started: Instant::now(),
                shutdown: tokio_util::sync::CancellationToken::new(),
            }),
        })
    }

    /// The use cases.
    pub fn app(&self) -> &Application {
        &self.inner.app
    }

    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    pub fn default_user(&self) -> &User {
        &self.inner.default_user
    }

    pub fn uptime(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Runs work that outlives its request (a background cognify) for
    /// `user` on `dataset`; shutdown waits for it.
    pub fn spawn_background(
        &self,
        user: &User,
        dataset: &str,
        what: &'static str,
        work: impl Future<Output = Result<(), RecallError>> + Send + 'static,
    ) {
        self.inner.app.background().spawn(user, dataset, what, work);
    }

    /// Waits (up to the drain timeout) for background work to finish.
    pub async fn drain(&self) {
        self.inner.app.background().drain(self.config().drain_timeout).await;
    }
}

/// The OpenAPI document's frame; the paths come from the handlers.
#[derive(OpenApi)]
#[openapi(
    info(title = "Recall", description = "Cognee's REST API, served by Recall (docs/http.md)."),
    modifiers(&Security),
    security(("ApiKeyAuth" = []), ("BearerAuth" = [])),
    tags(
        (name = "recall", description = "Ask memory a question"),
        (name = "search", description = "The legacy search"),
        (name = "remember", description = "Store and build memory; forget it"),
        (name = "datasets", description = "Datasets, their data, graph and status"),
        (name = "permissions", description = "Dataset grants"),
        (name = "auth", description = "Login, API keys, users"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
struct ApiDoc;

/// The two ways to authenticate: `X-Api-Key`, or a bearer token.
struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components
            .add_security_scheme("ApiKeyAuth", SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Api-Key"))));
        components.add_security_scheme(
            "BearerAuth",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
    }
}

/// The whole application: Cognee's routes, with request ids, tracing,
/// CORS, a body limit and a timeout.
pub fn router(state: AppState) -> Router {
    let config = state.config();
    let request_id = HeaderName::from_static("x-request-id");
    let origins: Vec<HeaderValue> = config.cors_origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect();
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_credentials(true)
        .allow_headers(AllowHeaders::mirror_request())
        .allow_methods([Method::OPTIONS, Method::GET, Method::PUT, Method::POST, Method::DELETE, Method::PATCH]);
    let trace = TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
        let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default();
        tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
    });
    let (routes, api) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::outside_api())
        .nest("/api/v1", routes::api())
        .split_for_parts();
    let mcp = recall_mcp::RecallMcp::streamable_http(
        state.app().clone(),
        config.mcp.clone(),
        recall_mcp::HttpOptions {
            allowed_hosts: config.mcp_allowed_hosts.clone(),
            shutdown: state.inner.shutdown.child_token(),
        },
    );
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(state.clone(), auth::mcp_caller));
    routes
        .merge(mcp)
        .merge(SwaggerUi::new("/docs").url("/openapi.json", api))
        .fallback(routes::not_found)
        .method_not_allowed_fallback(|| async {
            error::ApiError::detail(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed")
        })
        .layer(DefaultBodyLimit::max(config.body_limit))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, config.request_timeout))
        .layer(cors)
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(trace)
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .with_state(state)
}

/// Serves until `shutdown` resolves: then stops accepting, lets in-flight
/// requests finish, and waits for background work (up to the drain timeout).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state.clone());
    let streams = state.inner.shutdown.clone();
    let shutdown = async move {
        shutdown.await;
        // Open MCP streams would hold the graceful shutdown forever.
        streams.cancel();
    };
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await?;
    state.drain().await;
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
