//! The offline summarizer: the chunk's leading sentences, up to a word budget.

use async_trait::async_trait;
use recall_core::ports::Summarizer;
use recall_core::Result;
use unicode_segmentation::UnicodeSegmentation;

#[derive(Debug, Clone)]
pub struct ExtractiveSummarizer {
    pub max_words: usize,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        Self { max_words: 40 }
    }
}

/// The first sentences of `text` that fit in `max_words` (at least one sentence, cut if needed).
pub fn extractive_summary(text: &str, max_words: usize) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut words = 0;
    for sentence in text.unicode_sentences().map(str::trim).filter(|s| !s.is_empty()) {
        let n = sentence.split_whitespace().count();
        if words > 0 && words + n > max_words {
            break;
        }
        out.push(sentence);
        words += n;
        if words >= max_words {
            break;
        }
    }
    let joined = out.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    let mut cut: Vec<&str> = joined.split(' ').collect();
    if cut.len() > max_words {
        cut.truncate(max_words);
        return format!("{}…", cut.join(" "));
    }
    joined
}

#[async_trait]
impl Summarizer for ExtractiveSummarizer {
    fn name(&self) -> &'static str {
        "extractive"
    }

    async fn summarize(&self, text: &str) -> Result<String> {
        Ok(extractive_summary(text, self.max_words))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_leading_sentences_within_budget() {
        assert_eq!(extractive_summary("One two. Three four five. Six.", 4), "One two.");
        assert_eq!(extractive_summary("One two. Three four.", 10), "One two. Three four.");
        assert_eq!(extractive_summary("a b c d e f", 3), "a b c…");
        assert_eq!(extractive_summary("", 3), "");
    }
}
