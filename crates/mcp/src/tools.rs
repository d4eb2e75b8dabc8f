//! The tools: their schemas (what `tools/list` shows) and what each call
//! does. Arguments of the wrong shape are an MCP `invalid_params` error;
//! a failure of the work itself is a tool result flagged `isError` whose
//! text starts `Error:` (cognee-mcp's texts) and whose structured content
//! names the error class and its HTTP status.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use recall_api::{
    ForgetReport, ForgetRequest, RecallRequest, RememberInput, RememberProgress, RememberReport, RememberRequest,
    SearchRequest,
};
use recall_core::{DatasetRef, PipelineRunStatus, RecallError, SearchType, User};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, JsonObject, MetaObject, ProgressNotificationParam,
    ProgressToken, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::format::{self, MemoryState};
use crate::{Acting, DEFAULT_DATASET};

/// The largest file `remember` takes (decoded).
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;
/// How long `recall` waits for the pipeline-status probe of an empty answer.
const STATUS_PROBE: Duration = Duration::from_secs(5);

fn schema(value: Value) -> Arc<JsonObject> {
    Arc::new(match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    })
}

fn tool(name: &'static str, description: &'static str, input: Value) -> Tool {
    Tool::new(name, description, schema(input))
}

const NULLABLE_STRING: &str = r#"{"type": ["string", "null"], "default": null}"#;

fn nullable_string() -> Value {
    serde_json::from_str(NULLABLE_STRING).unwrap_or(Value::Null)
}

/// Every tool, as `tools/list` shows them.
pub(crate) fn list() -> Vec<Tool> {
    let s = nullable_string;
    vec![
        tool(
            "remember",
            "Store information in memory: text (`data`), or a file (`filename` + `content_base64`, at most 10 MB). \
             Without `session_id` it is built into the knowledge graph of `dataset_name`; with `session_id` it is \
             kept in that session only. `background` returns at once (follow it with cognify_status).",
            json!({"type": "object", "properties": {
                "data": s(), "filename": s(), "content_base64": s(), "dataset_name": s(), "session_id": s(),
                "custom_prompt": s(), "background": {"type": "boolean", "default": false},
                "ontology_key": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": null},
                "self_improvement": {"type": "boolean", "default": true}
            }}),
        ),
        tool(
            "recall",
            "Answer a question from memory. The search type is chosen automatically unless `search_type` names one \
             (e.g. CHUNKS, GRAPH_COMPLETION, RAG_COMPLETION). `datasets` and `scope` are comma-separated lists.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"}, "search_type": s(), "datasets": s(), "session_id": s(),
                "system_prompt": s(), "top_k": {"type": "integer", "default": 15, "minimum": 1, "maximum": 100},
                "scope": s(), "code_query": {"type": ["object", "null"], "default": null}
            }, "required": ["query"]}),
        ),
        tool(
            "search",
            "Run one search type over memory (Cognee's search()): `search_type` is required; AGENTIC_COMPLETION \
             takes `skills`, `tools` and `max_iter` and exactly one dataset. Returns Cognee's JSON results.",
            json!({"type": "object", "properties": {
                "query": {"type": "string"}, "search_type": {"type": "string"}, "datasets": s(),
                "top_k": {"type": "integer", "default": 15}, "only_context": {"type": "boolean", "default": false},
                "session_id": s(),
                "skills": {"type": ["array", "null"], "items": {"type": "string"}, "default": null},
                "tools": {"type": ["array", "null"], "items": {"type": "string"}, "default": null},
                "max_iter": {"type": ["integer", "null"], "default": null}
            }, "required": ["query", "search_type"]}),
        ),
        tool(
            "forget",
            "Delete memory: a dataset (`dataset` name or `dataset_id`), one data item (`data_id` with a dataset), \
             or `everything` you may delete.",
            json!({"type": "object", "properties": {
                "dataset": s(), "everything": {"type": "boolean", "default": false}, "data_id": s(), "dataset_id": s()
            }}),
        ),
        tool(
            "cognify_status",
            "The status of a dataset's pipelines (default cognify_pipeline) and the errors of background remembers.",
            json!({"type": "object", "properties": {
                "dataset_name": s(),
                "pipelines": {"type": ["array", "null"], "items": {"type": "string"}, "default": null}
            }}),
        ),
        tool(
            "code_search",
            "Search code graphs (not supported by Recall yet: it answers with an error).",
            json!({"type": "object", "properties": {
                "operation": {"type": "string", "enum": ["query_facts", "explore", "traverse", "find_path", "impact_analysis", "insights", "architecture", "delta"]},
                "arguments": {"type": ["object", "null"], "default": null}, "datasets": s(),
                "query": {"type": "string", "default": ""}, "top_k": {"type": "integer", "default": 15}
            }, "required": ["operation"]}),
        ),
        tool(
            "list_datasets",
            "The datasets you can read: id, name, whether you own it, and your permissions on it.",
            json!({"type": "object", "properties": {}}),
        ),
        tool(
            "session_feedback",
            "Rate an answer of a session (`qa_id` from the session's turns): a score from 1 to 5 and an optional text.",
            json!({"type": "object", "properties": {
                "session_id": {"type": "string"}, "qa_id": {"type": "string"},
                "score": {"type": "integer", "minimum": 1, "maximum": 5}, "text": s()
            }, "required": ["session_id", "qa_id", "score"]}),
        ),
    ]
}

