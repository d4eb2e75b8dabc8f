//! The zero-key default embedder: a small sentence-transformer
//! (paraphrase-MiniLM-L3-v2, 384 dimensions, through the `pocket-encoder`
//! crate) whose weights are compiled into the binary. Nothing is downloaded
//! at build or run time and no key is needed; unlike the hashing embedder it
//! places texts by meaning, so a question finds a passage that answers it in
//! other words.
//!
//! The model reads at most 128 word pieces. A longer text (a default chunk is
//! 512 words) is cut into windows of [`WINDOW_WORDS`] words, each window is
//! embedded, and the text's vector is the word-weighted mean of its windows,
//! normalised — so every part of a chunk counts, not only its first lines.

use async_trait::async_trait;
use pocket_encoder::Encoder;
use recall_core::ports::Embedder;
use recall_core::{RecallError, Result};

/// Words per window: English averages about 1.3 word pieces a word, so 80
/// words stay inside the model's 126 content tokens for ordinary prose.
pub const WINDOW_WORDS: usize = 80;

/// The model's width.
pub const DIMENSIONS: usize = 384;

/// The bundled sentence-transformer as Recall's [`Embedder`].
#[derive(Clone)]
pub struct LocalEmbedder {
    encoder: Encoder,
    model: String,
    threads: usize,
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder").field("model", &self.model).field("threads", &self.threads).finish()
    }
}

impl LocalEmbedder {
    /// Loads the compiled-in weights (once per process; later calls share them).
    pub fn new() -> Result<Self> {
        let encoder = Encoder::new().map_err(|e| RecallError::Provider(format!("local embedding model: {e}")))?;
        let threads = std::thread::available_parallelism().map(usize::from).unwrap_or(1).clamp(1, 8);
        Ok(Self { encoder, model: model_name(), threads })
    }

    /// Embeds texts on the calling thread (the async [`Embedder::embed`] runs
    /// this on blocking threads, a share of the texts each).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        texts.iter().map(|text| self.embed_text(text)).collect()
    }

    fn embed_text(&self, text: &str) -> Result<Vec<f32>> {
        let windows = windows(text);
        if windows.is_empty() {
            // Nothing to read (blank or whitespace): the zero vector, as the
            // hashing embedder gives; it matches nothing.
            return Ok(vec![0.0; DIMENSIONS]);
        }
        let texts: Vec<&str> = windows.iter().map(|w| w.text.as_str()).collect();
        let vectors = self.encoder.embed(&texts).map_err(|e| RecallError::Provider(format!("local embedding: {e}")))?;
        let mut pooled = vec![0f32; DIMENSIONS];
        for (window, vector) in windows.iter().zip(&vectors) {
            let weight = window.words as f32;
            for (sum, value) in pooled.iter_mut().zip(vector) {
                *sum += weight * value;
            }
        }
        let norm = pooled.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            pooled.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(pooled)
    }
}

/// The name recorded on every collection this embedder fills: the model's
/// identity and the pooling over windows, so a change of either is caught.
pub fn model_name() -> String {
    format!("{}+window{WINDOW_WORDS}", pocket_encoder::model_info().id)
}

struct Window {
    text: String,
    words: usize,
}

/// The text in windows of at most [`WINDOW_WORDS`] whitespace-separated words.
fn windows(text: &str) -> Vec<Window> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words.chunks(WINDOW_WORDS).map(|chunk| Window { text: chunk.join(" "), words: chunk.len() }).collect()
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model(&self) -> String {
        self.model.clone()
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn batch_size(&self) -> usize {
        64
    }

    /// (The engine keeps recent query vectors itself: no cache here.)
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.run(texts).await
    }
}

impl LocalEmbedder {
    /// The model off the async runtime: the texts split over up to
    /// `threads` blocking threads, results back in order.
    async fn run(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let share = texts.len().div_ceil(self.threads.min(texts.len()));
        let mut tasks = Vec::new();
        for part in texts.chunks(share) {
            let this = self.clone();
            let part = part.to_vec();
            tasks.push(tokio::task::spawn_blocking(move || this.embed_blocking(&part)));
        }
        let mut out = Vec::with_capacity(texts.len());
        for task in tasks {
            let vectors = task.await.map_err(|e| RecallError::Provider(format!("local embedding task: {e}")))??;
            out.extend(vectors);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[tokio::test]
    async fn meaning_not_words_decides_the_nearest_text() {
        let embedder = LocalEmbedder::new().unwrap();
        let texts = [
            "How can I keep my Debian system up-to-date?".to_string(),
            "The recipe needs two cups of flour and an egg.".to_string(),
        ];
        let docs = embedder.embed(&texts).await.unwrap();
        let query =
            embedder.embed(&["what's the command to pull in the newest package versions".to_string()]).await.unwrap();
        assert_eq!(query[0].len(), DIMENSIONS);
        // No word in common with either, yet the update question is nearer.
        assert!(cosine(&query[0], &docs[0]) > cosine(&query[0], &docs[1]) + 0.05);
    }

    #[tokio::test]
    async fn long_texts_pool_their_windows_and_blank_ones_are_zero() {
        let embedder = LocalEmbedder::new().unwrap();
        let head = "Bees communicate the direction of flowers with a waggle dance. ".repeat(12);
        let tail = "The Jupiter system has dozens of moons, the largest being Ganymede. ".repeat(12);
        let long = format!("{head}{tail}");
        assert!(windows(&long).len() >= 3);
        let vectors = embedder.embed(&[long, "   ".to_string()]).await.unwrap();
        let norm: f32 = vectors[0].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        assert!(vectors[1].iter().all(|x| *x == 0.0));
        // The tail is read: a question about moons is near the long text.
        let moons = embedder.embed(&["Which moon of Jupiter is the biggest?".to_string()]).await.unwrap();
        let cooking = embedder.embed(&["How long to bake bread?".to_string()]).await.unwrap();
        assert!(cosine(&moons[0], &vectors[0]) > cosine(&cooking[0], &vectors[0]));
    }

    #[tokio::test]
    async fn batches_keep_their_order_and_equal_single_calls() {
        let embedder = LocalEmbedder::new().unwrap();
        let texts: Vec<String> = (0..9).map(|i| format!("sentence number {i} about topic {}", i * 7)).collect();
        let batch = embedder.embed(&texts).await.unwrap();
        for (text, vector) in texts.iter().zip(&batch) {
            let single = embedder.embed(std::slice::from_ref(text)).await.unwrap();
            assert!(cosine(&single[0], vector) > 0.9999);
        }
        assert_eq!(embedder.model(), model_name());
    }
}
