//! CHUNKS_LEXICAL (docs/retrievers.md): Okapi BM25 over the dataset's
//! `DocumentChunk` graph nodes, with Cognee's exact tokenizer (`\w+` on the
//! lower-cased text, stop words removed), k1 = 1.5, b = 0.75 and
//! idf = ln(1 + (N − df + 0.5) / (df + 0.5)).
//!
//! The index is an in-memory inverted index (term → postings of
//! (chunk, term frequency)) kept per dataset and brought up to date with
//! each data version from what changed: the chunk ids are diffed against
//! the store's (an ids-only read), only new chunks are read and tokenized,
//! and removed ones are taken out of their terms' postings. A query touches
//! only the postings of its own terms, and reads the nodes of its winners
//! alone, so the index holds no payloads. tantivy and LanceDB's FTS were
//! considered: both hard-code k1 = 1.2 and tantivy quantises document
//! lengths, so neither reproduces the specified scores.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use moka::future::Cache;
use recall_core::model::node_types::DOCUMENT_CHUNK;
use recall_core::text::{is_stop_word, word_tokens};
use recall_core::{DatasetId, Node, RecallError, Result};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::RetrieverCall;
use crate::{DatasetPorts, Retriever};

pub const K1: f64 = 1.5;
pub const B: f64 = 0.75;

/// The tokens BM25 sees: `\w+` of the lower-cased text minus stop words.
pub fn bm25_tokens(text: &str) -> Vec<String> {
    word_tokens(text).into_iter().filter(|t| !is_stop_word(t)).collect()
}

/// An inverted index over one dataset's chunks, by chunk id. Chunks live in
/// slots; a removed chunk's slot stays empty until the index is compacted.
#[derive(Debug, Default, Clone)]
pub struct Bm25Index {
    /// Slot → chunk id.
    ids: Vec<Uuid>,
    /// Slot → token count (0 once removed).
    lengths: Vec<u32>,
    /// Slot → its term ids, to take it out of the postings on removal.
    terms: Vec<Box<[u32]>>,
    /// Indexed chunks by id; id order breaks ties.
    slots: BTreeMap<Uuid, u32>,
    /// Chunks known to have no tokens (not indexed, not counted).
    tokenless: HashSet<Uuid>,
    dictionary: HashMap<String, u32>,
    /// Term id → (slot, tf), slots ascending.
    postings: Vec<Vec<(u32, u32)>>,
    total_tokens: u64,
}

impl Bm25Index {
    /// Indexes `(chunk id, text)` pairs; texts with no tokens are skipped.
    pub fn build<I: IntoIterator<Item = (Uuid, String)>>(chunks: I) -> Self {
        let mut index = Bm25Index::default();
        for (id, text) in chunks {
            index.insert(id, &text);
        }
        index
    }

    /// Adds a chunk (replacing one of the same id).
    pub fn insert(&mut self, id: Uuid, text: &str) {
        self.remove(id);
        let tokens = bm25_tokens(text);
        if tokens.is_empty() {
            self.tokenless.insert(id);
            return;
        }
        let slot = self.ids.len() as u32;
        let mut tf: HashMap<&str, u32> = HashMap::new();
        for t in &tokens {
            *tf.entry(t).or_default() += 1;
        }
        let mut terms = Vec::with_capacity(tf.len());
        for (term, n) in tf {
            let next = self.postings.len() as u32;
            let term_id = *self.dictionary.entry(term.to_string()).or_insert(next);
            if term_id == next {
                self.postings.push(Vec::new());
            }
            // Slots only grow, so each list stays sorted by slot.
            self.postings[term_id as usize].push((slot, n));
            terms.push(term_id);
        }
        self.total_tokens += tokens.len() as u64;
        self.ids.push(id);
        self.lengths.push(tokens.len() as u32);
        self.terms.push(terms.into_boxed_slice());
        self.slots.insert(id, slot);
    }

    /// Takes a chunk out; an unknown id is a no-op.
    pub fn remove(&mut self, id: Uuid) {
        self.tokenless.remove(&id);
        let Some(slot) = self.slots.remove(&id) else { return };
        for term in std::mem::take(&mut self.terms[slot as usize]).iter() {
            let list = &mut self.postings[*term as usize];
            if let Ok(at) = list.binary_search_by_key(&slot, |p| p.0) {
                list.remove(at);
            }
        }
        self.total_tokens -= u64::from(self.lengths[slot as usize]);
        self.lengths[slot as usize] = 0;
    }

