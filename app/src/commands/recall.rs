//! `recall recall` and `recall search`: a question, parsed from the flags
//! into the application layer's request; the results printed for a person
//! or as JSON.

use std::path::{Path, PathBuf};

use recall::Settings;
use recall_api::{RecallExplain, RecallRequest, SearchRequest};
use recall_core::{DatasetId, RecallError, RecallResponse, Result, SearchOptions, SearchType};
use uuid::Uuid;

use super::{non_empty, print_json, Who};

/// The options of `recall recall` and `recall search`.
#[derive(clap::Args)]
pub(crate) struct SearchArgs {
    query: String,
    /// Search type, e.g. CHUNKS or GRAPH_COMPLETION (default: chosen automatically).
    #[arg(long = "type", short = 't')]
    query_type: Option<String>,
    /// Dataset name, among your own datasets (repeatable; default: every
    /// dataset you can read).
    #[arg(long, short)]
    dataset: Vec<String>,
    /// Dataset id, for datasets shared with you (repeatable; takes precedence
    /// over --dataset).
    #[arg(long, value_name = "UUID")]
    dataset_id: Vec<Uuid>,
    #[arg(long, default_value_t = recall_core::DEFAULT_TOP_K, allow_negative_numbers = true)]
    top_k: i64,
    /// Return what the LLM would receive instead of calling it.
    #[arg(long)]
    only_context: bool,
    /// Override the system prompt of completion types.
    #[arg(long)]
    system_prompt: Option<String>,
    /// A system-prompt template: a built-in name or a file.
    #[arg(long)]
    system_prompt_path: Option<String>,
    /// Append the Evidence block and fill metadata.evidence.
    #[arg(long)]
    include_references: bool,
    /// A JSON Schema file: completions are structured and validated against it.
    #[arg(long, value_name = "FILE")]
    response_schema: Option<PathBuf>,
    /// Node-set filter (repeatable).
    #[arg(long)]
    node_name: Vec<String>,
    /// OR (any node set) or AND (all of them).
    #[arg(long, default_value = "OR")]
    node_name_filter_operator: String,
    /// retriever_specific_config entry, KEY=VALUE; VALUE is JSON or a plain string (repeatable).
    #[arg(long = "config", value_name = "KEY=VALUE")]
    retriever_config: Vec<String>,
    #[arg(long, allow_negative_numbers = true)]
    wide_search_top_k: Option<i64>,
    #[arg(long, allow_negative_numbers = true)]
    triplet_distance_penalty: Option<f64>,
    #[arg(long, allow_negative_numbers = true, default_value_t = 0.0)]
    feedback_influence: f64,
    #[arg(long, allow_negative_numbers = true)]
    neighborhood_depth: Option<i64>,
    #[arg(long, allow_negative_numbers = true)]
    neighborhood_seed_top_k: Option<i64>,
    /// Skip automatic routing (HYBRID_COMPLETION when an LLM is configured).
    #[arg(long)]
    no_auto_route: bool,
    /// AGENTIC_COMPLETION: a skill the loop may load, by name (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    skills: Vec<String>,
    /// AGENTIC_COMPLETION: a tool the loop may offer, by name (repeatable;
    /// default: every tool).
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
    /// The tools lane: a configured SQL connection to ask, by name
    /// (repeatable; default: every one; docs/tools-lane.md).
    #[arg(long = "tool-connection", value_name = "NAME")]
    tool_connections: Vec<String>,
    /// The tools lane: `always` (default) or `on_empty`.
    #[arg(long, default_value = "always")]
    tools_trigger: String,
    /// AGENTIC_COMPLETION: steps before the answer is forced (default 6).
    #[arg(long, allow_negative_numbers = true)]
    max_iter: Option<i64>,
    /// Lanes to search: auto, graph, session, trace, session_context,
    /// session_first, all, tools, code (repeatable; default auto).
    #[arg(long)]
    scope: Vec<String>,
    /// The session whose memory the session lanes search.
    #[arg(long)]
    session_id: Option<String>,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// `recall search` only: per dataset, the text, context and objects
    /// results, the prompts and the evidence.
    #[arg(long)]
    verbose: bool,
    /// Also print what recall decided: the search type and the rule that
    /// chose it, the datasets considered with their routing distances, the
    /// lanes run, and per-stage timings.
    #[arg(long)]
    explain: bool,
}

