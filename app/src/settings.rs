//! Configuration: config/default.toml (compiled in), an optional file, Cognee's
//! variable names, then RECALL_* variables, in rising precedence.

use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use recall_core::{RecallError, Result, Secret};
use serde::{Deserialize, Serialize};

const DEFAULTS: &str = include_str!("../../config/default.toml");

/// Cognee's variable names that we honour, as they map onto our keys.
const COGNEE_VARS: &[&str] = &[
    "LLM_API_KEY",
    "LLM_ENDPOINT",
    "LLM_MODEL",
    "LLM_PROVIDER",
    "EMBEDDING_API_KEY",
    "EMBEDDING_ENDPOINT",
    "EMBEDDING_MODEL",
    "EMBEDDING_DIMENSIONS",
    "EMBEDDING_PROVIDER",
    "DEFAULT_USER_EMAIL",
    "TRIPLET_EMBEDDING",
    "ALLOW_CYPHER_QUERY",
    "ENABLE_BACKEND_ACCESS_CONTROL",
    "DATASET_ROUTING_TOP_K",
    "DATASET_ROUTING_MAX_DISTANCE",
    "DATASET_ROUTING_TIE_MARGIN",
    "SKILL_GATE_ENABLED",
    "API_KEY_HASH_SALT",
    "API_KEY_HASH_ITERATIONS",
    "MAX_USER_API_KEYS",
    "REQUIRE_AUTHENTICATION",
    "DEFAULT_USER_PASSWORD",
    "FASTAPI_USERS_JWT_SECRET",
    "JWT_LIFETIME_SECONDS",
    "AUTH_TOKEN_COOKIE_NAME",
    "AUTH_TOKEN_COOKIE_DOMAIN",
    "CORS_ALLOWED_ORIGINS",
    "UI_APP_URL",
    "LLM_ANSWER_STREAMING",
    "HTTP_API_HOST",
    "HTTP_API_PORT",
    "CACHING",
    "SESSION_TTL_SECONDS",
    "CACHE_PURGE_INTERVAL_SECONDS",
    "SESSION_HISTORY_LAST_N",
    "IMPROVE_FEEDBACK_ALPHA",
    "AUTO_FEEDBACK",
    "SESSION_SEARCH_MODE",
    "TOOL_CALLS_ENABLED",
    "TOOL_SQL_CONNECTIONS",
    "TEXT_TO_SQL_MAX_ROWS",
    "TEXT_TO_SQL_MAX_ATTEMPTS",
    "TEXT_TO_SQL_STATEMENT_TIMEOUT_MS",
    "TEXT_TO_SQL_MAX_SCHEMA_TABLES",
    "COGNEE_MCP_AGENT_SCOPED",
    "COGNEE_MCP_RECALL_SYSTEM_PROMPT",
    "COGNEE_MCP_RECALL_SYSTEM_PROMPT_FILE",
    "MCP_ALLOWED_HOSTS",
];

/// Cognee's spelling of settings whose Recall name differs.
const COGNEE_ALIASES: &[(&str, &str)] = &[("COGNEE_LOG_SEARCH_HISTORY", "log_search_history")];

