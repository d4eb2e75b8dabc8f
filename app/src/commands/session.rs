//! `recall session …`: the caller's session memory (docs/sessions.md).

use clap::Subcommand;
use recall_api::Application;
use recall_core::{RecallError, Result, User};

use super::print_json;

#[derive(Subcommand)]
pub(crate) enum SessionCommand {
    /// Your sessions, most recently active first.
    List {
        #[arg(long)]
        json: bool,
    },
    /// A session's QA turns, oldest first: id, time, question, answer, feedback.
    Show {
        session_id: String,
        /// Only the newest N turns.
        #[arg(long, value_name = "N")]
        last: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Rate an answer (1 to 5) and/or comment on it.
    Feedback {
        session_id: String,
        qa_id: String,
        #[arg(long)]
        score: Option<i64>,
        #[arg(long)]
        text: Option<String>,
    },
    /// Remove an answer's rating and comment.
    DeleteFeedback { session_id: String, qa_id: String },
    /// The session's active guidance, as a completion reads it.
    Guidance {
        session_id: String,
        /// qa (learned from conversation turns) or agent (from agent traces).
        #[arg(long, default_value = "qa")]
        profile: String,
    },
    /// Delete a session and everything in it.
    Delete { session_id: String },
}

/// Runs a session command for the caller (`None`: nothing was ever stored,
/// so there are no sessions).
pub(crate) async fn run(reader: Option<(Application, User)>, command: SessionCommand) -> Result<()> {
    if let SessionCommand::Guidance { profile, .. } = &command {
        recall_sessions::guidance::Profile::parse(profile)?;
    }
    let Some((app, user)) = reader else {
        return match command {
            SessionCommand::List { json: true } | SessionCommand::Show { json: true, .. } => print_json(&[(); 0]),
            SessionCommand::Feedback { session_id, qa_id, .. }
            | SessionCommand::DeleteFeedback { session_id, qa_id } => Err(missing(&qa_id, &session_id)),
            _ => Ok(()),
        };
    };
    match command {
        SessionCommand::List { json } => {
            let listed = app.sessions(&user).await?;
            if json {
                return print_json(&listed);
            }
            if listed.is_empty() {
                println!("No sessions yet.");
            }
            for s in listed {
                println!(
                    "{}  {} turn(s), {} trace step(s), last active {}",
                    s.session_id,
                    s.qa_count,
                    s.trace_count,
                    recall_api::dto::iso_utc(s.updated_at)
                );
            }
            Ok(())
        }
        SessionCommand::Show { session_id, last, json } => {
            let entries = app.session_turns(&user, &session_id, last).await?;
            if json {
                return print_json(&entries);
            }
            for e in entries {
                println!("[{}] {}", e.time, e.qa_id);
                println!("Q: {}", e.question.replace('\n', "\n   "));
                println!("A: {}", e.answer.replace('\n', "\n   "));
                if e.feedback_score.is_some() || e.feedback_text.is_some() {
                    let score = e.feedback_score.map(|s| format!("{s}/5")).unwrap_or_default();
                    println!("feedback: {score} {}", e.feedback_text.unwrap_or_default().trim());
                }
                println!();
            }
            Ok(())
        }
        SessionCommand::Feedback { session_id, qa_id, score, text } => {
            if score.is_none() && text.is_none() {
                return Err(RecallError::invalid_input("give --score N (1 to 5), --text T, or both"));
            }
            if !app.rate_answer(&user, &session_id, &qa_id, text, score).await? {
                return Err(missing(&qa_id, &session_id));
            }
            println!("Feedback recorded on {qa_id}.");
            Ok(())
        }
        SessionCommand::DeleteFeedback { session_id, qa_id } => {
            if !app.unrate_answer(&user, &session_id, &qa_id).await? {
                return Err(missing(&qa_id, &session_id));
            }
            println!("Feedback removed from {qa_id}.");
            Ok(())
        }
        SessionCommand::Guidance { session_id, profile } => {
            for entry in app.session_guidance(&user, &session_id, &profile).await? {
                println!("{}", entry.content);
            }
            Ok(())
        }
        SessionCommand::Delete { session_id } => {
            if app.delete_session(&user, &session_id).await? {
                println!("Deleted session '{session_id}'.");
            } else {
                println!("No session '{session_id}'.");
            }
            Ok(())
        }
    }
}

fn missing(qa_id: &str, session_id: &str) -> RecallError {
    RecallError::NotFound(format!("QA entry '{qa_id}' was not found in session '{session_id}'."))
}
