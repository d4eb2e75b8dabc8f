//! Agent-profile guidance from trace steps (docs/sessions.md, "Guidance
//! from agent traces"): an errored step becomes a failure lesson at once
//! (no LLM); every [`EXTRACTION_INTERVAL`] steps, and at `improve`, an LLM
//! reads the steps not yet read (with a small overlap) and proposes
//! reusable lessons. Both go through the same confidence gate and
//! de-duplication as the lessons of conversation turns.

use std::sync::LazyLock;

use recall_core::session::{GuidanceCandidate, TraceStep};
use regex::Regex;
use serde_json::{json, Value};

use crate::guidance::{GuidanceEntry, Profile, MAX_CONTENT_CHARS};

/// The confidence of a lesson made from an errored step (an error is a
/// strong signal, so it clears the 0.75 gate).
pub const LIVE_FAILURE_CONFIDENCE: f64 = 0.85;
/// Steps the LLM reads at most per extraction.
pub const BATCH_TRACE_LIMIT: usize = 40;
/// Characters of a step's output the LLM sees.
pub const BATCH_RETURN_CHARS: usize = 600;
/// Lessons kept at most per extraction.
pub const MAX_BATCH_LESSONS: usize = 5;
/// Existing lessons shown to the LLM, so it does not propose them again.
pub const EXISTING_LESSONS_SHOWN: usize = 40;
/// New steps that trigger an extraction while an agent writes its trace.
pub const EXTRACTION_INTERVAL: usize = 10;
/// Already-read steps an extraction reads again, for sequence context.
pub const EXTRACTION_OVERLAP: usize = 3;
/// The longest error text kept in a lesson or shown to the LLM.
pub const MAX_ERROR_CHARS: usize = 600;

/// The record that holds how many steps were read (not rendered as guidance).
pub const STATE_ID: &str = "__agent_context_extraction_state__";
pub const STATE_KIND: &str = "agent_context_extraction_state";

/// The schema's name in the structured-output request.
pub const SCHEMA_NAME: &str = "AgentContextExtraction";

pub const SYSTEM_PROMPT: &str = "You read a batch of an agent's tool and action traces from one session and \
extract a small set of reusable lessons that would help the agent on future turns in this environment.

The input may contain two sections:
- EXISTING LESSONS: lessons already saved for this session. Do not repeat or reword these; only propose lessons \
that add new information.
- TRACES: the trace steps to learn from. Each line shows the tool or function, its status, a one-line feedback \
summary, any error, and a truncated output.

Return at most 5 lessons. Each has a section, a one-sentence content and a confidence from 0 to 1. Only emit a \
lesson you are confident is durable and reusable; omit anything one-off, trivial, specific to a single value, or \
already covered by EXISTING LESSONS. An empty list is fine.

Sections:
- tool_rules: a reusable constraint or a safe or required way to invoke a tool.
- workflow_state: where the task stands and what must survive context compaction to continue it.
- success_patterns: an approach or sequence that solved the user's request and is worth repeating.
- failure_lessons: an error, retry or rejected path and what to avoid or do differently.
- environment_facts: a discovered fact about the repository, runtime, configuration or environment.

Keep each content to one short, self-contained sentence: a takeaway, not a description of one call. Do not \
restate raw output.";