/// Which embedder turns texts into vectors (EMBEDDING_PROVIDER).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbeddingChoice {
    /// The sentence-transformer compiled into the binary (the zero-key default).
    Local,
    /// An OpenAI-compatible embeddings endpoint (OpenAI, Ollama, vLLM, LiteLLM).
    OpenAiCompatible,
    /// Feature hashing of words: no model, matches wording only (tests, minimal builds).
    Hashing,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub data_dir: PathBuf,
    pub default_user_email: String,
    pub chunk_size: usize,
    pub chunks_per_batch: usize,
    pub extraction_concurrency: usize,
    pub triplet_embedding: bool,
    /// CYPHER and NATURAL_LANGUAGE: true, 1 or yes (any case) enables them.
    #[serde(deserialize_with = "flag")]
    pub allow_cypher_query: bool,
    /// RECALL_WARMUP_SHORTCIRCUIT: the "still warming up" marker instead of an empty search.
    #[serde(deserialize_with = "flag")]
    pub warmup_shortcircuit: bool,
    /// RECALL_WARMUP_THRESHOLD (≥ 1).
    pub warmup_threshold: i64,
    /// RECALL_WARMUP_CACHE_TTL, seconds a warm verdict is cached.
    pub warmup_cache_ttl: f64,
    /// RECALL_LOG_SEARCH_HISTORY (or COGNEE_LOG_SEARCH_HISTORY): record searches.
    #[serde(deserialize_with = "flag")]
    pub log_search_history: bool,
    /// ENABLE_BACKEND_ACCESS_CONTROL: per-dataset storage; automatic dataset routing needs it.
    #[serde(deserialize_with = "flag")]
    pub enable_backend_access_control: bool,
    /// DATASET_ROUTING_TOP_K (≥ 1): the closest datasets an unscoped search keeps.
    pub dataset_routing_top_k: usize,
    /// DATASET_ROUTING_MAX_DISTANCE: the cutoff, a raw cosine distance (inclusive).
    pub dataset_routing_max_distance: f64,
    /// DATASET_ROUTING_TIE_MARGIN: datasets this close to the last kept one are kept too.
    pub dataset_routing_tie_margin: f64,
    /// SKILL_GATE_ENABLED: on unless false, 0 or no (any case).
    #[serde(deserialize_with = "on_unless_off")]
    pub skill_gate_enabled: bool,
    /// API_KEY_HASH_SALT: the salt of the keys' PBKDF2 derivation (docs/auth.md).
    pub api_key_hash_salt: Secret,
    /// API_KEY_HASH_ITERATIONS (≥ 1).
    pub api_key_hash_iterations: u32,
    /// MAX_USER_API_KEYS: keys one user may hold.
    pub max_user_api_keys: usize,
    pub db_url: Secret,
    pub graph_url: String,
    pub graph_user: String,
    pub graph_password: Secret,
    pub graph_schema: String,
    pub graph_max_batch_bytes: usize,
    pub vector_url: String,
    /// RECALL_PROMPT_DIRS: directories (separated like PATH) a request's
    /// `system_prompt_path` may name files in; empty: built-in prompts only.
    pub prompt_dirs: String,
    /// Rows from which a LanceDB collection gets an approximate vector index (0: never).
    pub vector_index_threshold: usize,
    /// MiB the LanceDB search cache may hold (0: off; unset: see
    /// [`Settings::vector_cache_bytes`]).
    pub vector_cache_mb: Option<usize>,
    /// Rows of one dataset from which the search cache probes partitions
    /// instead of scanning every row (0: never; every search exact).
    pub vector_partition_rows: usize,
    /// MiB Lance's own caches (index parts, manifests, file metadata) may hold.
    pub lance_cache_mb: usize,
    pub embedding_provider: String,
    pub embedding_model: String,
    pub embedding_endpoint: String,
    pub embedding_api_key: Secret,
    pub embedding_dimensions: usize,
    pub embedding_batch_size: usize,
    pub llm_provider: String,
    pub llm_model: String,
    pub llm_endpoint: String,
    pub llm_api_key: Secret,
    /// REQUIRE_AUTHENTICATION, as given (the server's posture table reads
    /// "not given" apart from "false").
    #[serde(default)]
    pub require_authentication: Option<String>,
    /// DEFAULT_USER_PASSWORD: makes the default user loginable (set once).
    pub default_user_password: Secret,
    /// FASTAPI_USERS_JWT_SECRET: signs session tokens; empty: random per process.
    pub fastapi_users_jwt_secret: Secret,
    /// JWT_LIFETIME_SECONDS.
    pub jwt_lifetime_seconds: u64,
    /// AUTH_TOKEN_COOKIE_NAME and AUTH_TOKEN_COOKIE_DOMAIN.
    pub auth_token_cookie_name: String,
    pub auth_token_cookie_domain: String,
    /// CORS_ALLOWED_ORIGINS (comma-separated); empty: UI_APP_URL alone.
    pub cors_allowed_origins: String,
    pub ui_app_url: String,
    /// LLM_ANSWER_STREAMING: stream answer tokens to event-stream clients.
    #[serde(deserialize_with = "flag")]
    pub llm_answer_streaming: bool,
    /// HTTP_API_HOST and HTTP_API_PORT: where `recall serve` listens.
    pub http_api_host: String,
    pub http_api_port: u16,
    /// The largest request body `recall serve` accepts, in MiB.
    pub max_body_mb: usize,
    /// Seconds a request may run before the server answers 408.
    pub request_timeout_seconds: u64,
    /// CACHING: keep session memory (on unless false, 0 or no).
    #[serde(deserialize_with = "on_unless_off")]
    pub caching: bool,
    /// SESSION_TTL_SECONDS: a session's life after its last write (0: forever).
    pub session_ttl_seconds: u64,
    /// CACHE_PURGE_INTERVAL_SECONDS: the least time between sweeps of expired rows.
    pub cache_purge_interval_seconds: u64,
    /// SESSION_HISTORY_LAST_N (≥ 1): recent turns a completion carries.
    pub session_history_last_n: usize,
    /// IMPROVE_FEEDBACK_ALPHA (0, 1]: how far one rating moves a graph element's weight.
    pub improve_feedback_alpha: f64,
    /// AUTO_FEEDBACK: completions in a session analyse each message (an LLM call).
    #[serde(deserialize_with = "on_unless_off")]
    pub auto_feedback: bool,
    /// SESSION_SEARCH_MODE: `concurrent` (the analysis beside retrieval) or `sequential` (before it).
    pub session_search_mode: String,
    /// TOOL_CALLS_ENABLED: the recall tools lane's gate.
    #[serde(deserialize_with = "flag")]
    pub tool_calls_enabled: bool,
    /// TOOL_SQL_CONNECTIONS: a JSON object of the lane's connections (in a
    /// config file also a TOML table), kept as JSON text.
    #[serde(deserialize_with = "json_text")]
    pub tool_sql_connections: String,
    /// TEXT_TO_SQL_*: rows per answer, attempts, statement timeout, tables shown (each ≥ 1).
    pub text_to_sql_max_rows: usize,
    pub text_to_sql_max_attempts: usize,
    pub text_to_sql_statement_timeout_ms: u64,
    pub text_to_sql_max_schema_tables: usize,
    /// COGNEE_MCP_AGENT_SCOPED: remember and cognify_status default to `<client>_memory`.
    #[serde(deserialize_with = "on_unless_off")]
    pub cognee_mcp_agent_scoped: bool,
    /// COGNEE_MCP_RECALL_SYSTEM_PROMPT, else the file of COGNEE_MCP_RECALL_SYSTEM_PROMPT_FILE.
    pub cognee_mcp_recall_system_prompt: String,
    pub cognee_mcp_recall_system_prompt_file: String,
    /// MCP_ALLOWED_HOSTS (comma-separated): Host values `/mcp` accepts.
    pub mcp_allowed_hosts: String,
}

