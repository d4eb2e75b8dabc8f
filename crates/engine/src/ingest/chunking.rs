//! Paragraph- and sentence-aware chunking (Cognee's TextChunker): pieces are
//! sentences, grouped until the next one would exceed the size budget. A
//! sentence longer than the budget is cut into budget-sized runs of words.

use recall_core::text::word_count;
use recall_core::CutType;
use unicode_segmentation::UnicodeSegmentation;

/// A chunk of a document, before ids are assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextChunk {
    pub text: String,
    /// Words in the chunk.
    pub chunk_size: usize,
    pub chunk_index: usize,
    pub cut_type: CutType,
}

struct Piece {
    text: String,
    words: usize,
    cut_type: CutType,
    /// The piece starts a new paragraph.
    paragraph_start: bool,
}

fn pieces(text: &str, max_words: usize) -> Vec<Piece> {
    let mut out = Vec::new();
    let normalised = text.replace("\r\n", "\n");
    let paragraphs = normalised.split("\n\n").map(str::trim).filter(|p| !p.is_empty());
    for paragraph in paragraphs {
        let sentences: Vec<&str> = paragraph.split_sentence_bounds().map(str::trim).filter(|s| !s.is_empty()).collect();
        let last = sentences.len().saturating_sub(1);
        for (i, sentence) in sentences.iter().enumerate() {
            let end_type = if i == last { CutType::ParagraphEnd } else { CutType::SentenceEnd };
            let words: Vec<&str> = sentence.split_whitespace().collect();
            if words.len() <= max_words {
                out.push(Piece {
                    text: sentence.to_string(),
                    words: words.len(),
                    cut_type: end_type,
                    paragraph_start: i == 0,
                });
                continue;
            }
            let runs: Vec<&[&str]> = words.chunks(max_words).collect();
            let last_run = runs.len() - 1;
            for (j, run) in runs.iter().enumerate() {
                out.push(Piece {
                    text: run.join(" "),
                    words: run.len(),
                    cut_type: if j == last_run { end_type } else { CutType::SentenceCut },
                    paragraph_start: i == 0 && j == 0,
                });
            }
        }
    }
    out
}

/// Splits `text` into chunks of at most `max_words` words (at least one word each).
pub fn chunk_text(text: &str, max_words: usize) -> Vec<TextChunk> {
    let max_words = max_words.max(1);
    let mut chunks = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    let mut cut_type = CutType::ParagraphEnd;
    for piece in pieces(text, max_words) {
        if words > 0 && words + piece.words > max_words {
            chunks.push(TextChunk {
                text: std::mem::take(&mut current),
                chunk_size: words,
                chunk_index: chunks.len(),
                cut_type,
            });
            words = 0;
        }
        if !current.is_empty() {
            current.push_str(if piece.paragraph_start { "\n\n" } else { " " });
        }
        current.push_str(&piece.text);
        words += piece.words;
        cut_type = piece.cut_type;
    }
    if words > 0 {
        chunks.push(TextChunk { text: current, chunk_size: words, chunk_index: chunks.len(), cut_type });
    }
    debug_assert!(chunks.iter().all(|c| word_count(&c.text) == c.chunk_size));
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_sentences_within_budget_and_keeps_paragraphs() {
        let text = "One two three. Four five six.\n\nSeven eight. Nine ten eleven twelve.";
        let chunks = chunk_text(text, 6);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["One two three. Four five six.", "Seven eight. Nine ten eleven twelve."]);
        assert_eq!(chunks[0].cut_type, CutType::ParagraphEnd);
        assert_eq!(chunks[1].chunk_index, 1);
        assert_eq!(chunks[1].chunk_size, 6);

        let joined = chunk_text(text, 100);
        assert_eq!(joined.len(), 1);
        assert_eq!(joined[0].text, "One two three. Four five six.\n\nSeven eight. Nine ten eleven twelve.");
    }

    #[test]
    fn cuts_an_oversized_sentence() {
        let chunks = chunk_text("a b c d e f g.", 3);
        let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(texts, vec!["a b c", "d e f", "g."]);
        assert_eq!(chunks[0].cut_type, CutType::SentenceCut);
        assert_eq!(chunks[2].cut_type, CutType::ParagraphEnd);
    }

    #[test]
    fn sentence_end_when_the_budget_splits_a_paragraph() {
        let chunks = chunk_text("Alpha beta. Gamma delta.", 2);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].cut_type, CutType::SentenceEnd);
        assert_eq!(chunks[1].cut_type, CutType::ParagraphEnd);
    }

    #[test]
    fn empty_text_has_no_chunks() {
        assert!(chunk_text("  \n\n ", 10).is_empty());
    }
}
