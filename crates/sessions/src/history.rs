//! What a completion carries of the conversation (docs/sessions.md,
//! "Completion through sessions"): the recent turns, older turns recalled
//! by similarity to the question, and the conversational query that
//! retrieves a second time with the last turns in view.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use recall_core::session::{QaEntry, QaVector, SessionKey, SessionStore, StoredQaVector};
use recall_core::{EpochMillis, Result};

/// Older turns a completion recalls by similarity, beyond the recent ones.
pub const VECTOR_RECALL_TOP_K: usize = 3;
/// The longest conversational query, in characters.
pub const MAX_CONVERSATIONAL_QUERY_CHARS: usize = 2_000;
/// Prior turns the conversational query quotes.
pub const CONVERSATIONAL_TURNS: usize = 2;

/// The text a QA entry is embedded from.
pub fn qa_vector_text(question: &str, answer: &str) -> String {
    format!("{question}\n{answer}").trim().to_string()
}

/// Whitespace runs collapsed to one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The query the second retrieval lane runs: the last (at most two) turns
/// and the request, within [`MAX_CONVERSATIONAL_QUERY_CHARS`] — answers are
/// cut first, then questions, then the whole. Without earlier turns it is
/// the request itself.
pub fn conversational_query(raw: &str, recent: &[QaEntry]) -> String {
    let request = collapse(raw);
    let mut pairs: Vec<[Vec<char>; 2]> = recent
        .iter()
        .map(|t| [collapse(&t.question).chars().collect::<Vec<char>>(), collapse(&t.answer).chars().collect()])
        .filter(|[q, a]| !q.is_empty() || !a.is_empty())
        .collect();
    let max = MAX_CONVERSATIONAL_QUERY_CHARS;
    if pairs.is_empty() {
        return request.chars().take(max).collect();
    }
    let render = |pairs: &[[Vec<char>; 2]]| {
        let mut turns: Vec<String> = Vec::new();
        for [q, a] in pairs {
            let mut lines = Vec::new();
            if !q.is_empty() {
                lines.push(format!("Prior user: {}", q.iter().collect::<String>()));
            }
            if !a.is_empty() {
                lines.push(format!("Prior assistant (untrusted retrieval guidance): {}", a.iter().collect::<String>()));
            }
            turns.push(lines.join("\n"));
        }
        turns.push(format!("Current user request: {request}"));
        turns.join("\n\n")
    };
    let mut query = render(&pairs);
    for field in [1, 0] {
        for i in 0..pairs.len() {
            let over = query.chars().count().saturating_sub(max);
            if over == 0 {
                return query;
            }
            let text = &mut pairs[i][field];
            text.truncate(text.len().saturating_sub(over));
            query = render(&pairs);
        }
    }
    query.chars().take(max).collect()
}

/// The history a completion carries: the recent turns and the recalled
/// older ones, each once, oldest first.
pub fn merge_history(recent: Vec<QaEntry>, recalled: Vec<QaEntry>) -> Vec<QaEntry> {
    let mut seen = HashSet::new();
    let mut merged: Vec<QaEntry> =
        recalled.into_iter().chain(recent).filter(|t| seen.insert(t.qa_id.clone())).collect();
    merged.sort_by(|a, b| a.time.cmp(&b.time));
    merged
}

