//! One search payload becomes N result items (docs/retrievers.md, "Result items").

use recall_core::{Dataset, ResponseGraphEntry, SearchType};
use recall_retrievers::evidence::EvidenceReference;
use recall_retrievers::LlmContext;
use serde_json::{json, Map, Value};

/// What one dataset's search produced: the result of one retriever run, before it
/// becomes recall items or a legacy search result.
#[derive(Debug, Clone)]
pub struct SearchResultPayload {
    pub dataset: Option<Dataset>,
    /// The effective type.
    pub search_type: SearchType,
    pub completion: Option<Vec<Value>>,
    pub context: Option<LlmContext>,
    pub only_context: bool,
    /// `only_context` on a single-prompt completion type: the prompt pair.
    pub user_prompt: Option<String>,
    pub system_prompt: Option<String>,
    /// `include_references`: structured references, copied to every item's metadata.
    pub evidence: Vec<EvidenceReference>,
    /// Object entries of the completion are structured answers.
    pub structured: bool,
    /// Why this dataset contributed nothing (partial "no data").
    pub error: Option<String>,
    /// The retriever's raw objects (legacy search's `result_object`).
    pub objects: Vec<Value>,
}

const TEXT_KEYS: [&str; 6] = ["text", "completion", "summary", "name", "content", "answer"];

pub(crate) fn normalise_payload(payload: &SearchResultPayload) -> Vec<ResponseGraphEntry> {
    if let (true, Some(user_prompt)) = (payload.only_context, payload.user_prompt.as_ref()) {
        let mut entry = item(payload, Value::String(user_prompt.clone()));
        entry.system_prompt = payload.system_prompt.clone();
        return vec![entry];
    }
    let entries: Vec<Value> = if payload.only_context {
        payload.context.as_ref().map(|c| c.entries().into_iter().map(Value::String).collect()).unwrap_or_default()
    } else if let Some(completion) = &payload.completion {
        completion.clone()
    } else if let Some(context) = &payload.context {
        context.entries().into_iter().map(Value::String).collect()
    } else {
        Vec::new()
    };
    entries.into_iter().map(|entry| item(payload, entry)).collect()
}

fn item(payload: &SearchResultPayload, entry: Value) -> ResponseGraphEntry {
    let (text, raw) = match entry {
        Value::String(s) => {
            let mut raw = Map::new();
            raw.insert("value".into(), Value::String(s.clone()));
            (s, raw)
        }
        Value::Object(map) => {
            let text = TEXT_KEYS
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
                .map(str::to_string)
                .unwrap_or_else(|| Value::Object(map.clone()).to_string());
            (text, map)
        }
        Value::Array(list) => {
            let text = Value::Array(list.clone()).to_string();
            let mut raw = Map::new();
            raw.insert("value".into(), Value::Array(list));
            (text, raw)
        }
        other => {
            let text = match &other {
                Value::Null => "None".to_string(),
                v => v.to_string(),
            };
            let mut raw = Map::new();
            raw.insert("value".into(), other);
            (text, raw)
        }
    };
    let structured =
        (payload.structured && !payload.only_context && raw.get("value").is_none()).then(|| Value::Object(raw.clone()));
    let score = if structured.is_some() { None } else { raw.get("score").and_then(Value::as_f64) };
    let mut metadata = if structured.is_some() { Map::new() } else { provenance(&raw) };
    if !payload.evidence.is_empty() {
        metadata.insert("evidence".into(), serde_json::to_value(&payload.evidence).unwrap_or(Value::Null));
    }
    ResponseGraphEntry {
        kind: if structured.is_some() { "structured".into() } else { payload.search_type.result_kind().to_string() },
        search_type: payload.search_type,
        text,
        system_prompt: None,
        score,
        dataset_id: payload.dataset.as_ref().map(|d| d.id.to_string()),
        dataset_name: payload.dataset.as_ref().map(|d| d.name.clone()),
        metadata,
        raw,
        structured,
    }
}

/// Source identifiers present in the payload: data_id, chunk_id, chunk_index, document_name.
fn provenance(raw: &Map<String, Value>) -> Map<String, Value> {
    let mut meta = Map::new();
    let as_string = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if let Some(v) = raw.get("document_id").filter(|v| !v.is_null()) {
        meta.insert("data_id".into(), json!(as_string(v)));
    }
    if let Some(v) = raw.get("id").filter(|v| !v.is_null()) {
        meta.insert("chunk_id".into(), json!(as_string(v)));
    }
    if let Some(i) = raw.get("chunk_index").and_then(Value::as_i64) {
        meta.insert("chunk_index".into(), json!(i));
    }
    if let Some(v) = raw.get("document_name").filter(|v| !v.is_null()) {
        meta.insert("document_name".into(), json!(as_string(v)));
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(completion: Option<Vec<Value>>, context: Option<LlmContext>, only_context: bool) -> SearchResultPayload {
        SearchResultPayload {
            dataset: None,
            search_type: SearchType::Chunks,
            completion,
            context,
            only_context,
            user_prompt: None,
            system_prompt: None,
            evidence: Vec::new(),
            structured: false,
            error: None,
            objects: Vec::new(),
        }
    }

    #[test]
    fn chunk_dicts_become_items_with_score_and_provenance() {
        let p = payload(
            Some(vec![json!({"id": "c1", "text": "hello", "document_id": "d1", "document_name": "a.txt",
                             "chunk_index": 2, "score": 0.125})]),
            None,
            false,
        );
        let items = normalise_payload(&p);
        assert_eq!(items.len(), 1);
        let it = &items[0];
        assert_eq!(it.text, "hello");
        assert_eq!(it.kind, "chunk");
        assert_eq!(it.score, Some(0.125));
        assert_eq!(
            Value::Object(it.metadata.clone()),
            json!({"data_id": "d1", "chunk_id": "c1", "chunk_index": 2, "document_name": "a.txt"})
        );
    }

    #[test]
    fn strings_only_context_and_empty_completion() {
        let items = normalise_payload(&payload(Some(vec![json!("answer")]), None, false));
        assert_eq!(items[0].raw.get("value"), Some(&json!("answer")));
        assert_eq!(items[0].score, None);
        assert!(items[0].metadata.is_empty());
        assert!(normalise_payload(&payload(Some(vec![]), Some(LlmContext::Text("ctx".into())), false)).is_empty());
        let ctx = normalise_payload(&payload(None, Some(LlmContext::Text("ctx".into())), true));
        assert_eq!(ctx.len(), 1);
        assert_eq!(ctx[0].text, "ctx");
        assert!(normalise_payload(&payload(None, Some(LlmContext::Text(String::new())), true)).is_empty());
    }

    #[test]
    fn dict_without_text_keys_dumps_json() {
        let items = normalise_payload(&payload(Some(vec![json!({"n": 1})]), None, false));
        assert_eq!(items[0].text, "{\"n\":1}");
    }
}