/// Values given on the command line, which win over everything.
#[derive(Debug, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
}

impl Settings {
    /// Loads settings from the layers, reading the process environment.
    pub fn load(config_file: Option<&Path>, overrides: &Overrides) -> Result<Self> {
        let mut figment = Figment::from(Toml::string(DEFAULTS));
        if let Some(file) = config_file {
            if !file.exists() {
                return Err(RecallError::invalid_input(format!("config file {} does not exist", file.display())));
            }
            figment = figment.merge(Toml::file(file));
        }
        figment = figment
            .merge(Env::raw().only(COGNEE_VARS).map(|k| k.as_str().to_ascii_lowercase().into()))
            .merge(Env::raw().only(&COGNEE_ALIASES.iter().map(|(var, _)| *var).collect::<Vec<_>>()).map(|k| {
                let key = COGNEE_ALIASES
                    .iter()
                    .find(|(var, _)| k.as_str().eq_ignore_ascii_case(var))
                    .map_or("", |(_, key)| *key);
                key.into()
            }))
            .merge(Env::prefixed("RECALL_").map(|k| k.as_str().to_ascii_lowercase().into()))
            .merge(Serialized::defaults(overrides));
        figment.extract().map_err(|e| RecallError::invalid_input(format!("invalid configuration: {e}")))
    }

    /// The compiled-in defaults alone, ignoring the environment (for tests and embedding).
    pub fn defaults() -> Result<Self> {
        Figment::from(Toml::string(DEFAULTS))
            .extract()
            .map_err(|e| RecallError::invalid_input(format!("invalid default configuration: {e}")))
    }

    /// The defaults with every file under `data_dir`.
    pub fn embedded(data_dir: impl Into<PathBuf>) -> Result<Self> {
        Ok(Self { data_dir: data_dir.into(), ..Self::defaults()? })
    }

    pub fn sqlite_path(&self) -> PathBuf {
        self.data_dir.join("recall.db")
    }

    /// The relational database URL.
    pub fn database_url(&self) -> String {
        if self.db_url.trim().is_empty() {
            format!("sqlite://{}", self.sqlite_path().display())
        } else {
            self.db_url.expose().to_string()
        }
    }

