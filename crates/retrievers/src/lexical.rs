//! CHUNKS_LEXICAL (docs/retrievers.md): Okapi BM25 over the dataset's
//! `DocumentChunk` graph nodes, with Cognee's exact tokenizer (`\w+` on the
//! lower-cased text, stop words removed), k1 = 1.5, b = 0.75 and
//! idf = ln(1 + (N − df + 0.5) / (df + 0.5)).
//!
//! The index is an in-memory inverted index (term → postings of
//! (chunk, term frequency)) built once per dataset version and cached, so a
//! query touches only the postings of its own terms. tantivy and LanceDB's
//! FTS were considered: both hard-code k1 = 1.2 and tantivy quantises
//! document lengths, so neither reproduces the specified scores.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use moka::future::Cache;
use recall_core::model::node_types::DOCUMENT_CHUNK;
use recall_core::text::{is_stop_word, word_tokens};
use recall_core::{DatasetId, RecallError, Result};
use serde_json::{json, Value};

use crate::{DatasetPorts, Retriever, RetrieverOptions};

pub const K1: f64 = 1.5;
pub const B: f64 = 0.75;

/// The tokens BM25 sees: `\w+` of the lower-cased text minus stop words.
pub fn bm25_tokens(text: &str) -> Vec<String> {
    word_tokens(text).into_iter().filter(|t| !is_stop_word(t)).collect()
}

/// An inverted index over one dataset's chunks.
#[derive(Debug, Default)]
pub struct Bm25Index {
    /// Chunk payloads, in load order.
    docs: Vec<Value>,
    lengths: Vec<u32>,
    avgdl: f64,
    /// term → (doc, tf), docs ascending.
    postings: HashMap<String, Vec<(u32, u32)>>,
}

impl Bm25Index {
    /// Indexes `(payload, text)` pairs; texts with no tokens are skipped.
    pub fn build<I: IntoIterator<Item = (Value, String)>>(chunks: I) -> Self {
        let mut index = Bm25Index::default();
        let mut total = 0u64;
        for (payload, text) in chunks {
            let tokens = bm25_tokens(&text);
            if tokens.is_empty() {
                continue;
            }
            let doc = index.docs.len() as u32;
            let mut tf: HashMap<String, u32> = HashMap::new();
            for t in &tokens {
                *tf.entry(t.clone()).or_default() += 1;
            }
            for (term, n) in tf {
                index.postings.entry(term).or_default().push((doc, n));
            }
            total += tokens.len() as u64;
            index.lengths.push(tokens.len() as u32);
            index.docs.push(payload);
        }
        if !index.docs.is_empty() {
            index.avgdl = total as f64 / index.docs.len() as f64;
        }
        index
    }