/// The JSON schema of the extraction (strict).
pub fn schema() -> Value {
    let sections: Vec<&str> = Profile::Agent.sections().iter().map(|s| s.0).collect();
    json!({
        "type": "object",
        "properties": {
            "lessons": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "section": {"type": "string", "enum": sections},
                        "content": {"type": "string"},
                        "confidence": {"type": "number"}
                    },
                    "required": ["section", "content", "confidence"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["lessons"],
        "additionalProperties": false
    })
}

/// What an error text loses before it is kept, in order: (pattern, replacement).
static REDACTIONS: LazyLock<Vec<(Option<Regex>, &'static str)>> = LazyLock::new(|| {
    [
        (r"(?i)\b(Bearer)\s+[A-Za-z0-9._~+/=-]+", "$1 [redacted]"),
        (
            r"(?i)\b(api[_-]?key|access[_-]?token|refresh[_-]?token|token|password|secret)\s*([=:])\s*([^\s,;]+)",
            "$1$2[redacted]",
        ),
        (r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\b", "[redacted]"),
        (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "[uuid]"),
        (r"\b[0-9a-fA-F]{32,}\b", "[redacted]"),
        (r"\b\d{8,}\b", "[number]"),
    ]
    .into_iter()
    .map(|(pattern, with)| (Regex::new(pattern).ok(), with))
    .collect()
});

/// An error text made fit to keep: whitespace collapsed, credentials,
/// tokens and long hex redacted, ids and long numbers generalised, cut to
/// `max` characters.
pub fn sanitize_error(text: &str, max: usize) -> String {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for (pattern, with) in REDACTIONS.iter() {
        if let Some(pattern) = pattern {
            text = pattern.replace_all(&text, *with).into_owned();
        }
    }
    text.chars().take(max).collect()
}

/// The lesson an errored step teaches at once; none for a step that
/// succeeded or failed without a message.
pub fn live_candidate(step: &TraceStep) -> Option<GuidanceCandidate> {
    let error = step.error_message.as_deref().unwrap_or("").trim();
    if step.status != "error" || error.is_empty() {
        return None;
    }
    let origin = match step.origin_function.trim() {
        "" => "a tool",
        o => o,
    };
    let content: String = format!("{origin} failed: {}", sanitize_error(error, MAX_CONTENT_CHARS))
        .chars()
        .take(MAX_CONTENT_CHARS)
        .collect();
    Some(GuidanceCandidate { section: "failure_lessons".into(), content, confidence: LIVE_FAILURE_CONFIDENCE })
}

/// One step as a line of the extraction's input.
fn trace_line(step: &TraceStep) -> String {
    let mut parts = vec![format!("- {} [{}]", step.origin_function, step.status)];
    if let Some(feedback) = step.session_feedback.as_deref().filter(|f| !f.is_empty()) {
        parts.push(format!("feedback: {feedback}"));
    }
    if let Some(error) = step.error_message.as_deref().filter(|e| !e.trim().is_empty()) {
        parts.push(format!("error: {}", sanitize_error(error, MAX_ERROR_CHARS)));
    }
    let output = step.method_return_value.as_ref().filter(|v| match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    });
    if let Some(output) = output {
        let text = sanitize_error(&output.to_string(), BATCH_RETURN_CHARS);
        parts.push(format!("output: {text}"));
    }
    parts.join(" | ")
}

/// The extraction's input: the lessons already kept, then the steps.
pub fn batch_input(steps: &[TraceStep], existing: &[GuidanceEntry]) -> String {
    let mut sections = Vec::new();
    let existing: Vec<String> = existing
        .iter()
        .filter(|e| e.context_profile == Profile::Agent)
        .take(EXISTING_LESSONS_SHOWN)
        .map(|e| format!("- [{}] {}", e.section, e.content))
        .collect();
    if !existing.is_empty() {
        sections.push(format!(
            "EXISTING LESSONS (already saved — do not repeat or reword these):\n{}",
            existing.join("\n")
        ));
    }
    let lines: Vec<String> = steps.iter().map(trace_line).collect();
    sections.push(format!("TRACES:\n{}", lines.join("\n")));
    sections.join("\n\n")
}

/// The lessons of the model's answer, read leniently: unusable ones are
/// dropped, at most [`MAX_BATCH_LESSONS`] kept.
pub fn parse(value: &Value) -> Vec<GuidanceCandidate> {
    value
        .get("lessons")
        .and_then(Value::as_array)
        .map(|lessons| lessons.iter().filter_map(crate::analysis::candidate).take(MAX_BATCH_LESSONS).collect())
        .unwrap_or_default()
}