    /// Renumbers the slots once more than half are empty, so removals do
    /// not grow the index without bound. Amortised: each compaction follows
    /// at least as many removals as there are chunks left.
    pub fn compact_if_sparse(&mut self) {
        if self.ids.len() <= 2 * self.slots.len().max(1024) {
            return;
        }
        let mut renumber = vec![u32::MAX; self.ids.len()];
        let (mut ids, mut lengths, mut terms) = (Vec::new(), Vec::new(), Vec::new());
        for (old, id) in self.ids.iter().enumerate() {
            if self.slots.get(id) == Some(&(old as u32)) {
                renumber[old] = ids.len() as u32;
                ids.push(*id);
                lengths.push(self.lengths[old]);
                terms.push(std::mem::take(&mut self.terms[old]));
            }
        }
        for list in &mut self.postings {
            for posting in list.iter_mut() {
                posting.0 = renumber[posting.0 as usize];
            }
        }
        for slot in self.slots.values_mut() {
            *slot = renumber[*slot as usize];
        }
        (self.ids, self.lengths, self.terms) = (ids, lengths, terms);
    }

    /// Indexed chunks (those with tokens).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Whether the chunk was seen (indexed, or known to have no tokens).
    pub fn knows(&self, id: &Uuid) -> bool {
        self.slots.contains_key(id) || self.tokenless.contains(id)
    }

    /// Every chunk seen.
    pub fn known(&self) -> impl Iterator<Item = &Uuid> {
        self.slots.keys().chain(self.tokenless.iter())
    }

    /// The `top_k` best (chunk, score) pairs, highest first, ties by chunk
    /// id. Zero-score chunks fill the list up to `top_k`, in id order; a
    /// query with no tokens returns nothing.
    pub fn search(&self, query: &str, top_k: usize) -> Vec<(Uuid, f64)> {
        let mut terms = bm25_tokens(query);
        terms.sort();
        terms.dedup();
        if terms.is_empty() || self.is_empty() || top_k == 0 {
            return Vec::new();
        }
        let n = self.len() as f64;
        let avgdl = self.total_tokens as f64 / n;
        // Dense accumulators (one per slot) and the slots touched: no
        // hashing per posting, and only the touched chunks are ranked.
        let mut scores = vec![0f64; self.ids.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in &terms {
            let Some(postings) = self.dictionary.get(term).map(|t| &self.postings[*t as usize]) else { continue };
            if postings.is_empty() {
                continue;
            }
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(slot, tf) in postings {
                let tf = f64::from(tf);
                let dl = f64::from(self.lengths[slot as usize]);
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl));
                let acc = &mut scores[slot as usize];
                if *acc == 0.0 {
                    touched.push(slot);
                }
                *acc += s;
            }
        }
        let mut ranked: Vec<(Uuid, f64)> =
            touched.into_iter().map(|s| (self.ids[s as usize], scores[s as usize])).collect();
        let order = |a: &(Uuid, f64), b: &(Uuid, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > top_k {
            // Partition around the top_k-th, then sort only the head.
            ranked.select_nth_unstable_by(top_k - 1, order);
            ranked.truncate(top_k);
        }
        ranked.sort_by(order);
        if ranked.len() < top_k {
            let matched: HashSet<Uuid> = ranked.iter().map(|r| r.0).collect();
            let fill = self.slots.keys().filter(|id| !matched.contains(id)).take(top_k - ranked.len());
            ranked.extend(fill.map(|id| (*id, 0.0)).collect::<Vec<_>>());
        }
        ranked
    }
}

/// A dataset's index and the data version it reflects.
struct Versioned {
    version: u64,
    index: Arc<Bm25Index>,
}

/// BM25 indexes by dataset, shared by CHUNKS_LEXICAL and the hybrid
/// retrievers, each brought up to the data version of the query that needs
/// it (an older query uses the newer index).
#[derive(Clone)]
pub struct LexicalIndexCache {
    cache: Cache<DatasetId, Arc<tokio::sync::Mutex<Option<Versioned>>>>,
}

impl Default for LexicalIndexCache {
    fn default() -> Self {
        Self { cache: Cache::builder().max_capacity(32).build() }
    }
}

impl std::fmt::Debug for LexicalIndexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndexCache").field("entries", &self.cache.entry_count()).finish()
    }
}

/// Chunk nodes read per statement when an index follows a write.
const READ_BATCH: usize = 2_000;

/// A chunk node's BM25 text.
fn chunk_text(node: &Node) -> Option<&str> {
    node.properties.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())
}