    pub fn len(&self) -> usize {
        self.docs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    pub fn doc(&self, i: usize) -> &Value {
        &self.docs[i]
    }

    /// The `top_k` best (doc, score) pairs, highest first, ties in load
    /// order. Zero-score chunks fill the list up to `top_k`; a query with no
    /// tokens returns nothing.
    pub fn search(&self, query: &str, top_k: usize) -> Vec<(usize, f64)> {
        let mut terms = bm25_tokens(query);
        terms.sort();
        terms.dedup();
        if terms.is_empty() || self.docs.is_empty() || self.avgdl == 0.0 || top_k == 0 {
            return Vec::new();
        }
        let n = self.docs.len() as f64;
        // Dense accumulators (one slot per chunk) and the chunks touched: no
        // hashing per posting, and only the touched chunks are ranked.
        let mut scores = vec![0f64; self.docs.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in &terms {
            let Some(postings) = self.postings.get(term) else { continue };
            let df = postings.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let tf = f64::from(tf);
                let dl = f64::from(self.lengths[doc as usize]);
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / self.avgdl));
                let slot = &mut scores[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += s;
            }
        }
        let mut ranked: Vec<(usize, f64)> = touched.into_iter().map(|d| (d as usize, scores[d as usize])).collect();
        let order = |a: &(usize, f64), b: &(usize, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > top_k {
            // Partition around the top_k-th, then sort only the head.
            ranked.select_nth_unstable_by(top_k - 1, order);
            ranked.truncate(top_k);
        }
        ranked.sort_by(order);
        if ranked.len() < top_k {
            let mut matched = vec![false; self.docs.len()];
            for &(d, _) in &ranked {
                matched[d] = true;
            }
            let fill = (0..self.docs.len()).filter(|&d| !matched[d]).take(top_k - ranked.len());
            ranked.extend(fill.map(|d| (d, 0.0)).collect::<Vec<_>>());
        }
        ranked
    }
}

/// BM25 indexes by (dataset, data version), shared by CHUNKS_LEXICAL and the
/// hybrid retrievers. A new data version builds a new index.
#[derive(Clone)]
pub struct LexicalIndexCache {
    cache: Cache<(DatasetId, u64), Arc<Bm25Index>>,
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

impl LexicalIndexCache {
    /// The dataset's index, built from its chunk nodes on first use.
    /// Zero chunks is `NoDataError`.
    pub async fn get(&self, ctx: &DatasetPorts) -> Result<Arc<Bm25Index>> {
        let key = (ctx.dataset.id, ctx.data_version);
        let graph = ctx.graph.clone();
        let dataset = ctx.dataset.id;
        let index = self
            .cache
            .try_get_with(key, async move {
                let nodes = graph.nodes_by_type(dataset, DOCUMENT_CHUNK).await?;
                let chunks = nodes.into_iter().filter_map(|n| {
                    let text = n.properties.get("text").and_then(Value::as_str).filter(|t| !t.is_empty())?.to_string();
                    let mut payload = n.properties;
                    payload.entry("id").or_insert_with(|| json!(n.id.to_string()));
                    payload.entry("type").or_insert_with(|| json!(n.node_type));
                    Some((Value::Object(payload), text))
                });
                Ok::<_, RecallError>(Arc::new(Bm25Index::build(chunks)))
            })
            .await
            .map_err(|e: Arc<RecallError>| {
                tracing::warn!(error = %e, "BM25 index build failed");
                RecallError::NoData("Graph engine initialization failed".into())
            })?;
        if index.is_empty() {
            self.cache.invalidate(&key).await;
            return Err(RecallError::NoData("No valid chunks loaded during initialization.".into()));
        }
        Ok(index)
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
    async fn get_retrieved_objects(
        &self,
        ctx: &DatasetPorts,
        query: &str,
        options: &RetrieverOptions,
    ) -> Result<Vec<Value>> {
        let index = self.cache.get(ctx).await?;
        let top_k = options.top_k().unwrap_or(self.default_top_k);
        Ok(index.search(query, top_k).into_iter().map(|(d, _)| index.doc(d).clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(texts: &[&str]) -> Bm25Index {
        Bm25Index::build(texts.iter().enumerate().map(|(i, t)| (json!({"i": i}), t.to_string())))
    }

    /// The BM25 formula (docs/retrievers.md), computed directly by scanning, to check the index against.
    fn reference_score(texts: &[&str], query: &str, doc: usize) -> f64 {
        let docs: Vec<Vec<String>> = texts.iter().map(|t| bm25_tokens(t)).filter(|d| !d.is_empty()).collect();
        let n = docs.len() as f64;
        let avgdl = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
        let mut q = bm25_tokens(query);
        q.sort();
        q.dedup();
        q.iter()
            .map(|t| {
                let df = docs.iter().filter(|d| d.contains(t)).count() as f64;
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
        assert_eq!(hits[0].0, 3);
        assert_eq!(hits[1].0, 0);
        for (doc, score) in &hits {
            assert!((score - reference_score(&texts, "flour starter flour", *doc)).abs() < 1e-12, "doc {doc}");
        }
        // Zero-score chunks fill up in load order.
        assert_eq!((hits[2].0, hits[2].1), (1, 0.0));
        assert_eq!(hits[3].0, 2);
    }

    #[test]
    fn stop_words_unicode_and_empty_queries() {
        let idx = index(&["Größe der Straße", "the and of", "日本語 テキスト"]);
        assert_eq!(idx.len(), 2, "a chunk of stop words only is skipped");
        assert!(idx.search("the of and", 5).is_empty());
        assert_eq!(idx.search("STRAßE", 1)[0].0, 0);
        assert_eq!(idx.search("日本語", 1)[0].0, 1);
        assert!(idx.search("", 3).is_empty());
    }
}
