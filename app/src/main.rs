//! The `recall` command line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use recall::{build_engine, caller, OpenMode, Overrides, Settings};
use recall_core::{
    DatasetId, DatasetRef, Permission, RecallError, RecallResponse, Result, SearchOptions, SearchType, User,
};
use recall_engine::{Engine, RecallRequest, RememberInput, RememberProgress, SearchRequest};
use uuid::Uuid;

mod session_cmd;

/// mimalloc: a search allocates and frees many small rows and JSON values
/// across threads, where it is markedly cheaper than the system allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "recall", version, about = "Recall: remember documents, then ask your memory questions.")]
struct Cli {
    /// Where the embedded default keeps its data [env: RECALL_DATA_DIR] [default: ./.recall]
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// A TOML file of settings (see config/default.toml).
    #[arg(long = "config-file", global = true)]
    config: Option<PathBuf>,
    /// The user the command acts for [default: DEFAULT_USER_EMAIL]. A user is
    /// created by its first write.
    #[arg(long, global = true, env = "RECALL_USER", value_name = "EMAIL")]
    user: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct EvalArgs {
    /// The documents: a JSON list of paragraphs or documents, or JSON Lines.
    #[arg(long)]
    corpus: PathBuf,
    /// The questions: a JSON list (or JSON Lines) of {"question", "answer"}.
    #[arg(long)]
    questions: PathBuf,
    /// The dataset the corpus is remembered into (kept: a second run reuses it).
    #[arg(long, default_value = "eval")]
    dataset: String,
    /// Search types to measure, comma-separated
    /// [default: CHUNKS,CHUNKS_LEXICAL,SUMMARIES,HYBRID_COMPLETION,GRAPH_COMPLETION].
    #[arg(long, value_delimiter = ',')]
    types: Vec<String>,
    /// Only the first N questions.
    #[arg(long)]
    limit: Option<usize>,
    /// Also generate answers with the configured LLM and score exact match and F1.
    #[arg(long)]
    answers: bool,
    /// retriever_specific_config sent with every recall, as a JSON object.
    #[arg(long = "config", id = "retriever_config", value_name = "JSON")]
    retriever_config: Option<String>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON report to this file.
    #[arg(long)]
    output: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Remember files (.txt, .md; directories are walked) or text in a dataset.
    Remember {
        #[command(flatten)]
        target: Target,
        /// Text to remember (repeatable).
        #[arg(long)]
        text: Vec<String>,
        /// Files or directories.
        paths: Vec<PathBuf>,
        /// Store the texts as one turn of this session instead of building
        /// them into the graph (docs/sessions.md).
        #[arg(long)]
        session_id: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Ask memory a question.
    Recall(SearchArgs),
    /// Serve Cognee's HTTP API (docs/http.md) until Ctrl-C or SIGTERM.
    #[cfg(feature = "server")]
    Serve {
        /// Address to listen on [env: HTTP_API_HOST] [default: 127.0.0.1]
        #[arg(long)]
        host: Option<String>,
        /// Port to listen on [env: HTTP_API_PORT] [default: 8000]
        #[arg(long)]
        port: Option<u16>,
    },
    /// Serve the MCP tools (docs/mcp.md) over standard input and output,
    /// acting for the user of `--user`, until the client disconnects.
    #[cfg(feature = "mcp")]
    Mcp,
    /// The legacy search entry: the same options as `recall`, with
    /// GRAPH_COMPLETION as the default type instead of automatic routing.
    Search(SearchArgs),
    /// Your search history: each question and the answers it got, oldest first.
    History {
        #[arg(long)]
        json: bool,
    },
    /// Explain the automatic search-type choice for a question: prints
    /// {"search_type": …, "rule": …} (docs/routing.md).
    Route { query: String },
    /// Explain the skill gate for a question: prints
    /// {"fired": …, "score": …, "matched": [rule names], "fragments": […]} (docs/recall.md, "The skill gate (rules)").
    SkillGate { query: String },
    /// Skill playbooks (SKILL.md files) a dataset offers to procedure questions.
    #[command(subcommand)]
    Skills(SkillsCommand),
    /// Show the configured adapters and check that each answers.
    Doctor,
    /// List the datasets you own and those shared with you, with the owner
    /// and your permissions.
    Datasets {
        #[arg(long)]
        json: bool,
    },
    /// Re-run cognify on a dataset: process items not yet built, refresh the indexes.
    Cognify {
        #[command(flatten)]
        target: Target,
    },
    /// Apply the ratings of a dataset's answers to its graph: the elements a
    /// well-rated answer used rank higher in recalls with --feedback-influence
    /// (docs/sessions.md). With --session-id, also learn agent lessons from
    /// those sessions' trace steps.
    Improve {
        #[command(flatten)]
        target: Target,
        /// How far one rating moves a weight, in (0, 1] [default: IMPROVE_FEEDBACK_ALPHA].
        #[arg(long)]
        alpha: Option<f64>,
        /// A session whose trace steps to read for agent lessons (repeatable).
        #[arg(long = "session-id")]
        session_ids: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Re-embed a dataset's vectors with the configured embedding model, from
    /// the texts stored with them (after a model change; idempotent, resumes
    /// after a crash). Each collection moves whole, with every dataset in it.
    Reembed {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        json: bool,
    },
    /// Print a dataset's graph as JSON or Graphviz DOT.
    Graph {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_enum, default_value = "json")]
        format: GraphFormat,
    },
    /// Delete a dataset, or one document of it (by name or data id), with
    /// everything derived from it.
    Forget {
        #[command(flatten)]
        target: Target,
        #[arg(long)]
        document: Option<String>,
    },
    /// Give another user a permission on a dataset (you need `share` on it).
    Share(ShareArgs),
    /// Take a permission on a dataset away from another user (you need `share` on it).
    Unshare(ShareArgs),
    /// Session memory (docs/sessions.md): list sessions, show their turns,
    /// rate answers, read the guidance, delete a session.
    #[command(subcommand)]
    Session(session_cmd::SessionCommand),
    /// Measure retrieval quality (docs/quality.md): remember a corpus, ask
    /// its questions with each search type, and report answer recall@1/5/10,
    /// MRR and latency (with --answers, also exact match and F1).
    Eval(EvalArgs),
    /// Users: create one, set a password (docs/auth.md).
    #[command(subcommand)]
    User(UserCommand),
    /// API keys of the user the command acts for (--user): create (the key
    /// is shown once), list, revoke.
    #[command(subcommand, name = "api-key")]
    ApiKey(ApiKeyCommand),
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create a user (an error if the email is taken).
    Create {
        email: String,
        /// Also set a password, read from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[arg(long)]
        json: bool,
    },
    /// Set the password of the user the command acts for (--user), read from
    /// the first line of standard input.
    Password,
}

#[derive(Subcommand)]
enum ApiKeyCommand {
    /// Mint a key (64 hex characters, printed once: only its hash is stored).
    Create {
        /// A name to tell keys apart.
        #[arg(long)]
        name: Option<String>,
        /// Print {"key", "id", "label", "name"}.
        #[arg(long)]
        json: bool,
    },
    /// The keys' ids, labels (first 8 characters) and names.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by id.
    Revoke { id: Uuid },
}

/// One dataset: by name (among your own datasets) or by id (any dataset
/// shared with you).
#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct Target {
    #[arg(long, short)]
    dataset: Option<String>,
    #[arg(long, value_name = "UUID")]
    dataset_id: Option<Uuid>,
}