    /// The tools lane's settings; a bad connection list or a zero is an
    /// `InvalidInputError`.
    pub fn tool_settings(&self) -> Result<recall_core::tools::ToolSettings> {
        let at_least_one = |name: &str, n: u64| {
            if n == 0 {
                Err(RecallError::invalid_input(format!("{name} must be a positive integer")))
            } else {
                Ok(())
            }
        };
        at_least_one("TEXT_TO_SQL_MAX_ROWS", self.text_to_sql_max_rows as u64)?;
        at_least_one("TEXT_TO_SQL_MAX_ATTEMPTS", self.text_to_sql_max_attempts as u64)?;
        at_least_one("TEXT_TO_SQL_STATEMENT_TIMEOUT_MS", self.text_to_sql_statement_timeout_ms)?;
        at_least_one("TEXT_TO_SQL_MAX_SCHEMA_TABLES", self.text_to_sql_max_schema_tables as u64)?;
        Ok(recall_core::tools::ToolSettings {
            enabled: self.tool_calls_enabled,
            connections: recall_core::tools::parse_connections(&self.tool_sql_connections)?,
            max_rows: self.text_to_sql_max_rows,
            max_attempts: self.text_to_sql_max_attempts,
            statement_timeout: std::time::Duration::from_millis(self.text_to_sql_statement_timeout_ms),
            max_schema_tables: self.text_to_sql_max_schema_tables,
        })
    }

