//! `recall api-key create|list|revoke`: the API keys of the user the
//! command acts for.

use clap::Subcommand;
use recall_core::{RecallError, Result};
use uuid::Uuid;

use super::{print_json, Who};

#[derive(Subcommand)]
pub(crate) enum ApiKeyCommand {
    /// Mint a key (64 hex characters, printed once: only its hash is stored).
    Create {
        /// A name to tell keys apart.
        #[arg(long)]
        name: Option<String>,
        /// Print {"key", "id", "label", "name"}.
        #[arg(long)]
        json: bool,
    },
    /// The keys' ids, labels (first 8 characters) and names.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by id.
    Revoke { id: Uuid },
}

pub(crate) async fn run(who: Who<'_>, command: ApiKeyCommand) -> Result<()> {
    match command {
        ApiKeyCommand::Create { name, json } => {
            let (app, user) = who.writer().await?;
            let created = app.create_api_key(&user, name.as_deref()).await?;
            if json {
                return print_json(&created);
            }
            println!("{}", created.key);
            println!("id {}  label {}  user {} — the key is shown only now.", created.id, created.label, user.email);
            Ok(())
        }
        ApiKeyCommand::List { json } => {
            let keys = who.list(|app, user| async move { app.api_keys(&user).await }).await?;
            if json {
                return print_json(&keys);
            }
            if keys.is_empty() {
                println!("No API keys.");
            }
            for k in keys {
                println!("{}  {}  {}", k.id, k.label, k.name.as_deref().unwrap_or("-"));
            }
            Ok(())
        }
        ApiKeyCommand::Revoke { id } => {
            let (app, user) =
                who.reader().await?.ok_or_else(|| RecallError::NotFound(format!("API key {id} not found.")))?;
            app.revoke_api_key(&user, id).await?;
            println!("Revoked API key {id}.");
            Ok(())
        }
    }
}
