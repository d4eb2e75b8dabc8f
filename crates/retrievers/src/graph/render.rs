//! Triplets to the "Nodes: / Connections:" context string (docs/retrievers.md).

use std::collections::{HashMap, HashSet};

use recall_core::text::DEFAULT_STOP_WORDS;
use recall_core::Node;
use serde_json::Value;

use super::search::Triplet;

const ASCII_PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// The `top_n` most frequent words (lower-cased, stripped of ASCII
/// punctuation, stop words removed), ties broken by first occurrence.
pub fn top_frequent_words(text: &str, top_n: usize) -> Vec<String> {
    let mut counts: HashMap<String, (usize, usize)> = HashMap::new();
    for (pos, raw) in text.split_whitespace().enumerate() {
        let word = raw.to_lowercase().trim_matches(|c| ASCII_PUNCTUATION.contains(c)).to_string();
        if word.is_empty() || DEFAULT_STOP_WORDS.contains(&word.as_str()) {
            continue;
        }
        counts.entry(word).or_insert((0, pos)).0 += 1;
    }
    let mut words: Vec<(String, (usize, usize))> = counts.into_iter().collect();
    words.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    words.into_iter().take(top_n).map(|(w, _)| w).collect()
}

fn prop<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.properties.get(key).and_then(Value::as_str)
}

/// A node's display name and content. Text nodes (chunks, summaries) are
/// titled by their first seven words and top three frequent words.
pub fn node_name_and_content(node: &Node) -> (String, String) {
    if let Some(text) = prop(node, "text").filter(|t| !t.is_empty()) {
        let first: Vec<&str> = text.split_whitespace().take(7).collect();
        let title = format!("{}... [{}]", first.join(" "), top_frequent_words(text, 3).join(", "));
        return (title, text.to_string());
    }
    // Deliberate fix of a Cognee quirk (docs/retrievers.md): a node without a
    // name is "Unnamed Node" and one without a description shows its name,
    // never the literal "None".
    let name = prop(node, "name").filter(|n| !n.is_empty()).unwrap_or("Unnamed Node").to_string();
    let content =
        prop(node, "description").filter(|d| !d.is_empty()).map(str::to_string).unwrap_or_else(|| name.clone());
    (name, content)
}

/// The connection line of one edge.
fn connection(t: &Triplet, names: &HashMap<uuid::Uuid, String>) -> String {
    let label = &t.edge.relationship_name;
    let mut line = format!("{} --[{label}]--> {}", names[&t.node1.id], names[&t.node2.id]);
    if let Some(text) = t.edge.edge_text.as_deref().filter(|x| !x.is_empty() && *x != label) {
        line.push_str(&format!("  ({text})"));
    }
    line
}

/// `""` with no triplets; otherwise the Nodes section (each distinct node
/// once, in first-appearance order) and the Connections section.
pub fn resolve_edges_to_text(triplets: &[Triplet]) -> String {
    if triplets.is_empty() {
        return String::new();
    }
    let mut seen = HashSet::new();
    let mut names = HashMap::new();
    let mut blocks = Vec::new();
    for t in triplets {
        for node in [&t.node1, &t.node2] {
            if seen.insert(node.id) {
                let (name, content) = node_name_and_content(node);
                blocks.push(format!("Node: {name}\n__node_content_start__\n{content}\n__node_content_end__\n"));
                names.insert(node.id, name);
            }
        }
    }
    let lines: Vec<String> = triplets.iter().map(|t| connection(t, &names)).collect();
    format!("Nodes:\n{}\n\nConnections:\n{}", blocks.join("\n"), lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use recall_core::Edge;
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn node(id: u128, ty: &str, props: Value) -> Node {
        Node {
            id: Uuid::from_u128(id),
            node_type: ty.into(),
            properties: props.as_object().cloned().unwrap_or_default(),
        }
    }

    #[test]
    fn frequent_words_tie_break_by_first_occurrence() {
        assert_eq!(top_frequent_words("The cat, the dog. Cat! Bird dog", 3), vec!["cat", "dog", "bird"]);
    }

    #[test]
    fn exact_context_format() {
        let chunk = node(
            1,
            "DocumentChunk",
            json!({"text": "Ada Lovelace wrote the first program for the analytical engine."}),
        );
        let ada = node(2, "Entity", json!({"name": "ada lovelace", "description": "A mathematician."}));
        let doc = node(3, "TextDocument", json!({"name": "ada.txt"}));
        let t1 = Triplet {
            node1: chunk.clone(),
            edge: Edge::new(chunk.id, "contains", ada.id).with_text("mentions ada"),
            node2: ada,
            score: 1.0,
        };
        let t2 =
            Triplet { node1: chunk.clone(), edge: Edge::new(chunk.id, "is_part_of", doc.id), node2: doc, score: 2.0 };
        let expected = "Nodes:\n\
Node: Ada Lovelace wrote the first program for... [ada, lovelace, wrote]\n\
__node_content_start__\nAda Lovelace wrote the first program for the analytical engine.\n__node_content_end__\n\n\
Node: ada lovelace\n__node_content_start__\nA mathematician.\n__node_content_end__\n\n\
Node: ada.txt\n__node_content_start__\nada.txt\n__node_content_end__\n\n\n\
Connections:\n\
Ada Lovelace wrote the first program for... [ada, lovelace, wrote] --[contains]--> ada lovelace  (mentions ada)\n\
Ada Lovelace wrote the first program for... [ada, lovelace, wrote] --[is_part_of]--> ada.txt";
        assert_eq!(resolve_edges_to_text(&[t1, t2]), expected);
        assert_eq!(resolve_edges_to_text(&[]), "");
    }
}
