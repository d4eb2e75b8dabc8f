//! `recall reembed`: a dataset's vectors with the configured embedding model.

use recall_core::Result;

use super::{print_json, Bar, Target, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: Target,
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let (app, user) = who.writer().await?;
    let progress = Bar::new(args.json);
    progress.0.set_prefix("reembed");
    let outcome = app.reembed(&user, &args.target.get(), &progress).await;
    progress.0.finish_and_clear();
    let outcome = outcome?;
    if args.json {
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