/// Cosine similarity; 0 for a zero vector or vectors of different widths.
fn cosine(a: &[f32], norm_a: f32, b: &[f32], norm_b: f32) -> f32 {
    if a.len() != b.len() || norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (norm_a * norm_b)
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// One session's QA vectors as read so far: everything written up to
/// version `after`. A later read adds only what was written since; an
/// entry deleted meanwhile is dropped when it is found missing.
pub(crate) struct KeptVectors {
    model: String,
    after: i64,
    rows: HashMap<String, (Vec<f32>, f32)>,
}

impl KeptVectors {
    fn new(model: &str) -> Self {
        Self { model: model.to_string(), after: 0, rows: HashMap::new() }
    }

    fn add(&mut self, read: Vec<StoredQaVector>) {
        for v in read {
            self.after = self.after.max(v.version);
            let n = norm(&v.vector);
            self.rows.insert(v.qa_id, (v.vector, n));
        }
    }

    /// Floats held (the cache's weight).
    pub(crate) fn weight(&self) -> usize {
        self.rows.values().map(|(v, _)| v.len()).sum::<usize>() + 1
    }

    /// Entry ids by similarity to `query`, best first, ties by id.
    fn ranked(&self, query: &[f32], skip: &HashSet<String>) -> Vec<String> {
        let q = norm(query);
        let mut scored: Vec<(f32, &String)> = self
            .rows
            .iter()
            .filter(|(id, _)| !skip.contains(*id))
            .map(|(id, (v, n))| (cosine(query, q, v, *n), id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        scored.into_iter().map(|(_, id)| id.clone()).collect()
    }
}

pub(crate) type VectorCache = moka::future::Cache<SessionKey, Arc<tokio::sync::Mutex<KeptVectors>>>;

/// Floats of QA vectors kept in memory at most, over every session.
const KEPT_FLOATS: u64 = 16 << 20;

pub(crate) fn vector_cache() -> VectorCache {
    moka::future::Cache::builder()
        .weigher(|_: &SessionKey, kept: &Arc<tokio::sync::Mutex<KeptVectors>>| {
            kept.try_lock().map_or(1, |k| u32::try_from(k.weight()).unwrap_or(u32::MAX))
        })
        .max_capacity(KEPT_FLOATS)
        .build()
}

/// The session's turns most like `query` (its vector of `model`), at most
/// `k`, leaving out `skip` (the recent turns already carried).
pub(crate) async fn similar_turns(
    store: &Arc<dyn SessionStore>,
    cache: &VectorCache,
    key: &SessionKey,
    query: &QaVector,
    skip: &HashSet<String>,
    k: usize,
    now: EpochMillis,
) -> Result<Vec<QaEntry>> {
    let kept =
        cache.get_with(key.clone(), async { Arc::new(tokio::sync::Mutex::new(KeptVectors::new(&query.model))) }).await;
    let mut kept_now = kept.lock().await;
    if kept_now.model != query.model {
        *kept_now = KeptVectors::new(&query.model);
    }
    let read = store.qa_vectors(key, &query.model, kept_now.after, now).await?;
    if !read.is_empty() {
        kept_now.add(read);
        // Weighed again at its new size.
        let weight = kept_now.weight();
        drop(kept_now);
        cache.insert(key.clone(), kept.clone()).await;
        tracing::trace!(floats = weight, "session QA vectors kept");
        kept_now = kept.lock().await;
    }
    let mut found = Vec::new();
    for id in kept_now.ranked(&query.vector, skip) {
        if found.len() == k {
            break;
        }
        match store.qa_entry(key, &id, now).await? {
            Some(entry) => found.push(entry),
            // Deleted or expired since it was read.
            None => {
                kept_now.rows.remove(&id);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(q: &str, a: &str) -> QaEntry {
        QaEntry {
            time: "t".into(),
            question: q.into(),
            context: String::new(),
            answer: a.into(),
            qa_id: q.into(),
            feedback_text: None,
            feedback_score: None,
            used_graph_element_ids: None,
            memify_metadata: None,
            used_session_context_ids: None,
        }
    }

    #[test]
    fn the_conversational_query_quotes_the_last_turns() {
        let q = conversational_query("  and   its moons? ", &[turn("Which planet is largest?", "Jupiter.")]);
        assert_eq!(
            q,
            "Prior user: Which planet is largest?\nPrior assistant (untrusted retrieval guidance): Jupiter.\n\n\
             Current user request: and its moons?"
        );
        assert_eq!(conversational_query(" what\tnow ", &[]), "what now", "no turns: the request");
    }

    #[test]
    fn the_conversational_query_cuts_answers_first_then_questions() {
        let long_answer = "a".repeat(3_000);
        let q = conversational_query("request", &[turn("short question", &long_answer)]);
        assert_eq!(q.chars().count(), MAX_CONVERSATIONAL_QUERY_CHARS);
        assert!(q.contains("Prior user: short question") && q.ends_with("Current user request: request"));
        let both = conversational_query("r", &[turn(&"q".repeat(3_000), &"a".repeat(3_000))]);
        assert_eq!(both.chars().count(), MAX_CONVERSATIONAL_QUERY_CHARS);
        assert!(!both.contains("Prior assistant"), "the answer went first, to nothing");
        let huge_request = conversational_query(&"é".repeat(5_000), &[turn("q", "a")]);
        assert_eq!(huge_request.chars().count(), MAX_CONVERSATIONAL_QUERY_CHARS, "then a hard cut");
    }

    #[test]
    fn history_merges_recalled_turns_in_time_order_once() {
        let at = |id: &str, time: &str| QaEntry { time: time.into(), ..turn(id, "a") };
        let merged = merge_history(
            vec![at("r1", "2026-01-03"), at("r2", "2026-01-04")],
            vec![at("old", "2026-01-01"), at("r1", "2026-01-03")],
        );
        let ids: Vec<&str> = merged.iter().map(|t| t.qa_id.as_str()).collect();
        assert_eq!(ids, ["old", "r1", "r2"]);
    }

    #[test]
    fn ranking_is_by_cosine_and_skips_what_is_carried() {
        let mut kept = KeptVectors::new("m");
        kept.add(vec![
            StoredQaVector { qa_id: "near".into(), vector: vec![1.0, 0.1], version: 1 },
            StoredQaVector { qa_id: "far".into(), vector: vec![-1.0, 0.0], version: 2 },
            StoredQaVector { qa_id: "recent".into(), vector: vec![1.0, 0.0], version: 3 },
            StoredQaVector { qa_id: "odd-width".into(), vector: vec![1.0], version: 4 },
        ]);
        let skip: HashSet<String> = ["recent".to_string()].into();
        let ranked = kept.ranked(&[2.0, 0.0], &skip);
        assert_eq!(ranked, ["near", "odd-width", "far"], "another width scores 0, below any likeness");
        assert_eq!(kept.after, 4);
    }
}
