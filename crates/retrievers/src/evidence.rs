//! References (`include_references`, docs/retrievers.md): the `Evidence:` text
//! block appended to answers and the structured `metadata.evidence` entries.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One structured reference (`metadata.evidence[i]`), snake_case as Cognee dumps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvidenceReference {
    /// `segment`, `graph_node`, `graph_edge` or `triplet`.
    pub kind: String,
    pub artifact_id: String,
    /// `used_as_context` or `supports_assertion`.
    pub role: String,
    pub dataset_id: Option<String>,
    pub source_ref_key: Option<String>,
    pub data_id: Option<String>,
    pub chunk_id: Option<String>,
    pub chunk_index: Option<i64>,
    pub document_name: Option<String>,
    pub source_node_id: Option<String>,
    pub target_node_id: Option<String>,
    pub relationship_name: Option<String>,
    pub assertion_id: Option<String>,
    pub label: Option<String>,
    pub rank: Option<usize>,
    pub score: Option<f64>,
}

/// The stop words removed from answer terms (docs/retrievers.md).
const EVIDENCE_STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be", "because",
    "been", "before", "being", "below", "between", "both", "but", "by", "can", "did", "do", "does", "doing", "down",
    "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor",
    "not", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there", "these", "they",
    "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "you", "your", "yours",
];

/// At most this many bullets.
pub const MAX_EVIDENCE: usize = 5;

/// `[a-z0-9]+` runs of the lower-cased text.
fn ascii_terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit())).filter(|t| !t.is_empty()).map(str::to_string)
}

fn answer_terms(answer: &str) -> HashSet<String> {
    ascii_terms(&answer.to_lowercase()).filter(|t| t.len() >= 3 && !EVIDENCE_STOP_WORDS.contains(&t.as_str())).collect()
}

/// A chunk payload, possibly nested under `payload`.
fn chunk_fields(obj: &Value) -> &Value {
    obj.get("payload").filter(|p| p.is_object()).unwrap_or(obj)
}

fn non_blank<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.trim().is_empty())
}

/// 1-based chunk number: `chunk_number` > 0, else `chunk_index` + 1 (bools rejected).
fn chunk_number(p: &Value) -> Option<i64> {
    if let Some(n) = p.get("chunk_number").and_then(Value::as_i64).filter(|n| *n > 0) {
        return Some(n);
    }
    p.get("chunk_index").and_then(Value::as_i64).filter(|i| *i >= 0).map(|i| i + 1)
}

fn snippet(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() > 160 {
        let cut: String = collapsed.chars().take(159).collect();
        format!("{}…", cut.trim_end())
    } else {
        collapsed
    }
}

fn ids_suffix(data_id: Option<&str>, chunk_id: Option<&str>) -> String {
    let parts: Vec<String> = [("data_id", data_id), ("chunk_id", chunk_id)]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}: {v}")))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The chunk `Evidence:` block for a string answer, or `None` when
/// nothing usable overlaps the answer.
pub fn chunk_evidence_block(answer: &str, chunks: &[Value]) -> Option<String> {
    let terms = answer_terms(answer);
    if terms.is_empty() {
        return None;
    }
    let mut seen = HashSet::new();
    let mut scored: Vec<(usize, String)> = Vec::new();
    for obj in chunks {
        let p = chunk_fields(obj);
        let (Some(doc), Some(n), Some(text)) = (non_blank(p, "document_name"), chunk_number(p), non_blank(p, "text"))
        else {
            continue;
        };
        let chunk_id = obj.get("id").and_then(Value::as_str).or_else(|| p.get("id").and_then(Value::as_str));
        let key = chunk_id.map(str::to_string).unwrap_or_else(|| format!("{doc}#{n}"));
        if !seen.insert(key) {
            continue;
        }
        let overlap = ascii_terms(&text.to_lowercase()).collect::<HashSet<_>>().intersection(&terms).count();
        if overlap == 0 {
            continue;
        }
        let data_id = p.get("document_id").and_then(Value::as_str);
        let bullet = format!("- chunk {n} of document {doc}{}: \"{}\"", ids_suffix(data_id, chunk_id), snippet(text));
        scored.push((overlap, bullet));
    }
    // Stable: equal overlaps keep retrieval order.
    scored.sort_by_key(|s| std::cmp::Reverse(s.0));
    let bullets: Vec<String> = scored.into_iter().take(MAX_EVIDENCE).map(|(_, b)| b).collect();
    (!bullets.is_empty()).then(|| format!("Evidence:\n{}", bullets.join("\n")))
}