impl LexicalIndexCache {
    /// The dataset's index at the query's data version: built from its
    /// chunk nodes on first use, then brought up to date from what changed.
    /// Zero chunks is `NoDataError`.
    pub async fn get(&self, ctx: &DatasetPorts) -> Result<Arc<Bm25Index>> {
        let state = self.cache.get_with(ctx.dataset.id, async { Arc::default() }).await;
        // One builder per dataset; concurrent queries wait for its result.
        let mut state = state.lock().await;
        if !matches!(&*state, Some(current) if current.version >= ctx.data_version) {
            // Taken out, so an index no query holds is changed in place.
            let built = match state.take() {
                Some(previous) => Self::follow(ctx, previous.index).await,
                None => Self::build(ctx).await,
            };
            let index = built.map_err(|e| {
                tracing::warn!(error = %e, "BM25 index build failed");
                RecallError::NoData("Graph engine initialization failed".into())
            })?;
            *state = Some(Versioned { version: ctx.data_version, index });
        }
        let index = state.as_ref().map(|current| current.index.clone()).unwrap_or_default();
        if index.is_empty() {
            return Err(RecallError::NoData("No valid chunks loaded during initialization.".into()));
        }
        Ok(index)
    }

    async fn build(ctx: &DatasetPorts) -> Result<Arc<Bm25Index>> {
        let nodes = ctx.graph.nodes_by_type(ctx.dataset.id, DOCUMENT_CHUNK).await?;
        let chunks = nodes.iter().filter_map(|n| Some((n.id, chunk_text(n)?.to_string())));
        Ok(Arc::new(Bm25Index::build(chunks)))
    }

    /// The index with the chunks added since it was built put in and the
    /// removed ones taken out. Changed in place when no query holds it.
    async fn follow(ctx: &DatasetPorts, mut index: Arc<Bm25Index>) -> Result<Arc<Bm25Index>> {
        let dataset = ctx.dataset.id;
        let now: HashSet<Uuid> = ctx.graph.node_ids_by_type(dataset, DOCUMENT_CHUNK).await?.into_iter().collect();
        let gone: Vec<Uuid> = index.known().filter(|id| !now.contains(id)).copied().collect();
        let new: Vec<Uuid> = now.iter().filter(|id| !index.knows(id)).copied().collect();
        let mut added = Vec::with_capacity(new.len());
        for batch in new.chunks(READ_BATCH) {
            added.extend(ctx.graph.get_nodes(dataset, batch).await?);
        }
        tracing::debug!(added = added.len(), removed = gone.len(), "BM25 index follows the data version");
        let changed = Arc::make_mut(&mut index);
        for id in gone {
            changed.remove(id);
        }
        for node in &added {
            changed.insert(node.id, chunk_text(node).unwrap_or(""));
        }
        changed.compact_if_sparse();
        Ok(index)
    }

    /// The `top_k` best chunks' payloads (their node properties, with `id`
    /// and `type`), best first, with their scores; a chunk removed since the
    /// index was read is left out.
    pub async fn search(&self, ctx: &DatasetPorts, query: &str, top_k: usize) -> Result<Vec<(Value, f64)>> {
        let index = self.get(ctx).await?;
        let ranked = index.search(query, top_k);
        let ids: Vec<Uuid> = ranked.iter().map(|r| r.0).collect();
        let mut nodes: HashMap<Uuid, Node> =
            ctx.graph.get_nodes(ctx.dataset.id, &ids).await?.into_iter().map(|n| (n.id, n)).collect();
        Ok(ranked
            .into_iter()
            .filter_map(|(id, score)| {
                let node = nodes.remove(&id)?;
                let mut payload = node.properties;
                payload.entry("id").or_insert_with(|| json!(node.id.to_string()));
                payload.entry("type").or_insert_with(|| json!(node.node_type));
                Some((Value::Object(payload), score))
            })
            .collect())
    }
}

/// Lexical chunk search; payloads carry no `score` (items get `score = None`).
#[derive(Debug, Clone)]
pub struct LexicalChunksRetriever {
    cache: Arc<LexicalIndexCache>,
    pub default_top_k: usize,
}

impl LexicalChunksRetriever {
    pub fn new(cache: Arc<LexicalIndexCache>) -> Self {
        Self { cache, default_top_k: 15 }
    }
}

