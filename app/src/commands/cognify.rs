//! `recall cognify`: build a dataset's pending items, refresh its indexes.

use recall_core::{RecallError, Result};

use super::{Bar, Target, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: Target,
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let target = args.target.get();
    let (app, user) = who.reader_of(&target).await?;
    let progress = Bar::new(false);
    let runs = app.cognify(&user, std::slice::from_ref(&target), false, &progress).await;
    progress.0.finish_and_clear();
    let outcome =
        runs?.pop().and_then(|run| run.outcome).ok_or_else(|| RecallError::backend_msg("cognify reported no run"))?;
    println!(
        "Cognified dataset '{}': {} item(s) built ({} chunk(s)), {} already built.",
        outcome.dataset_name, outcome.items_added, outcome.chunks_written, outcome.items_unchanged
    );
    Ok(())
}
