//! The offline extractor: no model, a few transparent rules. Entities are runs
//! of capitalised words (allowing "of"/"the"/"de" inside a name), typed by
//! their head word; relations link entities mentioned in the same sentence,
//! named by the words between them.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use recall_core::ports::GraphExtractor;
use recall_core::text::is_stop_word;
use recall_core::{KgEdge, KgNode, KnowledgeGraph, Result};
use unicode_segmentation::UnicodeSegmentation;

/// Words that start sentences but name nothing.
const NOT_NAMES: &[&str] = &[
    "a", "an", "the", "this", "that", "these", "those", "there", "here", "it", "its", "they", "we", "you", "he", "she",
    "i", "in", "on", "at", "to", "for", "with", "by", "of", "from", "as", "and", "or", "but", "if", "when", "while",
    "after", "before", "during", "every", "each", "many", "most", "some", "any", "all", "no", "not", "one", "two",
    "three", "other", "another", "such", "both", "either", "neither", "to", "what", "which", "who", "how", "why",
    "where", "yes", "however", "also", "then", "so", "because", "although", "since", "until", "unless", "about",
    "over", "under", "between", "into", "onto", "upon", "per", "via", "is", "are", "was", "were", "be", "been", "do",
    "does", "did", "can", "could", "will", "would", "may", "might", "must", "should", "shall", "our", "your", "their",
    "his", "her", "my", "let", "see", "note",
];

/// Lower-case words allowed inside a multi-word name.
const NAME_JOINERS: &[&str] = &["of", "the", "de", "du", "da", "von", "van", "la", "le", "and"];

const ORGANIZATION_HEADS: &[&str] = &[
    "inc",
    "corp",
    "corporation",
    "ltd",
    "llc",
    "gmbh",
    "company",
    "co",
    "university",
    "institute",
    "agency",
    "bank",
    "foundation",
    "association",
    "society",
    "group",
    "ministry",
    "department",
    "council",
    "committee",
];
const LOCATION_HEADS: &[&str] = &[
    "river",
    "mountain",
    "mountains",
    "ocean",
    "sea",
    "lake",
    "city",
    "street",
    "island",
    "islands",
    "valley",
    "county",
    "province",
    "state",
    "bay",
    "desert",
    "forest",
    "park",
    "road",
    "avenue",
    "square",
    "coast",
];
const PERSON_TITLES: &[&str] = &["mr", "mrs", "ms", "dr", "prof", "sir", "lady", "lord", "king", "queen", "president"];
const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Longest description kept for an entity or a relation.
const MAX_DESCRIPTION: usize = 240;
/// Relations are named by at most this many words between two mentions.
const MAX_GAP_WORDS: usize = 6;

#[derive(Debug, Clone, Default)]
pub struct RuleBasedExtractor;

#[derive(Debug, Clone)]
struct Mention {
    name: String,
    entity_type: &'static str,
    /// Word positions [start, end) within the sentence.
    start: usize,
    end: usize,
}

fn is_capitalised(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

fn trim_word(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric())
}

fn classify(words: &[&str], preceded_by_title: bool) -> &'static str {
    let head = words.last().map(|w| w.to_lowercase()).unwrap_or_default();
    let first = words.first().map(|w| w.to_lowercase()).unwrap_or_default();
    if preceded_by_title || PERSON_TITLES.contains(&first.as_str()) {
        "person"
    } else if ORGANIZATION_HEADS.contains(&head.as_str()) || ORGANIZATION_HEADS.contains(&first.as_str()) {
        "organization"
    } else if LOCATION_HEADS.contains(&head.as_str()) || LOCATION_HEADS.contains(&first.as_str()) || first == "mount" {
        "location"
    } else if MONTHS.contains(&first.as_str()) {
        "date"
    } else {
        "concept"
    }
}

fn truncate(s: &str, n: usize) -> String {
    let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= n {
        collapsed
    } else {
        let cut: String = collapsed.chars().take(n).collect();
        format!("{}…", cut.trim_end())
    }
}

