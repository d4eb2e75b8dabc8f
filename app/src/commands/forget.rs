//! `recall forget`: a dataset, or one document of it (by name or data id).

use recall_api::{ForgetReport, ForgetRequest};
use recall_core::Result;

use super::{Target, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: Target,
    #[arg(long)]
    document: Option<String>,
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let target = args.target.get();
    let (app, user) = who.reader_of(&target).await?;
    let request = match &args.document {
        Some(doc) => ForgetRequest::Document { dataset: target, document: doc.clone() },
        None => ForgetRequest::Dataset(target),
    };
    match app.forget(&user, request).await? {
        ForgetReport::Document { outcome: out, .. } => println!(
            "Forgot document '{}' of dataset '{}' ({} node(s), {} edge(s) deleted).",
            out.document_name.or(args.document).unwrap_or_default(),
            out.dataset_name,
            out.nodes_deleted,
            out.edges_deleted
        ),
        ForgetReport::Dataset(gone) => println!("Forgot dataset '{}' ({}).", gone.name, gone.id),
        ForgetReport::Everything { datasets_removed } => println!("Forgot {datasets_removed} dataset(s)."),
    }
    Ok(())
}
