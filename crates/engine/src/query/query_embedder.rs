//! Query embeddings, remembered for a short while: one recall embeds its
//! question once — for dataset routing, then for every dataset's retriever —
//! and a repeated question is not embedded again.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use recall_core::ports::Embedder;
use recall_core::Result;

/// Bytes of query text and vectors kept at most.
const CACHE_BYTES: u64 = 32 << 20;
const CACHE_TTL: Duration = Duration::from_secs(600);

/// The engine's embedder with a cache of single-text calls (queries).
/// Batches (ingestion) pass straight through.
pub(crate) struct QueryEmbedder {
    inner: Arc<dyn Embedder>,
    cache: moka::future::Cache<String, Arc<Vec<f32>>>,
}

impl QueryEmbedder {
    pub(crate) fn new(inner: Arc<dyn Embedder>) -> Self {
        let cache = moka::future::Cache::builder()
            .weigher(|text: &String, vector: &Arc<Vec<f32>>| {
                u32::try_from(text.len() + vector.len() * 4).unwrap_or(u32::MAX)
            })
            .max_capacity(CACHE_BYTES)
            .time_to_live(CACHE_TTL)
            .build();
        Self { inner, cache }
    }
}

#[async_trait]
impl Embedder for QueryEmbedder {
    fn model(&self) -> String {
        self.inner.model()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn batch_size(&self) -> usize {
        self.inner.batch_size()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let [text] = texts else { return self.inner.embed(texts).await };
        if let Some(vector) = self.cache.get(text).await {
            return Ok(vec![vector.as_ref().clone()]);
        }
        let out = self.inner.embed(texts).await?;
        if let [vector] = out.as_slice() {
            self.cache.insert(text.clone(), Arc::new(vector.clone())).await;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    struct Counting(AtomicUsize);

    #[async_trait]
    impl Embedder for Counting {
        fn model(&self) -> String {
            "counting".into()
        }
        fn dimensions(&self) -> usize {
            2
        }
        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[tokio::test]
    async fn a_query_is_embedded_once_and_batches_pass_through() {
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let e = QueryEmbedder::new(inner.clone());
        let q = vec!["where is the starter?".to_string()];
        let first = e.embed(&q).await.unwrap();
        assert_eq!(e.embed(&q).await.unwrap(), first);
        assert_eq!(inner.0.load(Ordering::SeqCst), 1);
        let batch = vec!["a".to_string(), "b".to_string()];
        e.embed(&batch).await.unwrap();
        e.embed(&batch).await.unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
        assert_eq!((e.model(), e.dimensions()), ("counting".to_string(), 2));
    }
}