/// Whether a lone capitalised word opening a sentence is an ordinary word:
/// a stop word, a gerund/adverb/participle, or a word the text also uses in
/// lower case.
fn ordinary_sentence_opener(word: &str, lowercase_vocabulary: &HashSet<String>) -> bool {
    let lower = word.to_lowercase();
    is_stop_word(&lower)
        || NOT_NAMES.contains(&lower.as_str())
        || ["ing", "ly", "ed"].iter().any(|s| lower.len() > s.len() + 2 && lower.ends_with(s))
        || lowercase_vocabulary.contains(&lower)
}

/// Mentions in one sentence, left to right.
fn mentions(sentence: &str, lowercase_vocabulary: &HashSet<String>) -> Vec<Mention> {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = trim_word(words[i]);
        let sentence_start = i == 0;
        if w.is_empty() || !is_capitalised(w) || (sentence_start && NOT_NAMES.contains(&w.to_lowercase().as_str())) {
            i += 1;
            continue;
        }
        // Extend over capitalised words and joiners followed by a capitalised word.
        let start = i;
        let mut end = i + 1;
        // A word ending in punctuation (comma, period…) ends the name.
        let mut closed = words[i].ends_with(|c: char| !c.is_alphanumeric());
        while end < words.len() && !closed {
            let next = trim_word(words[end]);
            if next.is_empty() {
                break;
            }
            if is_capitalised(next) {
                closed = words[end].ends_with(|c: char| !c.is_alphanumeric());
                end += 1;
            } else if NAME_JOINERS.contains(&next) && end + 1 < words.len() && is_capitalised(trim_word(words[end + 1]))
            {
                end += 2;
                closed = words[end - 1].ends_with(|c: char| !c.is_alphanumeric());
            } else {
                break;
            }
        }
        let mut name_words: Vec<&str> = words[start..end].iter().map(|w| trim_word(w)).collect();
        let mut titled = start > 0 && PERSON_TITLES.contains(&trim_word(words[start - 1]).to_lowercase().as_str());
        if name_words.len() > 1 && PERSON_TITLES.contains(&name_words[0].to_lowercase().as_str()) {
            name_words.remove(0);
            titled = true;
        }
        let name = name_words.join(" ");
        let single_opener =
            sentence_start && name_words.len() == 1 && ordinary_sentence_opener(&name, lowercase_vocabulary);
        if !single_opener && name.chars().any(char::is_alphabetic) {
            out.push(Mention { name, entity_type: classify(&name_words, titled), start, end });
        }
        i = end;
    }
    out
}

fn relation_name(between: &[&str]) -> String {
    let content: Vec<String> = between
        .iter()
        .map(|w| trim_word(w).to_lowercase())
        .filter(|w| !w.is_empty() && !is_stop_word(w) && w.chars().all(char::is_alphabetic))
        .collect();
    if content.is_empty() {
        "related_to".into()
    } else {
        content.join("_")
    }
}