impl Target {
    fn get(&self) -> DatasetRef {
        match (&self.dataset, self.dataset_id) {
            (_, Some(id)) => DatasetRef::Id(DatasetId(id)),
            (Some(name), None) => DatasetRef::Name(name.clone()),
            // clap's group makes one of them required.
            (None, None) => DatasetRef::Name(String::new()),
        }
    }
}

#[derive(clap::Args)]
struct ShareArgs {
    #[command(flatten)]
    target: Target,
    /// The user's email.
    #[arg(long = "with", value_name = "EMAIL")]
    with: String,
    /// read, write, delete or share.
    #[arg(long)]
    permission: String,
}

#[derive(Subcommand)]
enum SkillsCommand {
    /// Add skills: SKILL.md files, or directories searched for them. Adding a
    /// skill again (same name, same directory) replaces it.
    Add {
        #[command(flatten)]
        target: Target,
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// List a dataset's skills.
    List {
        #[command(flatten)]
        target: Target,
        /// Also print each skill's procedure.
        #[arg(long)]
        full: bool,
        #[arg(long)]
        json: bool,
    },
}

/// The options of `recall recall` and `recall search`.
#[derive(clap::Args)]
struct SearchArgs {
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
    #[arg(long, default_value_t = recall_engine::DEFAULT_TOP_K, allow_negative_numbers = true)]
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

/// A repeatable flag given no times is "not set".
fn non_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum GraphFormat {
    Json,
    Dot,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("RECALL_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    recall::close_at_exit();
    let outcome = run(cli).await;
    recall::close_databases().await;
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error [{}] (HTTP {}): {e}", e.name(), e.http_status());
            if let Some(hint) = e.remediation() {
                eprintln!("{hint}");
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<()> {
    let mut settings = Settings::load(cli.config.as_deref(), &Overrides { data_dir: cli.data_dir })?;
    // A prompt file named on this command line is the user's own: allow it.
    if let Command::Recall(args) | Command::Search(args) = &cli.command {
        if let Some(path) = args.system_prompt_path.as_deref().filter(|p| !recall_retrievers::prompts::is_builtin(p)) {
            settings.allow_prompt_file(Path::new(path));
        }
    }
    let settings = settings;
    let who = Who { settings: &settings, email: cli.user.as_deref() };
    match cli.command {
        Command::Remember { target, text, paths, session_id, json } => {
            remember(who, &target.get(), text, &paths, session_id.as_deref(), json).await
        }
        Command::Recall(args) => {
            let (request, output) = args.recall_request()?;
            recall(who, &request, output).await
        }
        Command::Search(args) => legacy_search(who, args.search_request()?).await,
        #[cfg(feature = "server")]
        Command::Serve { host, port } => recall::serve::serve(&settings, host.as_deref(), port).await,
        #[cfg(feature = "mcp")]
        Command::Mcp => {
            let (engine, user) = who.writer().await?;
            recall_mcp::RecallMcp::new(engine, user, recall::mcp_config(&settings)?).serve_stdio().await
        }
        Command::Session(command) => session_cmd::run(who.reader().await?, command).await,
        Command::Eval(args) => eval(&settings, cli.user.as_deref(), args).await,
        Command::History { json } => {
            let rows = match who.reader().await? {
                Some((engine, user)) => engine.search_history(&user).await?,
                None => Vec::new(),
            };
            if json {
                return print_json(&rows);
            }
            for r in rows {
                let who = if r.user == "user" { "Q" } else { "A" };
                println!("{who}: {}", r.text.replace('\n', "\n   "));
            }
            Ok(())
        }
        Command::Skills(SkillsCommand::Add { target, paths, json }) => {
            let (engine, user) = who.writer().await?;
            let (dataset, added) = engine.add_skills(&user, target.get(), &paths).await?;
            if json {
                return print_json(
                    &serde_json::json!({"dataset": dataset.name, "dataset_id": dataset.id, "skills": added}),
                );
            }
            for s in &added {
                println!("added skill '{}' ({}) from {}", s.name, s.id, s.source_file);
            }
            println!("{} skill(s) in dataset '{}'", added.len(), dataset.name);
            Ok(())
        }
        Command::Skills(SkillsCommand::List { target, full, json }) => {
            let target = target.get();
            let (engine, user) = who.reader_of(&target).await?;
            let skills = engine.list_skills(&user, &target).await?;
            if json {
                let rows: Vec<serde_json::Value> = skills
                    .iter()
                    .map(|s| {
                        let mut m = recall_skills::project_metadata(&s.to_payload(), "");
                        if full {
                            m.insert("procedure".into(), serde_json::Value::String(s.procedure.clone()));
                        }
                        serde_json::Value::Object(m)
                    })
                    .collect();
                return print_json(&rows);
            }
            if skills.is_empty() {
                println!("No skills in dataset '{}'.", target.label());
            }
            for s in &skills {
                println!("{} ({}): {}", s.name, s.id, s.description);
                if full {
                    for line in s.procedure.lines() {
                        println!("   | {line}");
                    }
                }
            }
            Ok(())
        }
        Command::SkillGate { query } => print_json(&recall_skills::should_search_skills(&query)),
        Command::Route { query } => {
            let decision = recall_routing::route_query(&query);
            print_json(&serde_json::json!({"search_type": decision.search_type, "rule": decision.rule}))
        }
        Command::Doctor => {
            let (engine, active) = build_engine(&settings, OpenMode::Create).await?;
            println!("relational: {}", active.relational);
            println!("graph:      {}", active.graph);
            println!("vector:     {}", active.vector);
            println!("embedder:   {}", active.embedder);
            println!("llm:        {}", active.llm.as_deref().unwrap_or("none (recall defaults to CHUNKS)"));
            let mut healthy = true;
            for (name, status) in recall::doctor(&engine).await {
                match status {
                    Ok(()) => println!("ok    {name}"),
                    Err(e) => {
                        healthy = false;
                        println!("FAIL  {name}: {e}");
                    }
                }
            }
            if healthy {
                Ok(())
            } else {
                Err(RecallError::backend_msg("an adapter failed its health check"))
            }
        }
        Command::Datasets { json } => {
            let datasets = match who.reader().await? {
                Some((engine, user)) => engine.datasets(&user).await?,
                None => Vec::new(),
            };
            if json {
                print_json(&datasets)?;
            } else if datasets.is_empty() {
                println!("No datasets yet. Remember something first: recall remember --dataset NAME FILE…");
            } else {
                for d in datasets {
                    let permissions: Vec<&str> = d.permissions.iter().map(|p| p.as_str()).collect();
                    let owner = if d.owned {
                        "owned".to_string()
                    } else {
                        format!("shared by {}", d.owner_email.as_deref().unwrap_or("an unknown user"))
                    };
                    println!("{}  {}  ({owner}; {})", d.dataset.id, d.dataset.name, permissions.join(", "));
                }
            }
            Ok(())
        }
        Command::Forget { target, document } => {
            let target = target.get();
            let (engine, user) = who.reader_of(&target).await?;
            match document {
                Some(doc) => {
                    let out = engine.forget_document(&user, &target, &doc).await?;
                    println!(
                        "Forgot document '{}' of dataset '{}' ({} node(s), {} edge(s) deleted).",
                        out.document_name.unwrap_or(doc),
                        out.dataset_name,
                        out.nodes_deleted,
                        out.edges_deleted
                    );
                }
                None => {
                    let gone = engine.forget_dataset(&user, &target).await?;
                    println!("Forgot dataset '{}' ({}).", gone.name, gone.id);
                }
            }
            Ok(())
        }
        Command::Reembed { target, json } => {
            let (engine, user) = who.writer().await?;
            let progress = Bar::new(json);
            progress.0.set_prefix("reembed");
            let outcome = engine.reembed(&user, target.get(), &progress).await;
            progress.0.finish_and_clear();
            let outcome = outcome?;
            if json {
                return print_json(&outcome);
            }
            for c in &outcome.collections {
                match c.status.as_str() {
                    "current" => println!("{}: already on '{}'", c.name, outcome.model),
                    _ => println!(
                        "{}: {} row(s) moved from '{}' to '{}' ({} embedded now, {} kept from an interrupted run)",
                        c.name, c.rows, c.from_model, outcome.model, c.embedded, c.resumed
                    ),
                }
            }
            if outcome.collections.is_empty() {
                println!("Dataset '{}' has no vectors yet.", outcome.dataset_name);
            }
            Ok(())
        }
        Command::Improve { target, alpha, session_ids, json } => {
            let target = target.get();
            let (engine, user) = who.reader_of(&target).await?;
            let outcome = engine.improve_sessions(&user, &target, alpha, &session_ids).await?;
            if json {
                return print_json(&outcome);
            }
            let stage = &outcome.stages[0];
            let count = |k: &str| stage.counts.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
            match (stage.status.as_str(), &stage.error) {
                (_, Some(error)) => return Err(RecallError::backend_msg(format!("improve failed: {error}"))),
                ("skipped", _) => println!("Nothing to improve: session memory is off (CACHING=false)."),
                _ => println!(
                    "Improved dataset '{}': {} rating(s) applied ({} node and {} edge weight(s) moved).",
                    outcome.dataset_name,
                    count("rated"),
                    count("nodes"),
                    count("edges")
                ),
            }
            if let Some(lessons) = outcome.stages.iter().find(|s| s.stage == "extract_agent_context") {
                match (lessons.status.as_str(), lessons.counts.get("lessons").and_then(serde_json::Value::as_u64)) {
                    ("completed", Some(n)) => println!("Agent lessons stored or confirmed from traces: {n}."),
                    ("skipped", _) if !session_ids.is_empty() => {
                        println!("No agent lessons: {}.", lessons.reason.as_deref().unwrap_or("skipped"))
                    }
                    _ => {}
                }
            }
            Ok(())
        }
        Command::Cognify { target } => {
            let target = target.get();
            let (engine, user) = who.reader_of(&target).await?;
            let progress = Bar::new(false);
            let outcome = engine.cognify(&user, &target, &progress).await;
            progress.0.finish_and_clear();
            let outcome = outcome?;
            println!(
                "Cognified dataset '{}': {} item(s) built ({} chunk(s)), {} already built.",
                outcome.dataset_name, outcome.items_added, outcome.chunks_written, outcome.items_unchanged
            );
            Ok(())
        }
        Command::Graph { target, format } => {
            let target = target.get();
            let (engine, user) = who.reader_of(&target).await?;
            let (_, pages) = engine.dataset_graph_pages(&user, &target, recall_engine::EXPORT_PAGE).await?;
            let shape = match format {
                GraphFormat::Json => recall_api::GraphShape::Json,
                GraphFormat::Dot => recall_api::GraphShape::Dot,
            };
            write_graph(recall_api::GraphExport::new(pages, shape)).await
        }
        Command::Share(args) => share(who, args, true).await,
        Command::Unshare(args) => share(who, args, false).await,
        Command::User(command) => user(who, command).await,
        Command::ApiKey(command) => api_key(who, command).await,
    }
}

/// Who a command acts for, and how to open the engine for it.
#[derive(Clone, Copy)]
struct Who<'a> {
    settings: &'a Settings,
    email: Option<&'a str>,
}

impl Who<'_> {
    /// For writes: storage and the user are created when missing.
    async fn writer(self) -> Result<(Engine, User)> {
        let (engine, _) = build_engine(self.settings, OpenMode::Create).await?;
        let user = caller(&engine, self.settings, self.email, true).await?;
        let user = user.ok_or_else(|| RecallError::backend_msg("the user vanished after it was created"))?;
        Ok((engine, user))
    }

    /// For reads: `None` when there is no storage or no such user yet (they
    /// can own nothing and were shared nothing).
    async fn reader(self) -> Result<Option<(Engine, User)>> {
        let engine = match build_engine(self.settings, OpenMode::ExistingOnly).await {
            Ok((engine, _)) => engine,
            Err(RecallError::RecallPrecondition) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(caller(&engine, self.settings, self.email, false).await?.map(|user| (engine, user)))
    }

    /// For commands on one existing dataset: no storage or no user means the
    /// dataset is not there for this caller (404 by name, 403 by id).
    async fn reader_of(self, target: &DatasetRef) -> Result<(Engine, User)> {
        self.reader().await?.ok_or_else(|| match target {
            DatasetRef::Name(name) => RecallError::DatasetNotFound { missing: vec![name.clone()] },
            DatasetRef::Id(_) => RecallError::permission_denied(Permission::Read),
        })
    }
}

/// The first line of standard input, without its line end.
fn password_from_stdin() -> Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| RecallError::invalid_input(format!("cannot read the password from standard input: {e}")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// `recall user …`.
async fn user(who: Who<'_>, command: UserCommand) -> Result<()> {
    match command {
        UserCommand::Create { email, password_stdin, json } => {
            let email = email.trim().to_string();
            recall::validate_email(&email)?;
            let password = if password_stdin { Some(password_from_stdin()?) } else { None };
            let (engine, _) = build_engine(who.settings, OpenMode::Create).await?;
            if engine.relational().users.find_user(&email).await?.is_some() {
                return Err(RecallError::invalid_input(format!("User '{email}' already exists.")));
            }
            let created = engine.relational().users.ensure_user(&email).await?;
            if let Some(password) = password {
                engine.set_password(&created, &password).await?;
            }
            if json {
                return print_json(&serde_json::json!({"id": created.id, "email": created.email}));
            }
            println!("Created user {} ({}).", created.email, created.id);
            Ok(())
        }
        UserCommand::Password => {
            let password = password_from_stdin()?;
            let (engine, user) = who.writer().await?;
            engine.set_password(&user, &password).await?;
            println!("Password set for {}.", user.email);
            Ok(())
        }
    }
}

/// `recall api-key …`.
async fn api_key(who: Who<'_>, command: ApiKeyCommand) -> Result<()> {
    match command {
        ApiKeyCommand::Create { name, json } => {
            let (engine, user) = who.writer().await?;
            let created = engine.create_api_key(&user, name.as_deref()).await?;
            if json {
                return print_json(&created);
            }
            println!("{}", created.key);
            println!("id {}  label {}  user {} — the key is shown only now.", created.id, created.label, user.email);
            Ok(())
        }
        ApiKeyCommand::List { json } => {
            let keys = match who.reader().await? {
                Some((engine, user)) => engine.api_keys(&user).await?,
                None => Vec::new(),
            };
            if json {
                return print_json(&keys);
            }
            if keys.is_empty() {
                println!("No API keys.");
            }
            for k in keys {
                println!("{}  {}  {}", k.id, k.label, k.name.as_deref().unwrap_or("-"));
            }
            Ok(())
        }
        ApiKeyCommand::Revoke { id } => {
            let (engine, user) =
                who.reader().await?.ok_or_else(|| RecallError::NotFound(format!("API key {id} not found.")))?;
            engine.revoke_api_key(&user, id).await?;
            println!("Revoked API key {id}.");
            Ok(())
        }
    }
}

/// `recall share` / `recall unshare`.
async fn share(who: Who<'_>, args: ShareArgs, grant: bool) -> Result<()> {
    let permission: Permission = args.permission.trim().parse()?;
    recall::validate_email(args.with.trim())?;
    let target = args.target.get();
    let (engine, user) = who.reader_of(&target).await?;
    let grantee = engine.relational().users.find_user(args.with.trim()).await?.ok_or_else(|| {
        RecallError::NotFound(format!(
            "User '{}' not found. A user exists after its first write (recall --user {} remember …).",
            args.with.trim(),
            args.with.trim()
        ))
    })?;
    let dataset = if grant {
        engine.share(&user, &target, &grantee, permission).await?
    } else {
        engine.unshare(&user, &target, &grantee, permission).await?
    };
    let verb = if grant { "Granted" } else { "Revoked" };
    let prep = if grant { "to" } else { "from" };
    println!("{verb} {permission} on dataset '{}' ({}) {prep} {}.", dataset.name, dataset.id, grantee.email);
    Ok(())
}

/// Expands directories into their .txt/.md files (sorted); files stay as given,
/// so an unsupported file named explicitly is rejected by remember.
fn expand_paths(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = walkdir::WalkDir::new(path)
                .into_iter()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_file() && is_supported(e.path()))
                .map(|e| e.into_path())
                .collect();
            found.sort();
            out.extend(found);
        } else {
            out.push(path.clone());
        }
    }
    Ok(out)
}

fn is_supported(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref(), Some("txt" | "md"))
}

/// One progress bar, reset at each stage ("add", then "cognify").
struct Bar(ProgressBar);

impl Bar {
    fn new(hidden: bool) -> Self {
        let bar = ProgressBar::new(0);
        if hidden {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        if let Ok(style) = ProgressStyle::with_template("{prefix:>8} {bar:30} {pos}/{len} {msg}") {
            bar.set_style(style);
        }
        Self(bar)
    }
}

impl recall_engine::ReembedProgress for Bar {
    fn collection(&self, name: &str, total: usize, done: usize) {
        self.0.set_message(name.to_string());
        self.0.set_length(total as u64);
        self.0.set_position(done as u64);
    }