/// How `recall recall` prints.
#[derive(Clone, Copy)]
struct Output {
    json: bool,
    explain: bool,
}

impl SearchArgs {
    /// The options recall and search share, read from the flags.
    fn options(&mut self) -> Result<SearchOptions> {
        let response_schema = match &self.response_schema {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    RecallError::invalid_input(format!("cannot read the response schema '{}': {e}", path.display()))
                })?;
                Some(serde_json::from_str(&text).map_err(|e| RecallError::Validation {
                    name: "CogneeValidationError",
                    message: format!("response_schema: '{}' is not JSON: {e}", path.display()),
                })?)
            }
            None => None,
        };
        let mut retriever_specific_config = serde_json::Map::new();
        for entry in &self.retriever_config {
            let (key, value) = entry
                .split_once('=')
                .ok_or_else(|| RecallError::invalid_input(format!("--config expects KEY=VALUE, got '{entry}'")))?;
            let value = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
            retriever_specific_config.insert(key.trim().to_string(), value);
        }
        if let Some(n) = self.max_iter {
            retriever_specific_config.insert("max_iter".into(), n.into());
        }
        for (key, names) in [("skills", &self.skills), ("tools", &self.tools)] {
            if !names.is_empty() {
                retriever_specific_config.insert(key.into(), serde_json::json!(names));
            }
        }
        Ok(SearchOptions {
            top_k: Some(self.top_k),
            only_context: self.only_context,
            node_name: non_empty(std::mem::take(&mut self.node_name)),
            system_prompt: self.system_prompt.take(),
            include_references: self.include_references,
            response_schema,
            session_id: self.session_id.take(),
            node_name_filter_operator: std::mem::take(&mut self.node_name_filter_operator),
            system_prompt_path: self.system_prompt_path.take(),
            retriever_specific_config,
            wide_search_top_k: self.wide_search_top_k,
            triplet_distance_penalty: self.triplet_distance_penalty,
            feedback_influence: self.feedback_influence,
            neighborhood_depth: self.neighborhood_depth,
            neighborhood_seed_top_k: self.neighborhood_seed_top_k,
        })
    }

    fn query_type(&self) -> Result<Option<SearchType>> {
        self.query_type.as_deref().map(str::parse).transpose()
    }

    /// A prompt file named on this command line is the user's own: allow it.
    pub(crate) fn allow_prompt_file(&self, settings: &mut Settings) {
        if let Some(path) = self.system_prompt_path.as_deref().filter(|p| !recall_retrievers::prompts::is_builtin(p)) {
            settings.allow_prompt_file(Path::new(path));
        }
    }

    fn recall_request(mut self) -> Result<(RecallRequest, Output)> {
        let request = RecallRequest {
            query_type: self.query_type()?,
            datasets: non_empty(std::mem::take(&mut self.dataset)),
            dataset_ids: non_empty(self.dataset_id.iter().copied().map(DatasetId).collect()),
            options: self.options()?,
            auto_route: !self.no_auto_route,
            scope: non_empty(std::mem::take(&mut self.scope)),
            tool_connections: non_empty(std::mem::take(&mut self.tool_connections)),
            tools_trigger: std::mem::take(&mut self.tools_trigger),
            ..RecallRequest::new(std::mem::take(&mut self.query))
        };
        Ok((request, Output { json: self.json, explain: self.explain }))
    }

    /// `recall search`'s request: the same options, without the lanes, the
    /// router and the explain flag, which the legacy search does not have.
    fn search_request(mut self) -> Result<SearchRequest> {
        let skills = non_empty(std::mem::take(&mut self.skills));
        let tools = non_empty(std::mem::take(&mut self.tools));
        let max_iter = self.max_iter.take();
        Ok(SearchRequest {
            skills,
            tools,
            max_iter,
            query_type: self.query_type()?.unwrap_or(SearchType::GraphCompletion),
            datasets: non_empty(std::mem::take(&mut self.dataset)),
            dataset_ids: non_empty(self.dataset_id.iter().copied().map(DatasetId).collect()),
            options: self.options()?,
            verbose: self.verbose,
            ..SearchRequest::new(std::mem::take(&mut self.query))
        })
    }
}