/// Extracts entities and relations from one text, deterministically.
pub fn extract_rule_based(text: &str) -> KnowledgeGraph {
    let mut graph = KnowledgeGraph::default();
    let mut ids: HashMap<String, String> = HashMap::new();
    let lowercase_vocabulary: HashSet<String> = text
        .split_whitespace()
        .map(trim_word)
        .filter(|w| w.chars().next().is_some_and(char::is_lowercase))
        .map(str::to_string)
        .collect();
    for sentence in text.unicode_sentences() {
        let sentence = sentence.trim();
        if sentence.is_empty() {
            continue;
        }
        let found = mentions(sentence, &lowercase_vocabulary);
        let words: Vec<&str> = sentence.split_whitespace().collect();
        let mut local_ids = Vec::with_capacity(found.len());
        for m in &found {
            let key = m.name.to_lowercase();
            let id = match ids.get(&key) {
                Some(id) => id.clone(),
                None => {
                    let id = format!("n{}", graph.nodes.len());
                    graph.nodes.push(KgNode {
                        id: id.clone(),
                        name: m.name.clone(),
                        node_type: m.entity_type.to_string(),
                        description: truncate(sentence, MAX_DESCRIPTION),
                    });
                    ids.insert(key, id.clone());
                    id
                }
            };
            local_ids.push(id);
        }
        // Consecutive mentions in a sentence are related by the words between them.
        for pair in 0..found.len().saturating_sub(1) {
            let (a, b) = (&found[pair], &found[pair + 1]);
            if local_ids[pair] == local_ids[pair + 1] || b.start < a.end {
                continue;
            }
            let between = &words[a.end..b.start];
            let relationship_name =
                if between.len() <= MAX_GAP_WORDS { relation_name(between) } else { "mentioned_with".to_string() };
            let key = (local_ids[pair].clone(), relationship_name.clone(), local_ids[pair + 1].clone());
            let duplicate = graph
                .edges
                .iter()
                .any(|e| e.source_node_id == key.0 && e.relationship_name == key.1 && e.target_node_id == key.2);
            if duplicate {
                continue;
            }
            graph.edges.push(KgEdge {
                source_node_id: key.0,
                target_node_id: key.2,
                relationship_name,
                description: Some(truncate(sentence, MAX_DESCRIPTION)),
            });
        }
    }
    graph
}

#[async_trait]
impl GraphExtractor for RuleBasedExtractor {
    fn name(&self) -> &'static str {
        "rule-based"
    }

    async fn extract(&self, text: &str) -> Result<KnowledgeGraph> {
        Ok(extract_rule_based(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(g: &KnowledgeGraph) -> Vec<(&str, &str)> {
        g.nodes.iter().map(|n| (n.name.as_str(), n.node_type.as_str())).collect()
    }

    #[test]
    fn finds_capitalised_names_with_joiners_and_types() {
        let g = extract_rule_based(
            "The Bank of England sits near the River Thames. Dr Ada Lovelace wrote notes on the Analytical Engine.",
        );
        assert_eq!(
            names(&g),
            vec![
                ("Bank of England", "organization"),
                ("River Thames", "location"),
                ("Ada Lovelace", "person"),
                ("Analytical Engine", "concept"),
            ]
        );
        let rels: Vec<&str> = g.edges.iter().map(|e| e.relationship_name.as_str()).collect();
        assert_eq!(rels, vec!["sits_near", "wrote_notes"]);
        assert_eq!(g.edges[0].description.as_deref(), Some("The Bank of England sits near the River Thames."));
    }

    #[test]
    fn sentence_initial_common_words_are_not_entities() {
        let g = extract_rule_based("Every value has an owner. Moving a value transfers ownership in Rust.");
        assert_eq!(names(&g), vec![("Rust", "concept")]);
        assert!(g.edges.is_empty());
    }

    #[test]
    fn repeated_names_are_one_node_and_long_gaps_are_mentions() {
        let g = extract_rule_based(
            "Jupiter has more than ninety known moons, and Ganymede is bigger than Mercury. Jupiter is large.",
        );
        assert_eq!(names(&g), vec![("Jupiter", "concept"), ("Ganymede", "concept"), ("Mercury", "concept")]);
        let rels: Vec<(&str, &str, &str)> = g
            .edges
            .iter()
            .map(|e| (e.source_node_id.as_str(), e.relationship_name.as_str(), e.target_node_id.as_str()))
            .collect();
        assert_eq!(rels, vec![("n0", "mentioned_with", "n1"), ("n1", "bigger_than", "n2")]);
    }

    #[test]
    fn empty_and_lowercase_text_yield_nothing() {
        assert_eq!(extract_rule_based(""), KnowledgeGraph::default());
        assert_eq!(extract_rule_based("all lower case words here."), KnowledgeGraph::default());
    }
}
