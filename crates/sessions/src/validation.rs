//! The checks every session call makes before it touches a store
//! (docs/sessions.md, "Errors"): ids non-blank and bounded, counts positive,
//! scores 1..5. Failures are `SessionParameterValidationError`s (422).

use recall_core::{RecallError, Result};

pub use recall_core::session::MAX_SESSION_ID_BYTES;
/// The longest QA id accepted, in bytes.
pub const MAX_QA_ID_BYTES: usize = 128;

pub fn parameter_error(message: impl Into<String>) -> RecallError {
    RecallError::Validation { name: "SessionParameterValidationError", message: message.into() }
}

fn id(name: &str, value: &str, max: usize) -> Result<()> {
    if value.trim().is_empty() {
        return Err(parameter_error(format!("{name} must be a non-empty string.")));
    }
    if value.len() > max {
        return Err(parameter_error(format!("{name} is {} bytes long; the limit is {max}.", value.len())));
    }
    Ok(())
}

pub fn session_id(value: &str) -> Result<()> {
    recall_core::session::validate_session_id(value)
}

pub fn qa_id(value: &str) -> Result<()> {
    id("qa_id", value, MAX_QA_ID_BYTES)
}

pub fn last_n(value: Option<usize>) -> Result<()> {
    match value {
        Some(0) => Err(parameter_error("last_n must be a positive integer.")),
        _ => Ok(()),
    }
}

pub fn feedback_score(value: Option<i64>) -> Result<()> {
    match value {
        Some(s) if !(1..=5).contains(&s) => {
            Err(parameter_error(format!("feedback_score must be an integer from 1 to 5, got {s}.")))
        }
        _ => Ok(()),
    }
}

/// `text` cut to `max` characters, marked when cut (an oversized field is
/// kept, shortened, never rejected).
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… [truncated]", &text[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_scores_and_counts() {
        assert!(session_id("s1").is_ok());
        assert_eq!(session_id(" \t").err().map(|e| e.name()), Some("SessionParameterValidationError"));
        assert!(session_id(&"x".repeat(1 << 20)).is_err(), "a 1 MB session id");
        assert!(qa_id("").is_err());
        assert!(last_n(Some(0)).is_err() && last_n(Some(3)).is_ok() && last_n(None).is_ok());
        assert!(feedback_score(Some(0)).is_err() && feedback_score(Some(6)).is_err());
        assert!(feedback_score(Some(1)).is_ok() && feedback_score(Some(5)).is_ok() && feedback_score(None).is_ok());
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate("héllo", 10), "héllo");
        assert_eq!(truncate("héllo", 2), "hé… [truncated]");
    }
}
