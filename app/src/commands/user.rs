//! `recall user create|password`.

use clap::Subcommand;
use recall_core::{RecallError, Result};

use super::{print_json, Who};

#[derive(Subcommand)]
pub(crate) enum UserCommand {
    /// Create a user (an error if the email is taken).
    Create {
        email: String,
        /// Also set a password, read from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[arg(long)]
        json: bool,
    },
    /// Set the password of the user the command acts for (--user), read from
    /// the first line of standard input.
    Password,
}

/// The first line of standard input, without its line end.
fn password_from_stdin() -> Result<String> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| RecallError::invalid_input(format!("cannot read the password from standard input: {e}")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

pub(crate) async fn run(who: Who<'_>, command: UserCommand) -> Result<()> {
    match command {
        UserCommand::Create { email, password_stdin, json } => {
            let email = email.trim().to_string();
            recall::validate_email(&email)?;
            let password = if password_stdin { Some(password_from_stdin()?) } else { None };
            let created = who.anyone().await?.create_user(&email, password.as_deref()).await?;
            if json {
                return print_json(&serde_json::json!({"id": created.id, "email": created.email}));
            }
            println!("Created user {} ({}).", created.email, created.id);
            Ok(())
        }
        UserCommand::Password => {
            let password = password_from_stdin()?;
            let (app, user) = who.writer().await?;
            app.set_password(&user, &password).await?;
            println!("Password set for {}.", user.email);
            Ok(())
        }
    }
}
