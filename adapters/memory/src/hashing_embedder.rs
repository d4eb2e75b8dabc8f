use async_trait::async_trait;
use recall_core::ports::Embedder;
use recall_core::text::{is_stop_word, word_tokens};
use recall_core::{RecallError, Result};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The built-in offline embedder: deterministic feature hashing of words,
/// word bigrams and character trigrams, L2-normalised. No model download, no
/// network; similar wording gives nearby vectors, which is what chunk search
/// needs when no embedding endpoint is configured.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    dimensions: usize,
}

const WORD_WEIGHT: f32 = 1.0;
const BIGRAM_WEIGHT: f32 = 0.5;
const TRIGRAM_WEIGHT: f32 = 0.25;

impl HashingEmbedder {
    /// Fails on a zero width, which could hold no feature.
    pub fn new(dimensions: usize) -> Result<Self> {
        if dimensions == 0 {
            return Err(RecallError::invalid_input("embedding dimensions must be positive"));
        }
        Ok(Self { dimensions })
    }

    fn add(&self, vector: &mut [f32], feature: &str, seed: u64, weight: f32) {
        let h = xxh3_64_with_seed(feature.as_bytes(), seed);
        let slot = (h % self.dimensions as u64) as usize;
        // The top bit picks the sign, so collisions cancel out instead of piling up.
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        vector[slot] += sign * weight;
    }

    /// Embeds one text synchronously.
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0f32; self.dimensions];
        let tokens: Vec<String> = word_tokens(text).into_iter().filter(|t| !is_stop_word(t)).collect();
        for token in &tokens {
            self.add(&mut vector, token, 1, WORD_WEIGHT);
            let padded: Vec<char> = format!(" {token} ").chars().collect();
            for gram in padded.windows(3) {
                let gram: String = gram.iter().collect();
                self.add(&mut vector, &gram, 3, TRIGRAM_WEIGHT);
            }
        }
        for pair in tokens.windows(2) {
            self.add(&mut vector, &format!("{} {}", pair[0], pair[1]), 2, BIGRAM_WEIGHT);
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

#[async_trait]
impl Embedder for HashingEmbedder {
    fn model(&self) -> String {
        format!("recall-hashing-v1-{}", self.dimensions)
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn batch_size(&self) -> usize {
        256
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::cosine_distance;

    #[test]
    fn is_deterministic_normalised_and_similarity_aware() {
        let e = HashingEmbedder::new(256).unwrap();
        let a = e.embed_one("The Eiffel Tower is in Paris");
        assert_eq!(a, e.embed_one("The Eiffel Tower is in Paris"));
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5);
        let near = cosine_distance(&a, &e.embed_one("Where is the Eiffel tower?"));
        let far = cosine_distance(&a, &e.embed_one("Photosynthesis converts light into sugar"));
        assert!(near < far, "near {near} far {far}");
        assert!(HashingEmbedder::new(0).is_err());
        assert!(e.embed_one("").iter().all(|x| *x == 0.0));
    }
}