    /// The recall tool's system prompt for MCP agents that give none: the
    /// inline one, else the file's (trimmed); `None` when neither is set.
    pub fn mcp_recall_system_prompt(&self) -> Result<Option<String>> {
        let inline = self.cognee_mcp_recall_system_prompt.trim();
        if !inline.is_empty() {
            return Ok(Some(inline.to_string()));
        }
        let path = self.cognee_mcp_recall_system_prompt_file.trim();
        if path.is_empty() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            RecallError::invalid_input(format!("cannot read COGNEE_MCP_RECALL_SYSTEM_PROMPT_FILE '{path}': {e}"))
        })?;
        Ok(Some(text.trim().to_string()))
    }

    /// The LanceDB URI.
    pub fn vector_uri(&self) -> String {
        if self.vector_url.trim().is_empty() {
            self.data_dir.join("lancedb").display().to_string()
        } else {
            self.vector_url.clone()
        }
    }

    /// The embedder EMBEDDING_PROVIDER selects. Unset (or `auto`): the
    /// OpenAI-compatible client when an embedding endpoint or key is
    /// configured (EMBEDDING_API_KEY, else LLM_API_KEY, as Cognee does), the
    /// local model otherwise.
    pub fn embedding_choice(&self) -> Result<EmbeddingChoice> {
        match self.embedding_provider.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "local" => Ok(EmbeddingChoice::Local),
            "hashing" | "offline" => Ok(EmbeddingChoice::Hashing),
            "openai" | "openai_compatible" | "ollama" | "custom" => Ok(EmbeddingChoice::OpenAiCompatible),
            "auto" | "" => Ok(
                if !self.embedding_endpoint.trim().is_empty() || !self.embedding_key().is_empty() {
                    EmbeddingChoice::OpenAiCompatible
                } else {
                    EmbeddingChoice::Local
                },
            ),
            other => Err(RecallError::invalid_input(format!(
                "unknown embedding_provider '{other}': use local, openai_compatible (or openai, ollama, custom), hashing or auto"
            ))),
        }
    }

    /// EMBEDDING_API_KEY, falling back to LLM_API_KEY as Cognee does.
    pub fn embedding_key(&self) -> String {
        if self.embedding_api_key.trim().is_empty() {
            self.llm_api_key.trim().to_string()
        } else {
            self.embedding_api_key.trim().to_string()
        }
    }

    /// The LanceDB search cache budget in bytes: `vector_cache_mb`, or when
    /// unset a quarter of the memory available to the process (at least
    /// 1 GiB), as databases size their caches from the machine (Neo4j's page
    /// cache, Postgres' effective_cache_size advice).
    pub fn vector_cache_bytes(&self) -> usize {
        const MIB: usize = 1 << 20;
        match self.vector_cache_mb {
            Some(mb) => mb.saturating_mul(MIB),
            None => available_memory().map_or(1024 * MIB, |bytes| (bytes / 4).max(1024 * MIB)),
        }
    }

    /// The bytes LanceDB's own caches may hold (`lance_cache_mb`).
    pub fn lance_cache_bytes(&self) -> usize {
        self.lance_cache_mb.saturating_mul(1 << 20)
    }

    /// The credential settings, checked.
    pub fn credentials(&self) -> Result<recall_accounts::CredentialsConfig> {
        if self.api_key_hash_iterations == 0 {
            return Err(RecallError::invalid_input("API_KEY_HASH_ITERATIONS must be a positive integer"));
        }
        Ok(recall_accounts::CredentialsConfig {
            api_key_hash_salt: self.api_key_hash_salt.expose().to_string(),
            api_key_hash_iterations: self.api_key_hash_iterations,
            max_user_api_keys: self.max_user_api_keys,
        })
    }

    /// The prompt directories, in order.
    pub fn prompt_dirs(&self) -> Vec<PathBuf> {
        std::env::split_paths(self.prompt_dirs.trim()).filter(|p| !p.as_os_str().is_empty()).collect()
    }

    /// Lets a prompt file named on the command line be read: its directory
    /// joins the prompt directories of this process (a request from
    /// elsewhere never gets this).
    pub fn allow_prompt_file(&mut self, file: &Path) {
        let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut dirs = self.prompt_dirs();
        dirs.push(dir.to_path_buf());
        if let Ok(joined) = std::env::join_paths(dirs) {
            self.prompt_dirs = joined.to_string_lossy().into_owned();
        }
    }

    /// The session-memory settings, checked; `None` with caching off.
    pub fn session_config(&self) -> Result<Option<recall_sessions::SessionConfig>> {
        if !self.caching {
            return Ok(None);
        }
        if self.session_history_last_n == 0 {
            return Err(RecallError::invalid_input("session_history_last_n must be at least 1"));
        }
        let turn_mode = match self.session_search_mode.trim().to_ascii_lowercase().as_str() {
            "concurrent" | "" => recall_core::session::TurnMode::Concurrent,
            "sequential" => recall_core::session::TurnMode::Sequential,
            other => {
                return Err(RecallError::invalid_input(format!(
                    "unknown session_search_mode '{other}': use concurrent or sequential"
                )))
            }
        };
        let seconds = std::time::Duration::from_secs;
        Ok(Some(recall_sessions::SessionConfig {
            ttl: Some(seconds(self.session_ttl_seconds)).filter(|t| !t.is_zero()),
            history_last_n: self.session_history_last_n,
            purge_interval: seconds(self.cache_purge_interval_seconds),
            auto_feedback: self.auto_feedback,
            turn_mode,
        }))
    }

    /// The dataset-routing settings, checked.
    pub fn dataset_routing(&self) -> Result<recall_engine::DatasetRoutingConfig> {
        if self.dataset_routing_top_k == 0 {
            return Err(RecallError::invalid_input("dataset_routing_top_k must be at least 1"));
        }
        for (name, v) in [
            ("dataset_routing_max_distance", self.dataset_routing_max_distance),
            ("dataset_routing_tie_margin", self.dataset_routing_tie_margin),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(RecallError::invalid_input(format!("{name} must be a non-negative number")));
            }
        }
        Ok(recall_engine::DatasetRoutingConfig {
            enabled: self.enable_backend_access_control,
            top_k: self.dataset_routing_top_k,
            max_distance: self.dataset_routing_max_distance,
            tie_margin: self.dataset_routing_tie_margin,
        })
    }

    /// Cognee's rule: an LLM is usable when its API key is non-blank.
    pub fn llm_available(&self) -> bool {
        !self.llm_api_key.trim().is_empty()
    }
}

/// A boolean given as true/false, 1/0 or yes/no, in any case (Cognee's env flags).
fn flag<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Int(i64),
        Str(String),
    }
    Ok(match Raw::deserialize(d)? {
        Raw::Bool(b) => b,
        Raw::Int(n) => n == 1,
        Raw::Str(s) => matches!(s.trim().to_ascii_lowercase().as_str(), "true" | "1" | "yes"),
    })
}

/// A JSON value given as text (an environment variable) or as structure
/// (the environment's parse of `[…]`, a TOML table): as JSON text.
fn json_text<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

