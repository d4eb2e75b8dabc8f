//! Composition root: reads the settings, builds the adapters they name, and
//! wires them into an [`Engine`]. The only crate that names concrete adapters.

pub mod eval;
#[cfg(feature = "server")]
pub mod serve;
pub mod settings;

use std::sync::Arc;

use recall_core::ports::{Embedder, GraphStore, LlmClient, RelationalPorts, VectorStore};
use recall_core::{RecallError, Result, User};
use recall_engine::{Engine, EngineBuilder, EngineConfig};
use recall_memory::HashingEmbedder;
use recall_openai::{OpenAiChat, OpenAiConfig, OpenAiEmbedder};
use recall_sql::{SqlDatabase, SqlGraphStore, SqlRelationalStore, SqlSessionStore};

pub use settings::{EmbeddingChoice, Overrides, Settings};

const OPENAI_ENDPOINT: &str = "https://api.openai.com/v1";
const OFFLINE_DIMENSIONS: usize = 384;

/// How the engine may touch storage while it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the database and directories if missing (remember).
    Create,
    /// Fail with `RecallPreconditionError` instead of creating anything (recall).
    ExistingOnly,
}

/// The active adapters, for logs and `recall doctor`.
#[derive(Debug, Clone)]
pub struct ActiveAdapters {
    pub relational: String,
    pub graph: String,
    pub vector: String,
    pub embedder: String,
    pub llm: Option<String>,
}

/// Builds the embedder the settings select.
pub fn build_embedder(settings: &Settings) -> Result<Arc<dyn Embedder>> {
    match settings.embedding_choice()? {
        EmbeddingChoice::OpenAiCompatible => {
            let endpoint = non_empty(&settings.embedding_endpoint).unwrap_or(OPENAI_ENDPOINT);
            let model = non_empty(&settings.embedding_model).unwrap_or("openai/text-embedding-3-large");
            let explicit = settings.embedding_dimensions > 0;
            let dimensions = if explicit { settings.embedding_dimensions } else { default_dimensions(model)? };
            let key = settings.embedding_key();
            let config = OpenAiConfig::new(endpoint, model, (!key.is_empty()).then_some(key));
            Ok(Arc::new(OpenAiEmbedder::new(config, dimensions, explicit, settings.embedding_batch_size)?))
        }
        EmbeddingChoice::Hashing => hashing_embedder(settings),
        EmbeddingChoice::Local => local_embedder(settings),
    }
}

/// Word hashing, EMBEDDING_DIMENSIONS wide (384 when unset).
fn hashing_embedder(settings: &Settings) -> Result<Arc<dyn Embedder>> {
    let dims = if settings.embedding_dimensions > 0 { settings.embedding_dimensions } else { OFFLINE_DIMENSIONS };
    Ok(Arc::new(HashingEmbedder::new(dims)?))
}

#[cfg(feature = "local-embed")]
fn local_embedder(settings: &Settings) -> Result<Arc<dyn Embedder>> {
    let width = recall_local_embed::DIMENSIONS;
    if settings.embedding_dimensions > 0 && settings.embedding_dimensions != width {
        return Err(RecallError::invalid_input(format!(
            "EMBEDDING_DIMENSIONS is {} but the local embedding model produces {width}: unset it, or choose another EMBEDDING_PROVIDER",
            settings.embedding_dimensions
        )));
    }
    Ok(Arc::new(recall_local_embed::LocalEmbedder::new()?))
}

/// A build without the `local-embed` feature falls back to hashing when the
/// provider was left to the default, and says so when it was asked for.
#[cfg(not(feature = "local-embed"))]
fn local_embedder(settings: &Settings) -> Result<Arc<dyn Embedder>> {
    if settings.embedding_provider.trim().eq_ignore_ascii_case("local") {
        return Err(RecallError::invalid_input(
            "EMBEDDING_PROVIDER=local, but this build has no local embedding model (the `local-embed` feature): use hashing or openai_compatible",
        ));
    }
    hashing_embedder(settings)
}

