//! Turn analysis (docs/sessions.md, "Turn analysis"): one structured LLM
//! call reads the user's message against the previous turn, for a rewrite
//! of the question, guidance the user states, judgements of the guidance
//! served last time, and a rating of the previous answer.

use recall_core::session::{ContextRating, GuidanceCandidate, QaEntry, TurnAnalysis};
use serde_json::{json, Value};

use crate::guidance::{GuidanceEntry, MAX_CONTENT_CHARS};

/// The schema's name in the structured-output request.
pub const SCHEMA_NAME: &str = "SessionTurnAnalysis";

/// At most this many ratings and candidates are taken from one analysis.
pub const MAX_ITEMS: usize = 3;

/// The system prompt of the analysis.
pub const SYSTEM_PROMPT: &str = "You read one message a user sent to an assistant in an ongoing conversation, \
and describe it as JSON.

- query_to_answer: the question or request the assistant should answer, rewritten to stand on its own using the \
previous question and answer when the message refers to them; null when the message asks nothing (thanks, \
feedback, a statement of preference).
- response_to_user: when query_to_answer is null, a short natural reply to the message; otherwise null.
- candidate_context_updates: up to three lasting instructions the user states for the rest of the conversation, \
each with a section (goals: what the user wants to achieve; rules: constraints the answers must follow; \
preferences: style or format the user likes; lessons_learned: what went wrong before and must not happen again), \
the instruction in at most 280 characters, and your confidence from 0 to 1 that the user means it to last. Leave \
the list empty when the message states none.
- served_context_ratings: for guidance entries listed under SESSION CONTEXT ENTRIES, up to three judgements: \
helpful when the user's reaction shows the entry helped the previous answer, harmful when it hurt it. Use only the \
listed ids.
- previous_answer_rating: when the message reacts to the previous answer, how good the user found it, from 1 (bad) \
to 5 (excellent); null otherwise.";

/// The JSON schema of [`TurnAnalysis`] (strict: every field present, nulls allowed).
pub fn schema() -> Value {
    let nullable = |t: &str| json!({"type": [t, "null"]});
    json!({
        "type": "object",
        "properties": {
            "response_to_user": nullable("string"),
            "query_to_answer": nullable("string"),
            "served_context_ratings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "entry_id": {"type": "string"},
                        "rating": {"type": "string", "enum": ["helpful", "harmful"]}
                    },
                    "required": ["entry_id", "rating"],
                    "additionalProperties": false
                }
            },
            "candidate_context_updates": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "section": {"type": "string", "enum": ["goals", "rules", "preferences", "lessons_learned"]},
                        "content": {"type": "string"},
                        "confidence": {"type": "number"}
                    },
                    "required": ["section", "content", "confidence"],
                    "additionalProperties": false
                }
            },
            "previous_answer_rating": nullable("integer")
        },
        "required": ["response_to_user", "query_to_answer", "served_context_ratings",
                     "candidate_context_updates", "previous_answer_rating"],
        "additionalProperties": false
    })
}

/// The analysis's input: the message, then what it may react to.
pub fn input(message: &str, previous: Option<&QaEntry>, served: &[GuidanceEntry]) -> String {
    let mut out = format!("CURRENT USER MESSAGE:\n{message}");
    if let Some(previous) = previous {
        out.push_str(&format!("\n\nPREVIOUS QUESTION:\n{}", previous.question));
        out.push_str(&format!("\n\nPREVIOUS ANSWER:\n{}", previous.answer));
    }
    if !served.is_empty() {
        out.push_str("\n\nSESSION CONTEXT ENTRIES SERVED TO THE PREVIOUS ANSWER (id: content):");
        for e in served {
            out.push_str(&format!("\n{}: {}", e.id, e.content));
        }
    }
    out
}

fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// A guidance candidate as a model wrote it (`section`, `content`,
/// `confidence`); `None` when a field is missing, blank or of another type.
pub fn candidate(value: &Value) -> Option<GuidanceCandidate> {
    Some(GuidanceCandidate {
        section: text(value.get("section"))?,
        content: text(value.get("content"))?,
        confidence: value.get("confidence").and_then(Value::as_f64)?,
    })
}