/// A switch that is on unless given as false, 0 or no (Cognee's SKILL_GATE_ENABLED).
fn on_unless_off<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Int(i64),
        Str(String),
    }
    Ok(match Raw::deserialize(d)? {
        Raw::Bool(b) => b,
        Raw::Int(n) => recall_skills::gate_enabled(Some(&n.to_string())),
        Raw::Str(s) => recall_skills::gate_enabled(Some(&s)),
    })
}

/// Bytes of memory the process may use: physical memory (`/proc/meminfo`),
/// or a lower cgroup v2 limit; `None` where neither can be read.
fn available_memory() -> Option<usize> {
    let physical = std::fs::read_to_string("/proc/meminfo").ok().and_then(|info| {
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib.saturating_mul(1024))
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|v| v.trim().parse::<usize>().ok());
    match (physical, cgroup) {
        (Some(p), Some(c)) => Some(p.min(c)),
        (p, c) => p.or(c),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure signature
    fn tool_and_mcp_settings_read_cognees_variables() {
        figment::Jail::expect_with(|jail| {
            let s = Settings::load(None, &Overrides::default()).unwrap();
            let tools = s.tool_settings().unwrap();
            assert!(!tools.enabled && tools.connections.is_empty());
            assert_eq!((tools.max_rows, tools.max_attempts, tools.max_schema_tables), (100, 3, 50));
            assert!(s.cognee_mcp_agent_scoped && s.mcp_recall_system_prompt().unwrap().is_none());

            jail.set_env("TOOL_CALLS_ENABLED", "true");
            jail.set_env("TOOL_SQL_CONNECTIONS", r#"{"shop": "sqlite:///tmp/shop.db"}"#);
            jail.set_env("TEXT_TO_SQL_MAX_ROWS", "7");
            jail.set_env("COGNEE_MCP_AGENT_SCOPED", "false");
            jail.create_file("prompt.txt", "  Answer in one line.\n")?;
            jail.set_env("COGNEE_MCP_RECALL_SYSTEM_PROMPT_FILE", "prompt.txt");
            let s = Settings::load(None, &Overrides::default()).unwrap();
            let tools = s.tool_settings().unwrap();
            assert!(tools.enabled);
            assert_eq!((tools.connections.len(), tools.max_rows), (1, 7));
            assert!(!s.cognee_mcp_agent_scoped);
            assert_eq!(s.mcp_recall_system_prompt().unwrap().as_deref(), Some("Answer in one line."));
            jail.set_env("COGNEE_MCP_RECALL_SYSTEM_PROMPT", " Be brief. ");
            let s = Settings::load(None, &Overrides::default()).unwrap();
            assert_eq!(s.mcp_recall_system_prompt().unwrap().as_deref(), Some("Be brief."), "inline wins");

            jail.set_env("TEXT_TO_SQL_MAX_ROWS", "0");
            assert!(Settings::load(None, &Overrides::default()).unwrap().tool_settings().is_err());
            jail.set_env("TEXT_TO_SQL_MAX_ROWS", "7");
            jail.set_env("TOOL_SQL_CONNECTIONS", "[]");
            let err = Settings::load(None, &Overrides::default()).unwrap().tool_settings().unwrap_err();
            assert_eq!(err.to_string(), "TOOL_SQL_CONNECTIONS must be a JSON object");
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure signature
    fn defaults_parse_and_layers_override() {
        figment::Jail::expect_with(|jail| {
            let s = Settings::load(None, &Overrides::default()).unwrap();
            assert_eq!(s.data_dir, PathBuf::from(".recall"));
            assert_eq!(s.chunk_size, 512);
            assert_eq!(s.embedding_choice().unwrap(), EmbeddingChoice::Local);
            assert!(!s.llm_available());
            assert_eq!(s.database_url(), "sqlite://.recall/recall.db");

            jail.set_env("EMBEDDING_MODEL", "nomic-embed-text");
            jail.set_env("EMBEDDING_ENDPOINT", "http://localhost:11434/v1");
            jail.set_env("LLM_API_KEY", "sk-x");
            jail.set_env("RECALL_CHUNK_SIZE", "64");
            jail.set_env("RECALL_DATA_DIR", "/tmp/r");
            let s = Settings::load(None, &Overrides::default()).unwrap();
            assert_eq!(s.embedding_model, "nomic-embed-text");
            assert_eq!(s.embedding_choice().unwrap(), EmbeddingChoice::OpenAiCompatible);
            assert!(s.llm_available());
            assert_eq!(s.embedding_key(), "sk-x");
            assert_eq!(s.chunk_size, 64);

            let s = Settings::load(None, &Overrides { data_dir: Some("/cli".into()) }).unwrap();
            assert_eq!(s.data_dir, PathBuf::from("/cli"), "the command line wins");

            assert!(s.log_search_history && s.warmup_shortcircuit && !s.allow_cypher_query);
            jail.set_env("COGNEE_LOG_SEARCH_HISTORY", "False");
            jail.set_env("ALLOW_CYPHER_QUERY", "yes");
            jail.set_env("RECALL_WARMUP_SHORTCIRCUIT", "0");
            let s = Settings::load(None, &Overrides::default()).unwrap();
            assert!(!s.log_search_history && !s.warmup_shortcircuit && s.allow_cypher_query);
            jail.set_env("RECALL_LOG_SEARCH_HISTORY", "true");
            assert!(Settings::load(None, &Overrides::default()).unwrap().log_search_history, "RECALL_ wins");

            jail.set_env("RECALL_CHUNK_SIZE", "lots");
            assert!(Settings::load(None, &Overrides::default()).is_err());
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure signature
    fn the_search_cache_budget_is_explicit_or_sized_from_the_machine() {
        figment::Jail::expect_with(|jail| {
            let auto = Settings::load(None, &Overrides::default()).unwrap();
            assert_eq!(auto.vector_cache_mb, None);
            let bytes = auto.vector_cache_bytes();
            assert!(bytes >= 1 << 30, "at least 1 GiB");
            if let Some(total) = available_memory() {
                assert!(bytes == (total / 4).max(1 << 30), "a quarter of {total}: {bytes}");
            }
            jail.set_env("RECALL_VECTOR_CACHE_MB", "0");
            assert_eq!(Settings::load(None, &Overrides::default()).unwrap().vector_cache_bytes(), 0, "0 = off");
            jail.set_env("RECALL_VECTOR_CACHE_MB", "300");
            assert_eq!(Settings::load(None, &Overrides::default()).unwrap().vector_cache_bytes(), 300 << 20);
            jail.set_env("RECALL_VECTOR_CACHE_MB", "much");
            assert!(Settings::load(None, &Overrides::default()).is_err());
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure signature
    fn lances_own_caches_are_bounded_by_default_and_configurable() {
        figment::Jail::expect_with(|jail| {
            assert_eq!(Settings::load(None, &Overrides::default()).unwrap().lance_cache_bytes(), 1 << 30);
            jail.set_env("RECALL_LANCE_CACHE_MB", "64");
            assert_eq!(Settings::load(None, &Overrides::default()).unwrap().lance_cache_bytes(), 64 << 20);
            jail.set_env("RECALL_LANCE_CACHE_MB", "-1");
            assert!(Settings::load(None, &Overrides::default()).is_err());
            Ok(())
        });
    }

    #[test]
    #[allow(clippy::result_large_err)] // figment::Jail's closure signature
    fn debug_never_prints_keys_or_passwords() {
        figment::Jail::expect_with(|jail| {
            jail.set_env("LLM_API_KEY", "sk-llm-secret");
            jail.set_env("EMBEDDING_API_KEY", "sk-embed-secret");
            jail.set_env("RECALL_GRAPH_PASSWORD", "graph-secret");
            jail.set_env("RECALL_DB_URL", "postgres://u:db-secret@h/db");
            let s = Settings::load(None, &Overrides::default()).unwrap();
            assert_eq!(s.llm_api_key.expose(), "sk-llm-secret");
            assert_eq!(s.database_url(), "postgres://u:db-secret@h/db");
            let printed = format!("{s:?}");
            for secret in ["sk-llm-secret", "sk-embed-secret", "graph-secret", "db-secret"] {
                assert!(!printed.contains(secret), "{secret} leaked: {printed}");
            }
            assert!(printed.contains("llm_api_key: ***"), "{printed}");
            Ok(())
        });
    }

    #[test]
    fn allow_cypher_query_accepts_cognee_spellings() {
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(deserialize_with = "super::flag")]
            v: bool,
        }
        for (raw, want) in [
            ("true", true),
            ("\"True\"", true),
            ("\"yes\"", true),
            ("1", true),
            ("\"1\"", true),
            ("false", false),
            ("\"no\"", false),
            ("0", false),
        ] {
            let t: T = serde_json::from_str(&format!("{{\"v\": {raw}}}")).unwrap_or(T { v: !want });
            assert_eq!(t.v, want, "{raw}");
        }
    }
}