/// How many of `steps` (the newest [`BATCH_TRACE_LIMIT`] of a session,
/// oldest first) an extraction reads, given the id of the last step read
/// before: the new ones and [`EXTRACTION_OVERLAP`] already read; `None`
/// when fewer than `min_new` are new. A last-read id not among `steps`
/// means every one of them is new.
pub fn window(steps: &[TraceStep], last_read: Option<&str>, min_new: usize) -> Option<usize> {
    let pending = match last_read.and_then(|id| steps.iter().rposition(|s| s.trace_id == id)) {
        Some(i) => steps.len() - i - 1,
        None => steps.len(),
    };
    (min_new > 0 && pending >= min_new).then(|| (pending + EXTRACTION_OVERLAP).min(steps.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(status: &str, error: Option<&str>) -> TraceStep {
        TraceStep {
            trace_id: "t".into(),
            origin_function: "run_sql".into(),
            status: status.into(),
            memory_query: String::new(),
            memory_context: String::new(),
            method_params: None,
            method_return_value: Some(json!({"rows": 3})),
            error_message: error.map(str::to_string),
            session_feedback: Some("run_sql failed.".into()),
        }
    }

    #[test]
    fn errors_are_sanitised_before_they_are_kept() {
        let raw = "auth failed:   Bearer abc.def-123 api_key=sk-123456 for user 6f1c2d3e-1111-2222-3333-444455556666 \
                   request 123456789012 hash deadbeefdeadbeefdeadbeefdeadbeef token eyJhbGci.eyJzdWIi.c2lnbmF0dXJl";
        let clean = sanitize_error(raw, 600);
        assert_eq!(
            clean,
            "auth failed: Bearer [redacted] api_key=[redacted] for user [uuid] request [number] hash [redacted] \
             token [redacted]"
        );
        assert_eq!(sanitize_error("é".repeat(10).as_str(), 3), "ééé");
    }

    #[test]
    fn an_errored_step_teaches_a_failure_lesson() {
        let lesson = live_candidate(&step("error", Some("table  users does not exist"))).unwrap();
        assert_eq!(lesson.section, "failure_lessons");
        assert_eq!(lesson.content, "run_sql failed: table users does not exist");
        assert!(lesson.confidence >= crate::guidance::MIN_CONFIDENCE);
        assert_eq!(live_candidate(&step("success", Some("x"))), None);
        assert_eq!(live_candidate(&step("error", Some("  "))), None, "nothing to learn from");
        let long = live_candidate(&step("error", Some(&"x ".repeat(500)))).unwrap();
        assert_eq!(long.content.chars().count(), MAX_CONTENT_CHARS);
    }

    #[test]
    fn the_input_shows_existing_lessons_then_the_steps() {
        let existing =
            GuidanceEntry::new(Profile::Agent, "tool_rules", "Quote identifiers.", 0.9, chrono::Utc::now()).unwrap();
        let input = batch_input(&[step("error", Some("boom"))], &[existing]);
        assert_eq!(
            input,
            "EXISTING LESSONS (already saved — do not repeat or reword these):\n- [tool_rules] Quote identifiers.\n\n\
             TRACES:\n- run_sql [error] | feedback: run_sql failed. | error: boom | output: {\"rows\":3}"
        );
        assert!(batch_input(&[], &[]).starts_with("TRACES:"));
    }

    #[test]
    fn lessons_are_read_leniently_and_windows_are_bounded() {
        let value = json!({"lessons": [
            {"section": "tool_rules", "content": "Use LIMIT.", "confidence": 0.9},
            {"section": "tool_rules"}, {"content": "x", "confidence": 1.0, "section": " "},
            {"section": "a", "content": "1", "confidence": 1}, {"section": "a", "content": "2", "confidence": 1},
            {"section": "a", "content": "3", "confidence": 1}, {"section": "a", "content": "4", "confidence": 1}
        ]});
        let lessons = parse(&value);
        assert_eq!(lessons.len(), MAX_BATCH_LESSONS);
        assert_eq!(lessons[0].content, "Use LIMIT.");
        assert!(parse(&json!([])).is_empty());
        let steps = |n: usize| -> Vec<TraceStep> {
            (0..n).map(|i| TraceStep { trace_id: format!("t{i}"), ..step("success", None) }).collect()
        };
        assert_eq!(window(&steps(9), None, EXTRACTION_INTERVAL), None);
        assert_eq!(window(&steps(10), None, EXTRACTION_INTERVAL), Some(10), "all ten: there is nothing before");
        assert_eq!(window(&steps(BATCH_TRACE_LIMIT), Some("gone"), 1), Some(BATCH_TRACE_LIMIT), "more new than read");
        assert_eq!(window(&steps(21), Some("t19"), 1), Some(4), "one new step and the overlap");
        assert_eq!(window(&steps(21), Some("t20"), 1), None);
        assert_eq!(window(&steps(5), None, 0), None);
    }

    #[test]
    fn the_patterns_compile() {
        assert!(REDACTIONS.iter().all(|(pattern, _)| pattern.is_some()));
    }
}