fn non_empty(s: &str) -> Option<&str> {
    let t = s.trim();
    (!t.is_empty()).then_some(t)
}

/// Widths of well-known models, so EMBEDDING_DIMENSIONS can be left unset.
fn default_dimensions(model: &str) -> Result<usize> {
    let bare = model.rsplit('/').next().unwrap_or(model);
    match bare {
        "text-embedding-3-large" => Ok(3072),
        "text-embedding-3-small" | "text-embedding-ada-002" => Ok(1536),
        "nomic-embed-text" => Ok(768),
        "mxbai-embed-large" => Ok(1024),
        "all-minilm" | "all-MiniLM-L6-v2" => Ok(384),
        _ => Err(RecallError::invalid_input(format!(
            "EMBEDDING_DIMENSIONS is not set and the width of embedding model '{model}' is not known: set EMBEDDING_DIMENSIONS"
        ))),
    }
}

/// Builds the chat model when one is usable.
pub fn build_llm(settings: &Settings) -> Result<Option<Arc<dyn LlmClient>>> {
    if !settings.llm_available() {
        return Ok(None);
    }
    let endpoint = non_empty(&settings.llm_endpoint).unwrap_or(OPENAI_ENDPOINT);
    let config = OpenAiConfig::new(endpoint, settings.llm_model.trim(), Some(settings.llm_api_key.trim().to_string()));
    Ok(Some(Arc::new(OpenAiChat::new(config)?)))
}

/// The databases a command opened, when the process closes them at its end
/// ([`close_at_exit`]); tests that build many engines leave this off.
static TO_CLOSE: std::sync::Mutex<Option<Vec<SqlDatabase>>> = std::sync::Mutex::new(None);

/// From now on, the databases every [`build_engine`] opens are kept for
/// [`close_databases`]: the `recall` binary's commands and server.
pub fn close_at_exit() {
    if let Ok(mut kept) = TO_CLOSE.lock() {
        kept.get_or_insert_with(Vec::new);
    }
}

/// Closes the databases kept since [`close_at_exit`] (after a command, and
/// after the server's drain), so SQLite checkpoints its WAL and removes the
/// `-wal` and `-shm` files instead of leaving them to the next process.
pub async fn close_databases() {
    let kept = TO_CLOSE.lock().ok().and_then(|mut kept| kept.as_mut().map(std::mem::take)).unwrap_or_default();
    for db in kept {
        if let Err(e) = db.close().await {
            tracing::warn!(error = %e, "a database did not close cleanly");
        }
    }
}

