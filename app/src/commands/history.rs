//! `recall history`: the caller's questions and the answers they got.

use recall_core::Result;

use super::{print_json, JsonOutput, Who};

pub(crate) async fn run(who: Who<'_>, args: JsonOutput) -> Result<()> {
    let rows = who.list(|app, user| async move { app.history(&user).await }).await?;
    if args.json {
        return print_json(&rows);
    }
    for r in rows {
        let who = if r.user == "user" { "Q" } else { "A" };
        println!("{who}: {}", r.text.replace('\n', "\n   "));
    }
    Ok(())
}
