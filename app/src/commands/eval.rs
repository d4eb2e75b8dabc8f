//! `recall eval`: retrieval quality on a corpus and its questions (docs/quality.md).

use std::path::PathBuf;

use recall::{build_engine, caller, OpenMode, Settings};
use recall_core::{RecallError, Result, SearchType};

use super::print_json;

#[derive(clap::Args)]
pub(crate) struct Args {
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

pub(crate) async fn run(settings: &Settings, email: Option<&str>, args: Args) -> Result<()> {
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
