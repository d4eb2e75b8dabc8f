//! `recall datasets`: the datasets you own and those shared with you.

use recall_core::Result;

use super::{print_json, JsonOutput, Who};

pub(crate) async fn run(who: Who<'_>, args: JsonOutput) -> Result<()> {
    let datasets = who.list(|app, user| async move { app.datasets(&user).await }).await?;
    if args.json {
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
