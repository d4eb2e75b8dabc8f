//! The `recall` command line: parses the command and hands it to its
//! module under `commands/` (each with its arguments beside its handler).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use commands::Who;
use recall::{Overrides, Settings};
use recall_core::Result;

mod commands;

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

#[derive(Subcommand)]
enum Command {
    /// Remember files (.txt, .md; directories are walked) or text in a dataset.
    Remember(commands::remember::Args),
    /// Ask memory a question.
    Recall(commands::recall::SearchArgs),
    /// Serve Cognee's HTTP API (docs/http.md) until Ctrl-C or SIGTERM.
    #[cfg(feature = "server")]
    Serve(commands::serve::Args),
    /// Serve the MCP tools (docs/mcp.md) over standard input and output,
    /// acting for the user of `--user`, until the client disconnects.
    #[cfg(feature = "mcp")]
    Mcp,
    /// The legacy search entry: the same options as `recall`, with
    /// GRAPH_COMPLETION as the default type instead of automatic routing.
    Search(commands::recall::SearchArgs),
    /// Your search history: each question and the answers it got, oldest first.
    History(commands::JsonOutput),
    /// Explain the automatic search-type choice for a question: prints
    /// {"search_type": …, "rule": …} (docs/routing.md).
    Route { query: String },
    /// Explain the skill gate for a question: prints
    /// {"fired": …, "score": …, "matched": [rule names], "fragments": […]} (docs/recall.md, "The skill gate (rules)").
    SkillGate { query: String },
    /// Skill playbooks (SKILL.md files) a dataset offers to procedure questions.
    #[command(subcommand)]
    Skills(commands::skills::SkillsCommand),
    /// Show the configured adapters and check that each answers.
    Doctor,
    /// List the datasets you own and those shared with you, with the owner
    /// and your permissions.
    Datasets(commands::JsonOutput),
    /// Re-run cognify on a dataset: process items not yet built, refresh the indexes.
    Cognify(commands::cognify::Args),
    /// Apply the ratings of a dataset's answers to its graph: the elements a
    /// well-rated answer used rank higher in recalls with --feedback-influence
    /// (docs/sessions.md). With --session-id, also learn agent lessons from
    /// those sessions' trace steps.
    Improve(commands::improve::Args),
    /// Re-embed a dataset's vectors with the configured embedding model, from
    /// the texts stored with them (after a model change; idempotent, resumes
    /// after a crash). Each collection moves whole, with every dataset in it.
    Reembed(commands::reembed::Args),
    /// Print a dataset's graph as JSON or Graphviz DOT.
    Graph(commands::graph::Args),
    /// Delete a dataset, or one document of it (by name or data id), with
    /// everything derived from it.
    Forget(commands::forget::Args),
    /// Give another user a permission on a dataset (you need `share` on it).
    Share(commands::share::Args),
    /// Take a permission on a dataset away from another user (you need `share` on it).
    Unshare(commands::share::Args),
    /// Session memory (docs/sessions.md): list sessions, show their turns,
    /// rate answers, read the guidance, delete a session.
    #[command(subcommand)]
    Session(commands::session::SessionCommand),
    /// Measure retrieval quality (docs/quality.md): remember a corpus, ask
    /// its questions with each search type, and report answer recall@1/5/10,
    /// MRR and latency (with --answers, also exact match and F1).
    Eval(commands::eval::Args),
    /// Users: create one, set a password (docs/auth.md).
    #[command(subcommand)]
    User(commands::user::UserCommand),
    /// API keys of the user the command acts for (--user): create (the key
    /// is shown once), list, revoke.
    #[command(subcommand, name = "api-key")]
    ApiKey(commands::api_key::ApiKeyCommand),
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
    if let Command::Recall(args) | Command::Search(args) = &cli.command {
        args.allow_prompt_file(&mut settings);
    }
    let settings = settings;
    let who = Who { settings: &settings, email: cli.user.as_deref() };
    match cli.command {
        Command::Remember(args) => commands::remember::run(who, args).await,
        Command::Recall(args) => commands::recall::recall(who, args).await,
        Command::Search(args) => commands::recall::search(who, args).await,
        #[cfg(feature = "server")]
        Command::Serve(args) => commands::serve::run(&settings, args).await,
        #[cfg(feature = "mcp")]
        Command::Mcp => commands::mcp::run(who).await,
        Command::Session(command) => commands::session::run(who.reader().await?, command).await,
        Command::Eval(args) => commands::eval::run(&settings, cli.user.as_deref(), args).await,
        Command::History(args) => commands::history::run(who, args).await,
        Command::Skills(command) => commands::skills::run(who, command).await,
        Command::SkillGate { query } => commands::route::skill_gate(&query),
        Command::Route { query } => commands::route::route(&query),
        Command::Doctor => commands::doctor::run(&settings).await,
        Command::Datasets(args) => commands::datasets::run(who, args).await,
        Command::Forget(args) => commands::forget::run(who, args).await,
        Command::Reembed(args) => commands::reembed::run(who, args).await,
        Command::Improve(args) => commands::improve::run(who, args).await,
        Command::Cognify(args) => commands::cognify::run(who, args).await,
        Command::Graph(args) => commands::graph::run(who, args).await,
        Command::Share(args) => commands::share::run(who, args, true).await,
        Command::Unshare(args) => commands::share::run(who, args, false).await,
        Command::User(command) => commands::user::run(who, command).await,
        Command::ApiKey(command) => commands::api_key::run(who, command).await,
    }
}
