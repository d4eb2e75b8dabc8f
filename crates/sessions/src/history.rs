//! What a completion carries of the conversation (docs/sessions.md,
//! "Completion through sessions"): the recent turns, older turns recalled
//! by similarity to the question, and the conversational query that
//! retrieves a second time with the last turns in view.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use recall_core::session::{QaEntry, QaVector, SessionKey, SessionStore, StoredQaVector};
use recall_core::{EpochMillis, Result};
use simsimd::SpatialSimilarity;

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

/// A dot product (SIMD).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    f32::dot(a, b).unwrap_or(0.0) as f32
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// One session's QA vectors as read so far: everything written up to
/// version `after`, row by row in one block (the widths of the first
/// vector; another width cannot be compared and is not kept). A later read
/// adds only what was written since; an entry deleted meanwhile is dropped
/// when it is found missing.
pub(crate) struct KeptVectors {
    model: String,
    after: i64,
    dims: usize,
    ids: Vec<String>,
    index: HashMap<String, usize>,
    data: Vec<f32>,
    norms: Vec<f32>,
}

impl KeptVectors {
    fn new(model: &str) -> Self {
        Self {
            model: model.to_string(),
            after: 0,
            dims: 0,
            ids: Vec::new(),
            index: HashMap::new(),
            data: Vec::new(),
            norms: Vec::new(),
        }
    }

    fn add(&mut self, read: Vec<StoredQaVector>) {
        for v in read {
            self.after = self.after.max(v.version);
            if self.dims == 0 {
                self.dims = v.vector.len();
            }
            if v.vector.len() != self.dims || self.dims == 0 {
                self.remove(&v.qa_id);
                continue;
            }
            let (d, n) = (self.dims, norm(&v.vector));
            match self.index.get(&v.qa_id) {
                Some(&i) => {
                    self.data[i * d..(i + 1) * d].copy_from_slice(&v.vector);
                    self.norms[i] = n;
                }
                None => {
                    self.index.insert(v.qa_id.clone(), self.ids.len());
                    self.ids.push(v.qa_id);
                    self.data.extend_from_slice(&v.vector);
                    self.norms.push(n);
                }
            }
        }
    }

    fn remove(&mut self, id: &str) {
        let Some(i) = self.index.remove(id) else { return };
        let (d, last) = (self.dims, self.ids.len() - 1);
        self.ids.swap_remove(i);
        self.norms.swap_remove(i);
        if i != last {
            self.data.copy_within(last * d..(last + 1) * d, i * d);
            self.index.insert(self.ids[i].clone(), i);
        }
        self.data.truncate(last * d);
    }

    /// Floats held (the cache's weight).
    pub(crate) fn weight(&self) -> usize {
        self.data.len() + 1
    }

    /// The `want` entry ids most like `query` (cosine), best first, ties by
    /// id, leaving out `skip`; the best are selected, not every score sorted.
    fn ranked(&self, query: &[f32], skip: &HashSet<String>, want: usize) -> Vec<String> {
        let (d, q) = (self.dims, norm(query));
        if query.len() != d || q == 0.0 {
            return Vec::new();
        }
        let mut scored: Vec<(f32, usize)> = (0..self.ids.len())
            .map(|i| {
                let n = self.norms[i];
                let score = if n == 0.0 { 0.0 } else { dot(query, &self.data[i * d..(i + 1) * d]) / (q * n) };
                (score, i)
            })
            .collect();
        let order =
            |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then_with(|| self.ids[a.1].cmp(&self.ids[b.1]));
        let take = want.saturating_add(skip.len());
        if take < scored.len() {
            scored.select_nth_unstable_by(take, order);
            scored.truncate(take);
        }
        scored.sort_by(order);
        scored.into_iter().map(|(_, i)| &self.ids[i]).filter(|id| !skip.contains(*id)).take(want).cloned().collect()
    }
}

pub(crate) type VectorCache = moka::future::Cache<SessionKey, Arc<tokio::sync::Mutex<KeptVectors>>>;

/// Candidates ranked beyond the `k` wanted, in case some were deleted.
const SPARE_CANDIDATES: usize = 8;

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
    // A few spare candidates cover turns deleted since they were read; when
    // even those are gone, every candidate is ranked. Each is read by id
    // (an indexed lookup), the best first, until `k` are found.
    let mut found = Vec::new();
    for want in [k + SPARE_CANDIDATES, usize::MAX] {
        let ranked = kept_now.ranked(&query.vector, skip, want);
        let exhausted = ranked.len() < want;
        found.clear();
        // The best `k` read side by side; further ones only for those missing.
        let (first, rest) = ranked.split_at(k.min(ranked.len()));
        let reads = futures::future::join_all(first.iter().map(|id| store.qa_entry(key, id, now))).await;
        for (id, read) in first.iter().zip(reads) {
            match read? {
                Some(entry) => found.push(entry),
                // Deleted or expired since it was read.
                None => kept_now.remove(id),
            }
        }
        for id in rest {
            if found.len() == k {
                break;
            }
            match store.qa_entry(key, id, now).await? {
                Some(entry) => found.push(entry),
                None => kept_now.remove(id),
            }
        }
        if exhausted || found.len() == k {
            break;
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
        let row = |id: &str, vector: Vec<f32>, version| StoredQaVector { qa_id: id.into(), vector, version };
        kept.add(vec![
            row("near", vec![1.0, 0.1], 1),
            row("far", vec![-1.0, 0.0], 2),
            row("recent", vec![1.0, 0.0], 3),
            row("odd-width", vec![1.0], 4),
            row("zero", vec![0.0, 0.0], 5),
        ]);
        let skip: HashSet<String> = ["recent".to_string()].into();
        assert_eq!(kept.ranked(&[2.0, 0.0], &skip, usize::MAX), ["near", "zero", "far"], "another width is not kept");
        assert_eq!(kept.ranked(&[2.0, 0.0], &skip, 1), ["near"], "the best selected");
        assert_eq!(kept.ranked(&[-1.0, 0.0], &HashSet::new(), 2), ["far", "zero"]);
        assert!(kept.ranked(&[1.0], &skip, 3).is_empty(), "a query of another width compares with nothing");
        assert_eq!(kept.after, 5);

        // A new vector for a kept id replaces it; a removal keeps the others intact.
        kept.add(vec![row("far", vec![1.0, 0.0], 6)]);
        kept.remove("near");
        kept.remove("absent");
        assert_eq!(kept.ranked(&[1.0, 0.0], &HashSet::new(), 9), ["far", "recent", "zero"]);
        assert_eq!(kept.weight(), 7);
    }
}
