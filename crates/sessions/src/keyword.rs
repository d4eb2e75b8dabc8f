//! The keyword lanes `session` and `trace` (docs/sessions.md, "The session
//! lanes"): an entry's score is how many distinct words it shares with the
//! query; ties keep their chronological order. No embeddings.

use std::collections::HashSet;

use recall_core::session::{QaEntry, TraceStep};

/// The distinct lower-cased words of `text` of two characters or more: runs
/// of letters, digits and underscores (a regex `\b\w+\b`). A sentence in a
/// script without spaces is one long word.
pub fn words(text: &str) -> HashSet<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().nth(1).is_some())
        .map(str::to_string)
        .collect()
}

/// The text a QA entry is matched on.
pub fn qa_text(e: &QaEntry) -> String {
    format!("{} {} {}", e.question, e.context, e.answer)
}

/// The text a trace step is matched on: every text field, and the JSON of
/// its parameters and return value.
pub fn trace_text(t: &TraceStep) -> String {
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_default();
    [
        t.origin_function.as_str(),
        &t.status,
        &t.memory_query,
        &t.memory_context,
        &json(&t.method_params),
        &json(&t.method_return_value),
        t.error_message.as_deref().unwrap_or_default(),
        t.session_feedback.as_deref().unwrap_or_default(),
    ]
    .join(" ")
}

/// The entries sharing a word with the query, most shared words first (a
/// stable sort: ties stay oldest first), at most `top_k`.
pub fn best_matches<T>(entries: Vec<T>, query: &str, text: impl Fn(&T) -> String, top_k: Option<usize>) -> Vec<T> {
    let query = words(query);
    if query.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(usize, T)> = entries
        .into_iter()
        .filter_map(|e| {
            let score = words(&text(&e)).intersection(&query).count();
            (score > 0).then_some((score, e))
        })
        .collect();
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    scored.into_iter().take(top_k.unwrap_or(usize::MAX)).map(|(_, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_lowercase_runs_of_two_or_more() {
        let w = words("The bee's waggle-dance, THE BEE! a 2x snake_case 東京タワー");
        let mut got: Vec<&str> = w.iter().map(String::as_str).collect();
        got.sort();
        assert_eq!(got, ["2x", "bee", "dance", "snake_case", "the", "waggle", "東京タワー"]);
    }

    #[test]
    fn most_shared_words_first_and_ties_stay_in_order() {
        let entries = vec!["bees dance", "bees waggle dance", "ants", "dance floor"];
        let got = best_matches(entries, "how do bees dance a waggle", |s| s.to_string(), None);
        assert_eq!(got, ["bees waggle dance", "bees dance", "dance floor"]);
        let got = best_matches(vec!["x dance", "y dance", "z dance"], "dance", |s| s.to_string(), Some(2));
        assert_eq!(got, ["x dance", "y dance"]);
        assert!(best_matches(vec!["a b"], "a", |s| s.to_string(), None).is_empty(), "one-letter words never match");
    }
}