/// The model's answer read leniently: blank strings are null, a rating
/// outside 1..5 is null, unusable items are dropped, at most three of each
/// list are kept, ratings only for `served_ids`.
pub fn parse(value: &Value, served_ids: &[String]) -> TurnAnalysis {
    let items = |key: &str| value.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let ratings = items("served_context_ratings")
        .iter()
        .filter_map(|r| {
            let entry_id = text(r.get("entry_id"))?;
            let rating = text(r.get("rating")).filter(|r| r == "helpful" || r == "harmful")?;
            served_ids.contains(&entry_id).then_some(ContextRating { entry_id, rating })
        })
        .take(MAX_ITEMS)
        .collect();
    let candidates = items("candidate_context_updates").iter().filter_map(candidate).take(MAX_ITEMS).collect();
    let rating = value.get("previous_answer_rating").and_then(Value::as_i64).filter(|r| (1..=5).contains(r));
    TurnAnalysis {
        response_to_user: text(value.get("response_to_user")),
        query_to_answer: text(value.get("query_to_answer")),
        served_context_ratings: ratings,
        candidate_context_updates: candidates,
        previous_answer_rating: rating,
    }
}

/// Whether a candidate may become guidance: non-blank, short enough,
/// confident enough (its section is checked when the entry is made).
pub fn acceptable(candidate: &GuidanceCandidate) -> bool {
    let len = candidate.content.trim().chars().count();
    len > 0 && len <= MAX_CONTENT_CHARS && candidate.confidence >= crate::guidance::MIN_CONFIDENCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently() {
        let value = json!({
            "response_to_user": "  ", "query_to_answer": "What do bees eat?",
            "served_context_ratings": [{"entry_id": "g1", "rating": "helpful"}, {"entry_id": "unknown", "rating": "harmful"},
                                       {"entry_id": "g1", "rating": "meh"}],
            "candidate_context_updates": [{"section": "rules", "content": "Cite sources", "confidence": 0.9},
                                          {"section": "rules"}, {"section": "goals", "content": "a", "confidence": 0.8},
                                          {"section": "goals", "content": "b", "confidence": 0.8},
                                          {"section": "goals", "content": "c", "confidence": 0.8}],
            "previous_answer_rating": 9
        });
        let a = parse(&value, &["g1".to_string()]);
        assert_eq!(a.response_to_user, None);
        assert_eq!(a.query_to_answer.as_deref(), Some("What do bees eat?"));
        assert_eq!(a.served_context_ratings, vec![ContextRating { entry_id: "g1".into(), rating: "helpful".into() }]);
        assert_eq!(a.candidate_context_updates.len(), 3, "at most three, unusable ones dropped");
        assert_eq!(a.previous_answer_rating, None, "9 is no rating");
        assert_eq!(parse(&json!("not an object"), &[]), TurnAnalysis::default());
    }

    #[test]
    fn whether_to_answer() {
        let empty = TurnAnalysis::default();
        assert!(empty.should_answer(true), "nothing found: answer");
        let thanks = TurnAnalysis { response_to_user: Some("Glad it helped!".into()), ..Default::default() };
        assert!(!thanks.should_answer(true));
        assert!(thanks.should_answer(false), "a first message is always answered");
        assert_eq!(thanks.acknowledgement(), "Glad it helped!");
        let rule = TurnAnalysis {
            candidate_context_updates: vec![GuidanceCandidate {
                section: "rules".into(),
                content: "x".into(),
                confidence: 1.0,
            }],
            ..Default::default()
        };
        assert_eq!((rule.should_answer(true), rule.acknowledgement().as_str()), (false, "Got it."));
        let ask = TurnAnalysis { query_to_answer: Some("q".into()), ..rule };
        assert!(ask.should_answer(true));
    }

    #[test]
    fn the_input_lists_what_the_message_may_react_to() {
        let previous = QaEntry {
            time: String::new(),
            question: "Q?".into(),
            context: String::new(),
            answer: "A.".into(),
            qa_id: "1".into(),
            feedback_text: None,
            feedback_score: None,
            used_graph_element_ids: None,
            memify_metadata: None,
            used_session_context_ids: None,
        };
        assert_eq!(input("hi", None, &[]), "CURRENT USER MESSAGE:\nhi");
        assert_eq!(
            input("thanks", Some(&previous), &[]),
            "CURRENT USER MESSAGE:\nthanks\n\nPREVIOUS QUESTION:\nQ?\n\nPREVIOUS ANSWER:\nA."
        );
    }
}