/// The arguments of a call, read as `T`; the wrong shape is `invalid_params`.
fn arguments<T: DeserializeOwned>(tool: &str, request: &CallToolRequestParams) -> Result<T, McpError> {
    let value = Value::Object(request.arguments.clone().unwrap_or_default());
    serde_json::from_value(value).map_err(|e| McpError::invalid_params(format!("{tool}: invalid arguments: {e}"), None))
}

fn text(body: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(body)])
}

/// A list as indented JSON text, and as `{key: list}` structured content.
fn json_list(key: &str, items: Vec<Value>) -> CallToolResult {
    let mut result = text(serde_json::to_string_pretty(&items).unwrap_or_default());
    let mut structured = serde_json::Map::new();
    structured.insert(key.to_string(), Value::Array(items));
    result.structured_content = Some(Value::Object(structured));
    result
}

/// A refusal in cognee-mcp's words (no engine error behind it).
fn refusal(body: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(body)])
}

/// A failed operation: `Error: <op> failed: <message>` (and `Fix:` with
/// the remediation), the class and status as structured content.
fn failure(op: &str, e: &RecallError) -> CallToolResult {
    let mut body = format!("Error: {op} failed: {e}");
    if let Some(hint) = e.remediation() {
        body.push_str(&format!("\nFix: {hint}"));
    }
    let mut result = refusal(body);
    result.structured_content = Some(json!({"error": e.name(), "status": e.http_status(), "message": e.to_string()}));
    result
}

/// Splits a comma-separated list; empty parts are dropped, `None` when nothing is left.
fn csv(list: Option<&str>) -> Option<Vec<String>> {
    let items: Vec<String> =
        list.unwrap_or_default().split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    (!items.is_empty()).then_some(items)
}

pub(crate) async fn call(
    server: &Acting<'_>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    tracing::info!(tool = %request.name, "MCP tool call");
    match request.name.as_ref() {
        "remember" => remember(server, arguments("remember", &request)?, &context).await,
        "recall" => recall(server, arguments("recall", &request)?).await,
        "search" => search(server, arguments("search", &request)?).await,
        "forget" => forget(server, arguments("forget", &request)?).await,
        "cognify_status" => cognify_status(server, arguments("cognify_status", &request)?, &context).await,
        "code_search" => {
            let _: CodeSearchArgs = arguments("code_search", &request)?;
            Ok(refusal(
                "Error: code_search is not supported: Recall builds no code graphs yet (the CODE search type has no retriever).",
            ))
        }
        "list_datasets" => list_datasets(server).await,
        "session_feedback" => session_feedback(server, arguments("session_feedback", &request)?).await,
        other => Err(McpError::invalid_params(format!("Unknown tool: '{other}'"), None)),
    }
}