#[async_trait]
impl Retriever for LexicalChunksRetriever {
    /// Reads no ranking sketch.
    fn ranks_the_graph(&self) -> bool {
        false
    }

    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> Result<Vec<Value>> {
        let (ctx, query, options) = (call.ctx, call.query, call.options);
        let top_k = options.top_k().unwrap_or(self.default_top_k);
        Ok(self.cache.search(ctx, query, top_k).await?.into_iter().map(|(payload, _)| payload).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: usize) -> Uuid {
        Uuid::from_u128(i as u128 + 1)
    }

    fn index(texts: &[&str]) -> Bm25Index {
        Bm25Index::build(texts.iter().enumerate().map(|(i, t)| (id(i), t.to_string())))
    }

    /// The BM25 formula (docs/retrievers.md), computed directly by scanning, to check the index against.
    fn reference_score(texts: &[&str], query: &str, doc: usize) -> f64 {
        let docs: Vec<Vec<String>> = texts.iter().map(|t| bm25_tokens(t)).collect();
        let indexed: Vec<&Vec<String>> = docs.iter().filter(|d| !d.is_empty()).collect();
        let n = indexed.len() as f64;
        let avgdl = indexed.iter().map(|d| d.len()).sum::<usize>() as f64 / n;
        let mut q = bm25_tokens(query);
        q.sort();
        q.dedup();
        q.iter()
            .map(|t| {
                let df = indexed.iter().filter(|d| d.contains(t)).count() as f64;
                let tf = docs[doc].iter().filter(|x| *x == t).count() as f64;
                if tf == 0.0 {
                    return 0.0;
                }
                let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * docs[doc].len() as f64 / avgdl))
            })
            .sum()
    }

    #[test]
    fn scores_match_the_formula() {
        let texts = [
            "The sourdough starter needs flour and water every day.",
            "Jupiter is the largest planet; Jupiter has many moons.",
            "Rust's borrow checker enforces ownership rules.",
            "Feed the starter: flour, water, flour again.",
        ];
        let idx = index(&texts);
        let hits = idx.search("flour starter flour", 4);
        assert_eq!(hits.len(), 4);
        assert_eq!(hits[0].0, id(3));
        assert_eq!(hits[1].0, id(0));
        for (chunk, score) in &hits[..2] {
            let doc = (chunk.as_u128() - 1) as usize;
            assert!((score - reference_score(&texts, "flour starter flour", doc)).abs() < 1e-12, "doc {doc}");
        }
        // Zero-score chunks fill up in id order.
        assert_eq!((hits[2].0, hits[2].1), (id(1), 0.0));
        assert_eq!(hits[3].0, id(2));
    }

    #[test]
    fn stop_words_unicode_and_empty_queries() {
        let idx = index(&["Größe der Straße", "the and of", "日本語 テキスト"]);
        assert_eq!(idx.len(), 2, "a chunk of stop words only is skipped");
        assert!(idx.knows(&id(1)), "but known, so following a write does not read it again");
        assert!(idx.search("the of and", 5).is_empty());
        assert_eq!(idx.search("STRAßE", 1)[0].0, id(0));
        assert_eq!(idx.search("日本語", 1)[0].0, id(2));
        assert!(idx.search("", 3).is_empty());
    }

    /// Ranked (id, score) pairs of two indexes agree: same order, same scores.
    fn assert_same_ranking(a: &Bm25Index, b: &Bm25Index, query: &str) {
        let (x, y) = (a.search(query, 50), b.search(query, 50));
        assert_eq!(x.len(), y.len(), "{query}");
        for (p, q) in x.iter().zip(&y) {
            assert_eq!(p.0, q.0, "{query}");
            assert!((p.1 - q.1).abs() < 1e-9, "{query}: {} vs {}", p.1, q.1);
        }
    }

    /// Inserting and removing chunks leaves the index equal to one built
    /// from the chunks that remain — scores, ties and fills — and so does
    /// the compaction that follows many removals.
    #[test]
    fn following_changes_equals_a_fresh_build() {
        let words = ["flour", "water", "starter", "jupiter", "moons", "borrow", "checker", "ownership", "rye", "oven"];
        let text =
            |i: usize| (0..(3 + i % 7)).map(|k| words[(i * 7 + k * 3) % words.len()]).collect::<Vec<_>>().join(" ");
        let mut live: BTreeMap<usize, String> = BTreeMap::new();
        let mut followed = Bm25Index::default();
        for i in 0..3_000 {
            live.insert(i, text(i));
            followed.insert(id(i), &text(i));
        }
        // Remove two thirds (a compaction happens), re-add some with new text.
        for i in (0..3_000).filter(|i| i % 3 != 0) {
            live.remove(&i);
            followed.remove(id(i));
        }
        followed.compact_if_sparse();
        assert_eq!(followed.ids.len(), followed.len(), "compacted: no empty slots left");
        for i in (0..600).step_by(5) {
            let t = format!("{} rye oven", text(i + 1));
            live.insert(i, t.clone());
            followed.insert(id(i), &t);
        }
        let fresh = Bm25Index::build(live.iter().map(|(i, t)| (id(*i), t.clone())));
        assert_eq!(followed.len(), fresh.len());
        for query in ["flour", "rye oven", "jupiter moons borrow", "checker", "nothing matches this"] {
            assert_same_ranking(&followed, &fresh, query);
        }
    }
}
