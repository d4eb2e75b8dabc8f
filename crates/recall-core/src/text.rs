//! Text helpers shared by retrievers and embedders (pure functions).

/// Cognee's `DEFAULT_STOP_WORDS` (docs/retrievers.md, "CHUNKS_LEXICAL: BM25").
pub const DEFAULT_STOP_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "is", "are", "was", "were", "in", "on", "at", "to", "for", "with", "by",
    "about", "of", "from", "as", "that", "this", "these", "those", "it", "its", "them", "they", "their", "he", "she",
    "his", "her", "him", "we", "our", "you", "your", "not", "be", "been", "being", "have", "has", "had", "do", "does",
    "did", "can", "could", "will", "would", "shall", "should", "may", "might", "must", "when", "where", "which", "who",
    "whom", "whose", "why", "how",
];

pub fn is_stop_word(token: &str) -> bool {
    DEFAULT_STOP_WORDS.contains(&token)
}

/// `re.findall(r"\w+", text.lower())` with Python's Unicode `\w`: runs of
/// alphanumeric characters, marks and connector punctuation (`_`).
pub fn word_tokens(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let mut tokens = Vec::new();
    let mut current = String::new();
    for c in lower.chars() {
        if is_word_char(c) {
            current.push(c);
        } else if !current.is_empty() {
            tokens.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Number of whitespace-separated words: the token measure used for chunk sizes.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_like_python_findall_w() {
        assert_eq!(word_tokens("Héllo, WORLD_1 — naïve!"), vec!["héllo", "world_1", "naïve"]);
        assert!(word_tokens("  ,;  ").is_empty());
        assert!(is_stop_word("the"));
        assert!(!is_stop_word("paris"));
    }
}