    fn embedded(&self, rows: usize) {
        self.0.inc(rows as u64);
    }
}

impl RememberProgress for Bar {
    fn stage(&self, name: &str, total: usize) {
        self.0.set_prefix(name.to_string());
        self.0.set_length(total as u64);
        self.0.set_position(0);
    }

    fn item_done(&self, name: &str) {
        self.0.set_message(name.to_string());
        self.0.inc(1);
    }
}

async fn remember(
    who: Who<'_>,
    dataset: &DatasetRef,
    text: Vec<String>,
    paths: &[PathBuf],
    session_id: Option<&str>,
    json: bool,
) -> Result<()> {
    let mut inputs: Vec<RememberInput> = text.into_iter().map(RememberInput::text).collect();
    inputs.extend(expand_paths(paths)?.into_iter().map(RememberInput::File));
    if inputs.is_empty() {
        return Err(RecallError::invalid_input("Nothing to remember: pass files, directories or --text."));
    }
    // Bad input is refused before storage is even opened.
    recall_engine::check_inputs(&inputs)?;
    let (engine, user) = who.writer().await?;
    if let Some(session_id) = session_id {
        let stored = engine.remember_in_session(&user, dataset, session_id, &inputs).await?;
        if json {
            return print_json(&serde_json::json!({
                "status": "session_stored", "dataset_name": stored.name, "dataset_id": stored.id,
                "session_ids": [session_id],
            }));
        }
        println!("Stored {} text(s) as one turn of session '{session_id}' (dataset '{}').", inputs.len(), stored.name);
        return Ok(());
    }
    let progress = Bar::new(json || inputs.len() < 2);
    let outcome = engine.remember_with_progress(&user, dataset, &inputs, &progress).await;
    progress.0.finish_and_clear();
    let outcome = outcome?;
    if json {
        return print_json(&outcome);
    }
    println!(
        "Remembered {} item(s) in dataset '{}' ({} chunk(s) written, {} already remembered).",
        outcome.items_added, outcome.dataset_name, outcome.chunks_written, outcome.items_unchanged
    );
    Ok(())
}

async fn recall(who: Who<'_>, request: &RecallRequest, output: Output) -> Result<()> {
    // Validate before opening storage: bad input touches nothing.
    request.validate()?;
    let (engine, user) = who.reader().await?.ok_or(RecallError::RecallPrecondition)?;
    let (results, explain) = engine.recall_explained(&user, request).await?;
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

/// The legacy search prints Cognee's backwards-compatible JSON.
async fn legacy_search(who: Who<'_>, request: SearchRequest) -> Result<()> {
    request.validate()?;
    let (engine, user) = who.reader().await?.ok_or(RecallError::SearchPrecondition)?;
    let payloads = engine.search(&user, &request).await?;
    print_json(&recall_api::search_results(&payloads, request.verbose, engine.settings().access_control))
}

fn print_explain(e: &recall_engine::RecallExplain) {
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

/// Streams an export to stdout a page at a time. A reader that closes the
/// pipe early (`recall graph | head`) ends it quietly.
async fn write_graph(mut export: recall_api::GraphExport) -> Result<()> {
    use std::io::Write;
    fn quiet_pipe(e: std::io::Error) -> Result<()> {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Ok(())
        } else {
            Err(RecallError::backend(e))
        }
    }
    let mut out = std::io::BufWriter::new(std::io::stdout());
    while let Some(piece) = export.next_piece().await? {
        if let Err(e) = out.write_all(piece.as_bytes()) {
            return quiet_pipe(e);
        }
    }
    out.flush().or_else(quiet_pipe)
}

pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let s = serde_json::to_string_pretty(value).map_err(|e| RecallError::backend_msg(e.to_string()))?;
    println!("{s}");
    Ok(())
}

async fn eval(settings: &Settings, email: Option<&str>, args: EvalArgs) -> Result<()> {
    let types = if args.types.is_empty() {
        recall::eval::DEFAULT_TYPES.to_vec()
    } else {
        args.types.iter().map(|t| t.trim().parse()).collect::<Result<Vec<SearchType>>>()?
    };
    let retriever_config = match args.retriever_config.as_deref() {
        None => serde_json::Map::new(),
        Some(text) => match serde_json::from_str(text) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => return Err(RecallError::invalid_input("--config takes a JSON object")),
        },
    };
    // The questions are independent: no session turns, no search history.
    let mut settings = settings.clone();
    settings.caching = false;
    settings.log_search_history = false;
    let (engine, active) = build_engine(&settings, OpenMode::Create).await?;
    let user = caller(&engine, &settings, email, true)
        .await?
        .ok_or_else(|| RecallError::backend_msg("the user vanished while it was created"))?;
    let config = recall::eval::EvalConfig {
        corpus: args.corpus,
        questions: args.questions,
        dataset: args.dataset,
        types,
        limit: args.limit,
        answers: args.answers,
        retriever_config,
        progress: !args.json,
    };
    let report = recall::eval::run(&engine, &user, &config, &active).await?;
    if let Some(path) = &args.output {
        let text = serde_json::to_string_pretty(&report).map_err(RecallError::backend)?;
        std::fs::write(path, text + "\n")
            .map_err(|e| RecallError::invalid_input(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        return print_json(&report);
    }
    print!("{}", recall::eval::render_table(&report));
    Ok(())
}
