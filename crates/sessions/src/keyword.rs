//! The keyword lanes `session` and `trace` (docs/sessions.md, "The session
//! lanes"): an entry's score is how many distinct words it shares with the
//! query; ties keep their chronological order. No embeddings.

use std::collections::{HashMap, HashSet};

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

/// A session's entries with an inverted index of their words, so a query
/// costs the postings of its own words rather than a scan of every entry.
/// Answers what a scan of every entry would (the tests check it).
pub struct KeywordIndex<T> {
    entries: Vec<T>,
    postings: HashMap<String, Vec<u32>>,
}

impl<T> KeywordIndex<T> {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<T: Clone> KeywordIndex<T> {
    pub fn build(entries: Vec<T>, text: impl Fn(&T) -> String) -> Self {
        let mut postings: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            for word in words(&text(entry)) {
                postings.entry(word).or_default().push(i);
            }
        }
        Self { entries, postings }
    }

    /// The entries sharing a word with the query, most shared words first,
    /// ties oldest first, at most `top_k`.
    pub fn search(&self, query: &str, top_k: Option<usize>) -> Vec<T> {
        let mut scores = vec![0u32; self.entries.len()];
        for word in words(query) {
            for &i in self.postings.get(&word).map(Vec::as_slice).unwrap_or_default() {
                scores[i as usize] += 1;
            }
        }
        let mut hits: Vec<(u32, usize)> =
            scores.iter().enumerate().filter(|(_, s)| **s > 0).map(|(i, s)| (*s, i)).collect();
        // Highest score first; among equals the older entry (lower index).
        hits.sort_by_key(|&(score, i)| (std::cmp::Reverse(score), i));
        hits.into_iter().take(top_k.unwrap_or(usize::MAX)).map(|(_, i)| self.entries[i].clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entries sharing a word with the query, most shared words first (a
    /// stable sort: ties stay oldest first), at most `top_k`.
    fn best_matches<T>(entries: Vec<T>, query: &str, text: impl Fn(&T) -> String, top_k: Option<usize>) -> Vec<T> {
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

    #[test]
    fn the_index_answers_what_the_scan_answers() {
        let entries: Vec<String> = (0..300)
            .map(|i| {
                format!(
                    "entry {i} about {} and {}",
                    ["bees", "ants", "wasps"][i % 3],
                    ["honey", "hives", "dance"][i % 7 % 3]
                )
            })
            .collect();
        let index = KeywordIndex::build(entries.clone(), |s| s.clone());
        for query in ["bees dance", "honey", "entry 42 about ants", "nothing here", "Bees HIVES wasps"] {
            for k in [None, Some(1), Some(10)] {
                assert_eq!(
                    index.search(query, k),
                    best_matches(entries.clone(), query, |s| s.clone(), k),
                    "{query} {k:?}"
                );
            }
        }
    }
}
