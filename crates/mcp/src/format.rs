//! The texts the tools answer with, as cognee-mcp words them (docs/mcp.md).

use recall_core::RecallResponse;
use serde_json::Value;

/// The agent-scoped dataset of an MCP client: its name without a trailing
/// parenthetical, lower-cased, each run of other characters than
/// `[a-z0-9_]` made one `_`, `_` trimmed, then `_memory`
/// (`Cursor-VSCode (via mcp-remote 0.1.37)` → `cursor_vscode_memory`).
pub fn agent_dataset(client_name: &str) -> String {
    let mut name = client_name.trim();
    if name.ends_with(')') {
        if let Some(open) = name.rfind('(') {
            name = name[..open].trim_end();
        }
    }
    let mut out = String::new();
    for c in name.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let slug = out.trim_matches('_');
    format!("{}_memory", if slug.is_empty() { "unknown" } else { slug })
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What the recall summary says when nothing was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MemoryState {
    Found,
    Indexing,
    BuildFailed,
    None,
}

impl MemoryState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            MemoryState::Found => "found",
            MemoryState::Indexing => "indexing",
            MemoryState::BuildFailed => "build_failed",
            MemoryState::None => "none",
        }
    }
}

/// The entries that count as memories: not empty, not a system marker.
pub(crate) fn items(results: &[RecallResponse]) -> Vec<&RecallResponse> {
    results.iter().filter(|r| r.source() != "system" && !r.text().is_empty()).collect()
}

fn hint(entry: &RecallResponse) -> String {
    let dataset = match entry {
        RecallResponse::Graph(g) | RecallResponse::Code(g) => g.dataset_name.clone(),
        _ => None,
    };
    let hint = dataset.unwrap_or_else(|| match entry.source() {
        "session" => "sessions".to_string(),
        other => other.to_string(),
    });
    hint.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(60).collect()
}

/// The first line: how many memories, and from where (at most three hints).
pub(crate) fn summary(results: &[RecallResponse], state: MemoryState) -> String {
    let found = items(results);
    if found.is_empty() {
        return match state {
            MemoryState::Indexing => "still indexing — retry shortly".to_string(),
            MemoryState::BuildFailed => "memory indexing failed — check cognify_status".to_string(),
            _ => "no matching memories".to_string(),
        };
    }
    let mut hints: Vec<(String, usize)> = Vec::new();
    for entry in &found {
        let h = hint(entry);
        match hints.iter_mut().find(|(name, _)| *name == h) {
            Some((_, n)) => *n += 1,
            None => hints.push((h, 1)),
        }
    }
    let noun = if found.len() == 1 { "memory" } else { "memories" };
    let parts: Vec<String> = hints.iter().take(3).map(|(h, n)| format!("{n} from {h}")).collect();
    format!("{} {noun} found ({})", found.len(), parts.join(", "))
}

/// One entry of the body: `[<source>] ` and its text (the first of
/// `answer`, `text`, `content`, `search_result`, `result`; else the entry as
/// indented JSON).
fn body_line(entry: &RecallResponse) -> String {
    let value = serde_json::to_value(entry).unwrap_or(Value::Null);
    let text = ["answer", "text", "content", "search_result", "result"]
        .iter()
        .find_map(|k| value.get(*k).filter(|v| !v.is_null()))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        })
        .unwrap_or_else(|| serde_json::to_string_pretty(&value).unwrap_or_default());
    format!("[{}] {text}", entry.source())
}

/// The whole text: the summary line, then (when anything came back) one
/// blank-line-separated line per entry.
pub(crate) fn recall_text(results: &[RecallResponse], state: MemoryState) -> String {
    let summary = summary(results, state);
    if results.is_empty() {
        return summary;
    }
    let body: Vec<String> = results.iter().map(body_line).collect();
    format!("{summary}\n\n{}", body.join("\n\n"))
}

/// A string as a Python literal (`'…'`), as cognee-mcp prints its status dicts.
pub(crate) fn py_str(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn agent_datasets_are_slugs_of_the_client_name() {
        assert_eq!(agent_dataset("Cursor-VSCode (via mcp-remote 0.1.37)"), "cursor_vscode_memory");
        assert_eq!(agent_dataset("Claude Code"), "claude_code_memory");
        assert_eq!(agent_dataset("  ¿?  "), "unknown_memory");
        assert_eq!(agent_dataset("my_agent"), "my_agent_memory");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(10_485_761), "10,485,761");
    }

    #[test]
    fn summaries_count_memories_by_where_they_came_from() {
        let graph = |text: &str, dataset: &str| {
            serde_json::from_value::<RecallResponse>(serde_json::json!({
                "source": "graph", "kind": "chunk", "search_type": "CHUNKS", "text": text, "system_prompt": null,
                "score": null, "dataset_id": null, "dataset_name": dataset, "structured": null
            }))
            .unwrap()
        };
        let results = vec![graph("a", "notes"), graph("b", "notes"), graph("", "notes"), graph("c", "ops")];
        assert_eq!(summary(&results, MemoryState::Found), "3 memories found (2 from notes, 1 from ops)");
        assert_eq!(summary(&results[..1], MemoryState::Found), "1 memory found (1 from notes)");
        assert_eq!(summary(&[], MemoryState::Indexing), "still indexing — retry shortly");
        assert_eq!(summary(&[], MemoryState::None), "no matching memories");
        let text = recall_text(&results[..1], MemoryState::Found);
        assert_eq!(text, "1 memory found (1 from notes)\n\n[graph] a");
    }
}