/// `recall recall`.
pub(crate) async fn recall(who: Who<'_>, args: SearchArgs) -> Result<()> {
    let (request, output) = args.recall_request()?;
    let request = &request;
    // Validate before opening storage: bad input touches nothing.
    request.validate()?;
    let (app, user) = who.reader().await?.ok_or(RecallError::RecallPrecondition)?;
    let (results, explain) = app.recall_explained(&user, request).await?;
    if output.json {
        if output.explain {
            return print_json(&serde_json::json!({"results": results, "explain": explain}));
        }
        return print_json(&results);
    }
    if results.is_empty() {
        println!("No results.");
    }
    for (i, r) in results.iter().enumerate() {
        print_human(i + 1, r);
    }
    if output.explain {
        println!();
        print_explain(&explain);
    }
    Ok(())
}

/// `recall search`: the legacy search prints Cognee's backwards-compatible JSON.
pub(crate) async fn search(who: Who<'_>, args: SearchArgs) -> Result<()> {
    let request = args.search_request()?;
    request.validate()?;
    let (app, user) = who.reader().await?.ok_or(RecallError::SearchPrecondition)?;
    print_json(&app.search(&user, &request).await?)
}

fn print_explain(e: &RecallExplain) {
    println!("explain:");
    println!("  lanes: {}", e.lanes.join(", "));
    if let (Some(t), Some(by)) = (&e.search_type, &e.chosen_by) {
        let retried = e.retried_as.as_ref().map(|r| format!(", retried as {r}")).unwrap_or_default();
        println!("  search type: {t} (chosen by {by}{retried})");
    }
    if let Some(routing) = &e.dataset_routing {
        let outcome = serde_json::to_value(routing.outcome).ok();
        println!("  dataset routing: {}", outcome.as_ref().and_then(|v| v.as_str()).unwrap_or("-"));
        for s in &routing.scores {
            let distance = s.distance.map_or("no routing rows".to_string(), |d| format!("distance {d:.4}"));
            let mark = if s.selected { "selected" } else { "not selected" };
            println!("    {} ({}): {distance}, {mark}", s.dataset.name, s.dataset.id);
        }
    }
    if !e.datasets_searched.is_empty() {
        let widened = if e.widened { " (widened: the selection retrieved nothing)" } else { "" };
        println!("  datasets searched: {}{widened}", e.datasets_searched.join(", "));
    }
    if let Some(w) = &e.warmup {
        println!("  warm-up probe: {w}");
    }
    for t in &e.timings_ms {
        println!("  {:<18} {:>9.2} ms", t.stage, t.ms);
    }
}

fn print_human(n: usize, r: &RecallResponse) {
    match r {
        RecallResponse::Graph(e) | RecallResponse::Code(e) => {
            let score = e.score.map(|s| format!(" score {s:.4}")).unwrap_or_default();
            let source = match (e.metadata.get("document_name"), e.metadata.get("chunk_index")) {
                (Some(doc), Some(idx)) => format!(" — {} #{}", doc.as_str().unwrap_or_default(), idx),
                _ => String::new(),
            };
            let dataset = e.dataset_name.as_deref().unwrap_or("-");
            println!("{n}. [{} {}{score}] ({dataset}){source}", e.kind, e.search_type);
            if let Some(system) = &e.system_prompt {
                println!("   system prompt:");
                for line in system.lines() {
                    println!("   | {line}");
                }
                println!("   user prompt:");
            }
            for line in e.text.lines() {
                println!("   {line}");
            }
        }
        other => println!("{n}. [{}] {}", other.source(), other.text()),
    }
}
