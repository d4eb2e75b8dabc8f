//! `recall remember`: files, directories or texts into a dataset's graph,
//! or into a session.

use std::path::{Path, PathBuf};

use recall_api::{Improvement, RememberInput, RememberReport, RememberRequest};
use recall_core::{RecallError, Result};

use super::{print_json, Bar, Target, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
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
    /// Skip the improve that follows the build (it applies the dataset's
    /// answer ratings; docs/application.md).
    #[arg(long)]
    no_self_improvement: bool,
    #[arg(long)]
    json: bool,
}

impl Args {
    fn request(self) -> Result<RememberRequest> {
        let mut inputs: Vec<RememberInput> = self.text.into_iter().map(RememberInput::text).collect();
        inputs.extend(expand_paths(&self.paths).into_iter().map(RememberInput::File));
        if inputs.is_empty() {
            return Err(RecallError::invalid_input("Nothing to remember: pass files, directories or --text."));
        }
        let mut request = RememberRequest::new(self.target.get(), inputs);
        request.session_id = self.session_id;
        request.self_improvement = !self.no_self_improvement;
        Ok(request)
    }
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let json = args.json;
    let request = args.request()?;
    // Bad input is refused before storage is even opened.
    request.check()?;
    let (app, user) = who.writer().await?;
    let progress = Bar::new(json || request.inputs.len() < 2 || request.session_id.is_some());
    let report = app.remember(&user, request, &progress).await;
    progress.0.finish_and_clear();
    match report? {
        RememberReport::SessionStored { dataset, session_id, texts } => {
            if json {
                return print_json(&serde_json::json!({
                    "status": "session_stored", "dataset_name": dataset.name, "dataset_id": dataset.id,
                    "session_ids": [session_id],
                }));
            }
            println!("Stored {texts} text(s) as one turn of session '{session_id}' (dataset '{}').", dataset.name);
        }
        RememberReport::Completed { outcome, improvement } => {
            if let Some(Improvement::Failed(e)) = improvement {
                eprintln!("warning: the improve after the remember failed: {e}");
            }
            if json {
                return print_json(&outcome);
            }
            println!(
                "Remembered {} item(s) in dataset '{}' ({} chunk(s) written, {} already remembered).",
                outcome.items_added, outcome.dataset_name, outcome.chunks_written, outcome.items_unchanged
            );
        }
        // The CLI never asks for a background run: its process would end first.
        RememberReport::Running { dataset } => {
            println!("Remembering into dataset '{}' in the background.", dataset.name)
        }
    }
    Ok(())
}

/// Expands directories into their .txt/.md files (sorted); files stay as given,
/// so an unsupported file named explicitly is rejected by remember.
fn expand_paths(paths: &[PathBuf]) -> Vec<PathBuf> {
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
    out
}

fn is_supported(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref(), Some("txt" | "md"))
}