/// The dataset `remember` and `cognify_status` use when none is named.
fn default_dataset(server: &Acting<'_>, context: &RequestContext<RoleServer>) -> String {
    if !server.config.agent_scoped {
        return DEFAULT_DATASET.to_string();
    }
    match context.peer.peer_info().map(|info| info.client_info.name.clone()).filter(|n| !n.trim().is_empty()) {
        Some(name) => format::agent_dataset(&name),
        None => DEFAULT_DATASET.to_string(),
    }
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct RememberArgs {
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    content_base64: Option<String>,
    #[serde(default)]
    dataset_name: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    custom_prompt: Option<String>,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    ontology_key: Option<Value>,
    /// Run `improve` after the build (default on).
    #[serde(default = "yes")]
    self_improvement: bool,
}

/// Progress of a remember as MCP progress notifications, in order.
struct Notify {
    tx: tokio::sync::mpsc::UnboundedSender<String>,
}

impl Notify {
    fn start(peer: Peer<RoleServer>, token: ProgressToken) -> Self {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        tokio::spawn(async move {
            let mut step = 0.0;
            while let Some(message) = rx.recv().await {
                step += 1.0;
                let param = ProgressNotificationParam::new(token.clone(), step).with_message(message);
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        Self { tx }
    }
}

impl RememberProgress for Notify {
    fn stage(&self, name: &str, total: usize) {
        let _ = self.tx.send(format!("{name}: {total} item(s)"));
    }

    fn item_done(&self, name: &str) {
        let _ = self.tx.send(format!("{name}: one item done"));
    }
}

async fn remember(
    server: &Acting<'_>,
    args: RememberArgs,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let file = args.filename.is_some() || args.content_base64.is_some();
    if args.data.is_some() && file {
        return Ok(refusal("Error: pass either `data` or `filename` + `content_base64`, not both."));
    }
    if args.data.is_none() && !(args.filename.is_some() && args.content_base64.is_some()) {
        return Ok(refusal("Error: provide `data` or `filename` + `content_base64`."));
    }
    if file && args.session_id.is_some() {
        return Ok(refusal("Error: file uploads (content_base64) don't support session_id."));
    }
    if args.ontology_key.as_ref().is_some_and(|v| !v.is_null()) {
        return Ok(refusal(if args.session_id.is_some() {
            "Error: ontology_key is only supported for permanent memory; omit session_id."
        } else {
            "Error: ontology_key is not supported: Recall has no ontologies yet."
        }));
    }
    if args.custom_prompt.as_deref().is_some_and(|p| !p.trim().is_empty()) {
        return Ok(refusal("Error: custom_prompt is not supported: Recall extracts with its own prompt."));
    }
    let (input, upload) = match (&args.data, &args.filename, &args.content_base64) {
        (Some(data), _, _) => (RememberInput::text(data.clone()), None),
        (None, Some(filename), Some(content)) => {
            let bytes = match base64::engine::general_purpose::STANDARD.decode(content.trim()) {
                Ok(bytes) => bytes,
                Err(e) => return Ok(refusal(format!("Error: invalid base64 content ({e})."))),
            };
            if bytes.len() > MAX_FILE_BYTES {
                return Ok(refusal(format!(
                    "Error: file exceeds 10 MB limit ({} bytes).",
                    format::thousands(bytes.len())
                )));
            }
            // The name only: a path from the client is never a path here.
            let name = filename.rsplit(['/', '\\']).next().unwrap_or_default().to_string();
            let size = bytes.len();
            let Ok(text) = String::from_utf8(bytes) else {
                return Ok(refusal(format!("Error: Remember failed: '{name}' is not UTF-8 text.")));
            };
            (RememberInput::Text { text, name: Some(name.clone()) }, Some((name, size)))
        }
        _ => return Ok(refusal("Error: provide `data` or `filename` + `content_base64`.")),
    };
    let dataset =
        args.dataset_name.clone().filter(|d| !d.trim().is_empty()).unwrap_or_else(|| default_dataset(server, context));
    let mut request = RememberRequest::new(DatasetRef::Name(dataset.clone()), vec![input]);
    request.session_id = args.session_id.clone();
    request.background = args.background;
    request.self_improvement = args.self_improvement;
    let report = match context.meta.get_progress_token() {
        Some(token) if !args.background => {
            let progress = Notify::start(context.peer.clone(), token);
            server.app.remember(&server.user, request, &progress).await
        }
        _ => server.app.remember_quietly(&server.user, request).await,
    };
    Ok(match (report, upload) {
        (Ok(RememberReport::SessionStored { session_id, .. }), _) => {
            text(format!("Stored in session cache (session_id={session_id}, status=session_stored)."))
        }
        (Ok(RememberReport::Running { .. }), upload) => {
            let what = match &upload {
                Some((name, size)) => format!("file '{name}' ({} bytes)", format::thousands(*size)),
                None => "the text".to_string(),
            };
            text(format!(
                "Background remember launched: {what} queued for dataset '{dataset}'. \
                 Call cognify_status with dataset_name='{dataset}' to follow it."
            ))
        }
        (Ok(RememberReport::Completed { outcome, .. }), Some((name, size))) => text(format!(
            "Ingested '{name}' ({} bytes) into dataset '{}' (status=completed).",
            format::thousands(size),
            outcome.dataset_name
        )),
        (Ok(RememberReport::Completed { outcome, .. }), None) => {
            text(format!("Stored permanently in knowledge graph (dataset={}, status=completed).", outcome.dataset_name))
        }
        (Err(e), _) => failure("Remember", &e),
    })
}

#[derive(Deserialize)]
struct RecallArgs {
    query: String,
    #[serde(default)]
    search_type: Option<String>,
    #[serde(default)]
    datasets: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    system_prompt: Option<String>,
    #[serde(default)]
    top_k: Option<Value>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    code_query: Option<Value>,
}

/// `top_k`: an integer from 1 to 100 (default 15).
fn recall_top_k(value: Option<&Value>) -> Result<i64, &'static str> {
    let n = match value {
        None | Some(Value::Null) => return Ok(15),
        Some(v) => v.as_i64().ok_or("top_k must be an integer.")?,
    };
    match n {
        ..1 => Err("top_k must be at least 1."),
        101.. => Err("top_k must be less than or equal to 100."),
        n => Ok(n),
    }
}

async fn recall(server: &Acting<'_>, args: RecallArgs) -> Result<CallToolResult, McpError> {
    let top_k = match recall_top_k(args.top_k.as_ref()) {
        Ok(k) => k,
        Err(message) => return Ok(refusal(format!("Error: {message}"))),
    };
    if args.code_query.as_ref().is_some_and(|c| !c.is_object() && !c.is_null()) {
        return Ok(refusal("Error: code_query must be an object."));
    }
    let query_type = match args.search_type.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(name) => match name.to_uppercase().parse::<SearchType>() {
            Ok(t) => Some(t),
            Err(_) => return Ok(refusal(format!("Error: Recall failed: '{}'", name.to_uppercase()))),
        },
        None => None,
    };
    let datasets = csv(args.datasets.as_deref());
    let mut request = RecallRequest::new(args.query);
    request.query_type = query_type;
    request.datasets = datasets.clone();
    request.scope = csv(args.scope.as_deref());
    request.code_query = args.code_query.filter(|c| !c.is_null());
    request.options.top_k = Some(top_k);
    request.options.session_id = args.session_id.filter(|s| !s.is_empty());
    request.options.system_prompt =
        args.system_prompt.filter(|p| !p.trim().is_empty()).or_else(|| server.config.recall_system_prompt.clone());
    let results = match server.app.recall(&server.user, &request).await {
        Ok(results) => results,
        Err(e) => return Ok(failure("Recall", &e)),
    };
    let found = format::items(&results).len();
    let state =
        if found > 0 { MemoryState::Found } else { empty_state(server, datasets.as_deref().unwrap_or(&[])).await };
    let mut result = text(format::recall_text(&results, state));
    let mut meta = JsonObject::new();
    meta.insert("cognee/memory".into(), json!({"count": found, "state": state.as_str()}));
    result.meta = Some(MetaObject(meta));
    Ok(result)
}

/// Why a recall found nothing: a background remember still running, else
/// the latest pipeline runs of the datasets (bounded in time).
async fn empty_state(server: &Acting<'_>, datasets: &[String]) -> MemoryState {
    if server.app.background().running_for(&server.user, datasets) {
        return MemoryState::Indexing;
    }
    let pipelines = [recall_core::pipelines::ADD.to_string(), recall_core::pipelines::COGNIFY.to_string()];
    let probe = server.app.dataset_statuses(&server.user, &[], &pipelines);
    let Ok(Ok(statuses)) = tokio::time::timeout(STATUS_PROBE, probe).await else {
        return MemoryState::None;
    };
    let statuses: Vec<_> =
        statuses.into_iter().filter(|s| datasets.is_empty() || datasets.contains(&s.dataset.name)).collect();
    let any = |wanted: PipelineRunStatus| statuses.iter().any(|s| s.pipelines.iter().any(|(_, st)| *st == wanted));
    if any(PipelineRunStatus::Started) {
        MemoryState::Indexing
    } else if any(PipelineRunStatus::Errored) {
        MemoryState::BuildFailed
    } else {
        MemoryState::None
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    search_type: String,
    #[serde(default)]
    datasets: Option<String>,
    #[serde(default)]
    top_k: Option<i64>,
    #[serde(default)]
    only_context: bool,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    skills: Option<Vec<String>>,
    #[serde(default)]
    tools: Option<Vec<String>>,
    #[serde(default)]
    max_iter: Option<i64>,
}

async fn search(server: &Acting<'_>, args: SearchArgs) -> Result<CallToolResult, McpError> {
    let query_type = match args.search_type.trim().to_uppercase().parse::<SearchType>() {
        Ok(t) => t,
        Err(e) => return Ok(failure("Search", &e)),
    };
    let mut request = SearchRequest::new(args.query).query_type(query_type);
    request.datasets = csv(args.datasets.as_deref());
    request.options.top_k = Some(args.top_k.unwrap_or(15));
    request.options.only_context = args.only_context;
    request.options.session_id = args.session_id.filter(|s| !s.is_empty());
    request.options.system_prompt = Some(recall_core::DEFAULT_SYSTEM_PROMPT.to_string());
    request.skills = args.skills;
    request.tools = args.tools;
    request.max_iter = args.max_iter;
    Ok(match server.app.search(&server.user, &request).await {
        Ok(results) => json_list("results", results),
        Err(e) => failure("Search", &e),
    })
}

#[derive(Deserialize)]
struct ForgetArgs {
    #[serde(default)]
    dataset: Option<String>,
    #[serde(default)]
    everything: bool,
    #[serde(default)]
    data_id: Option<String>,
    #[serde(default)]
    dataset_id: Option<String>,
}

/// A UUID, or the refusal text.
fn uuid_of(s: &str) -> Result<uuid::Uuid, String> {
    uuid::Uuid::parse_str(s.trim()).map_err(|e| format!("Error: invalid UUID ({e})."))
}

async fn forget(server: &Acting<'_>, args: ForgetArgs) -> Result<CallToolResult, McpError> {
    let request = if args.everything {
        ForgetRequest::Everything
    } else {
        if args.dataset.is_none() && args.dataset_id.is_none() && args.data_id.is_none() {
            return Ok(refusal(
                "Error: Specify 'dataset' name or set 'everything' to true. To remove a single item, pass 'data_id' with 'dataset' or 'dataset_id'.",
            ));
        }
        let dataset = match (&args.dataset_id, &args.dataset) {
            (Some(id), _) => match uuid_of(id) {
                Ok(id) => DatasetRef::Id(recall_core::DatasetId(id)),
                Err(refused) => return Ok(refusal(refused)),
            },
            (None, Some(name)) => DatasetRef::Name(name.clone()),
            (None, None) => return Ok(refusal("Error: 'data_id' requires 'dataset' or 'dataset_id'.")),
        };
        match &args.data_id {
            Some(data_id) => match uuid_of(data_id) {
                Ok(id) => ForgetRequest::Document { dataset, document: id.to_string() },
                Err(refused) => return Ok(refusal(refused)),
            },
            None => ForgetRequest::Dataset(dataset),
        }
    };
    let label = match &request {
        ForgetRequest::Dataset(dataset) => dataset.label(),
        ForgetRequest::Document { document, .. } => document.clone(),
        ForgetRequest::Everything => String::new(),
    };
    Ok(match server.app.forget(&server.user, request).await {
        Ok(ForgetReport::Everything { .. }) => text("All data deleted (status=success)."),
        Ok(ForgetReport::Document { .. }) => text(format!("Data item '{label}' deleted (status=success).")),
        Ok(ForgetReport::Dataset(_)) => text(format!("Dataset '{label}' deleted (status=success).")),
        Err(e) => failure("Forget", &e),
    })
}

#[derive(Deserialize)]
struct StatusArgs {
    #[serde(default)]
    dataset_name: Option<String>,
    #[serde(default)]
    pipelines: Option<Vec<String>>,
}

async fn cognify_status(
    server: &Acting<'_>,
    args: StatusArgs,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let name = args.dataset_name.filter(|d| !d.trim().is_empty()).unwrap_or_else(|| default_dataset(server, context));
    let mut pipelines: Vec<String> = Vec::new();
    for p in args.pipelines.unwrap_or_else(|| vec![recall_core::pipelines::COGNIFY.to_string()]) {
        if !pipelines.contains(&p) {
            pipelines.push(p);
        }
    }
    let errors = server.app.background().errors_of(&server.user, &name);
    let errors_block = if errors.is_empty() {
        String::new()
    } else {
        let lines: Vec<String> = errors.iter().map(|e| format!("[{}] {}", e.at, e.message)).collect();
        format!("\n\nBackground errors (newest first):\n{}", lines.join("\n"))
    };
    let status = async {
        let dataset = server.app.dataset(&server.user, &DatasetRef::Name(name.clone())).await?;
        server.app.dataset_statuses(&server.user, &[dataset.id], &pipelines).await
    };
    Ok(match status.await {
        Ok(statuses) => {
            let Some(status) = statuses.first() else {
                return Ok(text(format!("{{}}{errors_block}")));
            };
            let id = format::py_str(&status.dataset.id.to_string());
            let of = |p: &str| {
                status
                    .pipelines
                    .iter()
                    .find(|(name, _)| name == p)
                    .map_or("None".to_string(), |(_, s)| format::py_str(s.as_str()))
            };
            let body = if let [only] = pipelines.as_slice() {
                format!("{{{id}: {}}}", of(only))
            } else {
                let inner: Vec<String> =
                    pipelines.iter().map(|p| format!("{}: {}", format::py_str(p), of(p))).collect();
                format!("{{{id}: {{{}}}}}", inner.join(", "))
            };
            text(format!("{body}{errors_block}"))
        }
        Err(RecallError::DatasetNotFound { .. }) => refusal(format!("❌ Dataset '{name}' not found{errors_block}")),
        Err(e) => refusal(format!("❌ Failed to get cognify status: {e}{errors_block}")),
    })
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct CodeSearchArgs {
    operation: String,
    #[serde(default)]
    arguments: Option<Value>,
}

async fn list_datasets(server: &Acting<'_>) -> Result<CallToolResult, McpError> {
    Ok(match server.app.datasets(&server.user).await {
        Ok(listing) => {
            let rows: Vec<Value> = listing
                .iter()
                .map(|l| {
                    json!({"id": l.dataset.id, "name": l.dataset.name, "owned": l.owned,
                           "permissions": l.permissions.iter().map(|p| p.as_str()).collect::<Vec<_>>()})
                })
                .collect();
            json_list("datasets", rows)
        }
        Err(e) => failure("List datasets", &e),
    })
}

#[derive(Deserialize)]
struct FeedbackArgs {
    session_id: String,
    qa_id: String,
    score: i64,
    #[serde(default)]
    text: Option<String>,
}

async fn session_feedback(server: &Acting<'_>, args: FeedbackArgs) -> Result<CallToolResult, McpError> {
    if !(1..=5).contains(&args.score) {
        return Ok(refusal("Error: score must be an integer from 1 to 5."));
    }
    let user: &User = &server.user;
    let outcome = server.app.rate_answer(user, &args.session_id, &args.qa_id, args.text.clone(), Some(args.score));
    Ok(match outcome.await {
        Ok(true) => text(format!("Feedback recorded for answer '{}' of session '{}'.", args.qa_id, args.session_id)),
        Ok(false) => {
            refusal(format!("Error: Feedback failed: no answer '{}' in session '{}'.", args.qa_id, args.session_id))
        }
        Err(e) => failure("Feedback", &e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_is_checked_like_cognee_mcp() {
        assert_eq!(recall_top_k(None), Ok(15));
        assert_eq!(recall_top_k(Some(&json!(100))), Ok(100));
        assert_eq!(recall_top_k(Some(&json!("7"))), Err("top_k must be an integer."));
        assert_eq!(recall_top_k(Some(&json!(0))), Err("top_k must be at least 1."));
        assert_eq!(recall_top_k(Some(&json!(101))), Err("top_k must be less than or equal to 100."));
    }

    #[test]
    fn lists_are_comma_separated() {
        assert_eq!(csv(Some(" a, ,b ")), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(csv(Some(" , ")), None);
        assert_eq!(csv(None), None);
    }

    #[test]
    fn every_tool_has_an_object_schema() {
        let tools = list();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "remember",
                "recall",
                "search",
                "forget",
                "cognify_status",
                "code_search",
                "list_datasets",
                "session_feedback"
            ]
        );
        assert!(tools.iter().all(|t| t.input_schema.get("type") == Some(&json!("object"))));
    }
}
