//! `recall improve`: a dataset's answer ratings into its graph, and agent
//! lessons from sessions' trace steps.

use recall_api::ImproveRequest;
use recall_core::{RecallError, Result};

use super::{print_json, Target, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
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
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let Args { target, alpha, session_ids, json } = args;
    let target = target.get();
    let (app, user) = who.reader_of(&target).await?;
    let request = ImproveRequest { dataset: target, alpha, session_ids: session_ids.clone(), background: false };
    let outcome = app.improve(&user, request).await?;
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
