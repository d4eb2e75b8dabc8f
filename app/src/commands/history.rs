//! `recall history`: the caller's questions and the answers they got.

use recall_core::Result;

use super::{print_json, Who};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(who: Who<'_>, args: Args) -> Result<()> {
    let rows = match who.reader().await? {
        Some((app, user)) => app.history(&user).await?,
        None => Vec::new(),
    };
    if args.json {
        return print_json(&rows);
    }
    for r in rows {
        let who = if r.user == "user" { "Q" } else { "A" };
        println!("{who}: {}", r.text.replace('\n', "\n   "));
    }
    Ok(())
}