/// Builds the engine the settings describe.
pub async fn build_engine(settings: &Settings, mode: OpenMode) -> Result<(Engine, ActiveAdapters)> {
    let url = settings.database_url();
    let db = match mode {
        OpenMode::Create => SqlDatabase::connect(&url).await?,
        OpenMode::ExistingOnly => SqlDatabase::connect_existing(&url).await?.ok_or(RecallError::RecallPrecondition)?,
    };
    // Per-request writes (history, sessions) go to their own SQLite file.
    let activity = SqlDatabase::connect_activity(&url).await?.unwrap_or_else(|| db.clone());
    if let Ok(mut kept) = TO_CLOSE.lock() {
        if let Some(kept) = kept.as_mut() {
            kept.extend([db.clone(), activity.clone()]);
        }
    }
    let mut relational = RelationalPorts::from_store(Arc::new(SqlRelationalStore::new(db.clone())));
    relational.history = Arc::new(SqlRelationalStore::new(activity.clone()));
    let graph = build_graph_store(settings, &db).await?;
    let vector_uri = settings.vector_uri();
    let vectors = build_vector_store(&vector_uri, settings).await?;
    let embedder = build_embedder(settings)?;
    let llm = build_llm(settings)?;
    let active = ActiveAdapters {
        relational: format!("{:?} ({})", db.backend(), redact_url(&url)),
        graph: match settings.graph_url.trim() {
            "" | "sql" => format!("{} (tables in the relational database)", graph.name()),
            url => format!("{} ({url})", graph.name()),
        },
        vector: format!("{} ({vector_uri})", vectors.name()),
        embedder: format!("{} ({} dimensions)", embedder.model(), embedder.dimensions()),
        llm: llm.as_ref().map(|l| l.model()),
    };
    let raw_dir = settings.data_dir.join("raw");
    let mut builder = EngineBuilder::new(relational, graph, vectors, embedder);
    if let Some(config) = settings.session_config()? {
        // Session memory lives beside the history.
        let store = Arc::new(SqlSessionStore::new(activity.clone()));
        builder = builder.sessions(Arc::new(recall_sessions::Sessions::new(store, config).with_llm(llm.clone())));
    }
    let tools = settings.tool_settings()?;
    let engine = builder
        .llm(llm)
        .config(EngineConfig {
            chunk_size: settings.chunk_size,
            raw_data_dir: Some(raw_dir),
            chunks_per_batch: settings.chunks_per_batch,
            extraction_concurrency: settings.extraction_concurrency,
            triplet_embedding: settings.triplet_embedding,
            allow_cypher_query: settings.allow_cypher_query,
            warmup_shortcircuit: settings.warmup_shortcircuit,
            warmup_threshold: settings.warmup_threshold,
            warmup_cache_ttl: std::time::Duration::try_from_secs_f64(settings.warmup_cache_ttl).map_err(|_| {
                RecallError::invalid_input("recall_warmup_cache_ttl must be a non-negative number of seconds")
            })?,
            log_search_history: settings.log_search_history,
            dataset_routing: settings.dataset_routing()?,
            skill_gate_enabled: settings.skill_gate_enabled,
            access_control: settings.enable_backend_access_control,
            prompt_dirs: settings.prompt_dirs(),
            improve_feedback_alpha: settings.improve_feedback_alpha,
            tools: tools.clone(),
            index_refresh_chunks: recall_engine::INDEX_REFRESH_CHUNKS,
        })
        .sql_connector(Arc::new(recall_sql::SqlToolConnector { statement_timeout: tools.statement_timeout }))
        .build()?;
    tracing::info!(relational = %active.relational, graph = %active.graph, vector = %active.vector,
        embedder = %active.embedder, llm = ?active.llm, "adapters active");
    Ok((engine, active))
}

pub use recall_accounts::validate_email;

/// The accounts service (API keys, passwords) on the engine's relational
/// store, with the settings' key derivation.
pub fn build_accounts(engine: &Engine, settings: &Settings) -> Result<recall_accounts::Accounts> {
    Ok(recall_accounts::Accounts::new(engine.relational().clone(), settings.credentials()?))
}

/// The application layer for the settings: the engine and the accounts.
pub fn application(engine: Engine, settings: &Settings) -> Result<recall_api::Application> {
    let accounts = build_accounts(&engine, settings)?;
    Ok(recall_api::Application::new(engine, accounts))
}

/// The user a command acts for: `email`, else the configured default user
/// (`DEFAULT_USER_EMAIL`). `create` makes the user on first use (writes);
/// otherwise a user that does not exist yet is `None` (it can own nothing).
/// The only place that turns the configured default into a caller.
pub async fn caller(engine: &Engine, settings: &Settings, email: Option<&str>, create: bool) -> Result<Option<User>> {
    let email = email.map(str::trim).filter(|e| !e.is_empty()).unwrap_or(settings.default_user_email.trim());
    validate_email(email)?;
    let users = &engine.relational().users;
    if create {
        users.ensure_user(email).await.map(Some)
    } else {
        users.find_user(email).await
    }
}

/// The graph store `graph_url` names: `sql` (tables in the relational
/// database) or `bolt://` / `neo4j://` (Neo4j). A configured backend that
/// fails is an error, never a fallback to another one.
async fn build_graph_store(settings: &Settings, db: &SqlDatabase) -> Result<Arc<dyn GraphStore>> {
    let url = settings.graph_url.trim();
    if url.is_empty() || url == "sql" {
        return Ok(Arc::new(SqlGraphStore::new(db.clone())));
    }
    let scheme = url.split("://").next().unwrap_or_default();
    match scheme {
        "bolt" | "bolt+s" | "bolt+ssc" | "neo4j" | "neo4j+s" | "neo4j+ssc" => build_neo4j(settings, url).await,
        _ => Err(RecallError::invalid_input(format!(
            "Unsupported graph_url '{url}': use 'sql', bolt://host:port or neo4j://host:port"
        ))),
    }
}