/// Appends the block to the answer, or returns the answer unchanged.
pub fn append_block(answer: &str, block: Option<String>) -> String {
    match block {
        Some(b) => format!("{answer}\n\n{b}"),
        None => answer.to_string(),
    }
}

/// The graph `Evidence:` block, from `supports_assertion` segments only: the
/// first five references, then de-duplicated by (data_id, chunk_id), no snippet.
pub fn segment_evidence_block(refs: &[EvidenceReference]) -> Option<String> {
    let mut seen = HashSet::new();
    let bullets: Vec<String> = refs
        .iter()
        .filter(|r| r.kind == "segment" && r.role == "supports_assertion")
        .take(MAX_EVIDENCE)
        .filter(|r| seen.insert((r.data_id.clone(), r.chunk_id.clone())))
        .map(|r| {
            let n = r.chunk_index.map(|i| (i + 1).to_string()).unwrap_or_else(|| "unknown".into());
            let doc = r.document_name.as_deref().unwrap_or("unknown");
            format!("- chunk {n} of document {doc}{}", ids_suffix(r.data_id.as_deref(), r.chunk_id.as_deref()))
        })
        .collect();
    (!bullets.is_empty()).then(|| format!("Evidence:\n{}", bullets.join("\n")))
}

/// `source_ref:v1:<dataset_id>:<data_id>`.
pub fn source_ref_key(dataset_id: &str, data_id: &str) -> String {
    format!("source_ref:v1:{dataset_id}:{data_id}")
}

/// One `segment` reference per retrieved chunk (RAG_COMPLETION).
pub fn chunk_segments(chunks: &[Value], dataset_id: &str) -> Vec<EvidenceReference> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (rank, obj) in chunks.iter().enumerate() {
        let p = chunk_fields(obj);
        let Some(chunk_id) = p.get("id").and_then(Value::as_str) else { continue };
        let data_id = p.get("document_id").and_then(Value::as_str).map(str::to_string);
        let key_owner = data_id.clone().unwrap_or_else(|| dataset_id.to_string());
        if !seen.insert((key_owner, chunk_id.to_string())) {
            continue;
        }
        out.push(EvidenceReference {
            kind: "segment".into(),
            artifact_id: chunk_id.to_string(),
            role: "used_as_context".into(),
            dataset_id: Some(dataset_id.to_string()),
            source_ref_key: data_id.as_deref().map(|d| source_ref_key(dataset_id, d)),
            data_id,
            chunk_id: Some(chunk_id.to_string()),
            chunk_index: p.get("chunk_index").and_then(Value::as_i64),
            document_name: p.get("document_name").and_then(Value::as_str).map(str::to_string),
            rank: Some(rank),
            score: p.get("score").and_then(Value::as_f64),
            ..Default::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn evidence_block_ranks_by_overlap_and_cuts_snippets() {
        let long = "Sourdough starter ".repeat(20);
        let chunks = vec![
            json!({"id": "c1", "text": "Rust has a borrow checker.", "document_name": "rust.txt", "chunk_index": 0, "document_id": "d1"}),
            json!({"id": "c2", "text": long, "document_name": "bread.txt", "chunk_index": 2, "document_id": "d2"}),
            json!({"id": "c2", "text": "duplicate", "document_name": "bread.txt", "chunk_index": 2}),
            json!({"id": "c3", "text": "no document name"}),
        ];
        let block = chunk_evidence_block("Feed the sourdough starter daily.", &chunks);
        let expected_snippet = format!("{}…", long.trim_end().chars().take(159).collect::<String>().trim_end());
        assert_eq!(
            block.as_deref(),
            Some(
                format!(
                    "Evidence:\n- chunk 3 of document bread.txt (data_id: d2, chunk_id: c2): \"{expected_snippet}\""
                )
                .as_str()
            )
        );
        // Only stop words and short terms: no block.
        assert_eq!(chunk_evidence_block("It is of the", &chunks), None);
        assert_eq!(append_block("A", None), "A");
    }

    #[test]
    fn segment_block_takes_five_then_dedups() {
        let seg = |d: &str, c: &str, i: i64| EvidenceReference {
            kind: "segment".into(),
            role: "supports_assertion".into(),
            data_id: Some(d.into()),
            chunk_id: Some(c.into()),
            chunk_index: Some(i),
            document_name: Some("a.txt".into()),
            ..Default::default()
        };
        let refs = vec![seg("d", "c1", 0), seg("d", "c1", 0), seg("d", "c2", 4)];
        assert_eq!(
            segment_evidence_block(&refs).as_deref(),
            Some("Evidence:\n- chunk 1 of document a.txt (data_id: d, chunk_id: c1)\n- chunk 5 of document a.txt (data_id: d, chunk_id: c2)")
        );
    }
}