#[cfg(feature = "neo4j")]
async fn build_neo4j(settings: &Settings, url: &str) -> Result<Arc<dyn GraphStore>> {
    let mut config = recall_neo4j::Neo4jConfig::new(url, settings.graph_user.trim(), settings.graph_password.expose());
    config.schema = match settings.graph_schema.trim() {
        "" | "neo4j" => recall_neo4j::SchemaMode::Neo4j,
        "falkordb" => recall_neo4j::SchemaMode::FalkorDb,
        "none" => recall_neo4j::SchemaMode::None,
        other => {
            return Err(RecallError::invalid_input(format!(
                "unknown graph_schema '{other}': use neo4j, falkordb or none"
            )))
        }
    };
    config.max_batch_bytes = settings.graph_max_batch_bytes;
    let store = recall_neo4j::Neo4jGraphStore::connect(&config)
        .await
        .map_err(|e| RecallError::backend_msg(format!("cannot use the Neo4j graph store at {url}: {e}")))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "neo4j"))]
async fn build_neo4j(_settings: &Settings, url: &str) -> Result<Arc<dyn GraphStore>> {
    Err(RecallError::invalid_input(format!("graph_url '{url}' needs the `neo4j` feature, which this build lacks")))
}

#[cfg(feature = "lancedb")]
async fn build_vector_store(uri: &str, settings: &Settings) -> Result<Arc<dyn VectorStore>> {
    let caches = recall_lancedb::LanceCaches::of_total(settings.lance_cache_bytes());
    let store = recall_lancedb::LanceVectorStore::connect_with(uri, Vec::new(), caches).await?;
    let threshold = settings.vector_index_threshold;
    Ok(Arc::new(
        store
            .with_index_threshold((threshold > 0).then_some(threshold))
            .with_cache_budget(settings.vector_cache_bytes())
            .with_partition_rows((settings.vector_partition_rows > 0).then_some(settings.vector_partition_rows)),
    ))
}

#[cfg(not(feature = "lancedb"))]
async fn build_vector_store(uri: &str, _settings: &Settings) -> Result<Arc<dyn VectorStore>> {
    Err(RecallError::invalid_input(format!("vector_url '{uri}' needs the `lancedb` feature, which this build lacks")))
}

/// Hides a password in a database URL.
fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.find(':') {
                Some(colon) => format!("{}{}:***{}", &url[..scheme + 3], &creds[..colon], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// The MCP server's settings (`recall mcp` and `/mcp`).
#[cfg(feature = "mcp")]
pub fn mcp_config(settings: &Settings) -> Result<recall_mcp::McpConfig> {
    Ok(recall_mcp::McpConfig {
        agent_scoped: settings.cognee_mcp_agent_scoped,
        recall_system_prompt: settings.mcp_recall_system_prompt()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(redact_url("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact_url("sqlite://x.db"), "sqlite://x.db");
    }

    #[test]
    fn emails_are_checked() {
        for ok in ["a@b", "default_user@example.com", "x.y+z@sub.example.org"] {
            assert!(validate_email(ok).is_ok(), "{ok}");
        }
        for bad in ["", "no-at", "@b", "a@", "a@b@c", "a b@c", "a\n@c"] {
            let err = validate_email(bad).unwrap_err();
            assert_eq!(err.name(), "InvalidInputError", "{bad}");
            assert!(err.to_string().starts_with("Invalid user email"), "{bad}");
        }
        assert!(validate_email(&format!("{}@b", "a".repeat(260))).is_err());
    }

    #[test]
    fn known_model_widths() {
        assert_eq!(default_dimensions("openai/text-embedding-3-large").ok(), Some(3072));
        assert!(default_dimensions("mystery").is_err());
    }
}
