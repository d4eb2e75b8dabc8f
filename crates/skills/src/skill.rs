//! The Skill data point (docs/recall.md, "Skills"): a procedure playbook read from a
//! `SKILL.md`-style file — YAML front matter (name, description, version,
//! tags, license, maintainer, tools) and a Markdown body (the procedure).
//! Only `search_text` is embedded; recall returns metadata, never the body.

use recall_core::{ids, RecallError, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use uuid::Uuid;

/// The vector collection the SKILLS search reads.
pub const SKILL_SEARCH_TEXT: &str = "Skill_search_text";
/// The graph node type of a skill.
pub const SKILL_NODE_TYPE: &str = "Skill";
/// A skill file larger than this is refused (a playbook, not a corpus).
pub const MAX_SKILL_FILE_BYTES: usize = 1 << 20;
/// Characters of the procedure that go into the embedded search text.
const SEARCH_PROCEDURE_CHARS: usize = 2000;

/// One skill, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    pub id: Uuid,
    pub name: String,
    pub description: String,
    pub procedure: String,
    pub declared_tools: Vec<String>,
    pub maintainer: String,
    pub maintainer_url: String,
    pub skill_version: String,
    pub tags: Vec<String>,
    pub license: String,
    pub source_repo_url: String,
    pub source_file: String,
    pub source_dir: String,
    pub content_hash: String,
    pub dataset_scope: Vec<String>,
    pub is_active: bool,
    /// The whole file.
    pub skill_text: String,
    /// The only embedded field: name, description, tags and the procedure's start.
    pub search_text: String,
}

/// The front matter keys we read; unknown keys are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    version: Option<Scalar>,
    tags: Option<StringList>,
    license: Option<String>,
    maintainer: Option<String>,
    maintainer_url: Option<String>,
    #[serde(alias = "allowed-tools", alias = "allowed_tools", alias = "tools")]
    declared_tools: Option<StringList>,
    source_repo_url: Option<String>,
    #[serde(alias = "active")]
    is_active: Option<bool>,
}

/// A version may be written as a number (`1.2`) or a string.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Scalar {
    Str(String),
    Num(serde_yaml_ng::Number),
}

/// A YAML list, or one string of comma- or space-separated items.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum StringList {
    List(Vec<String>),
    One(String),
}

impl StringList {
    fn into_vec(self) -> Vec<String> {
        let items = match self {
            StringList::List(items) => items,
            StringList::One(s) => {
                let sep = if s.contains(',') { ',' } else { ' ' };
                s.split(sep).map(str::to_string).collect()
            }
        };
        items.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
    }
}

fn invalid(source: &str, why: impl std::fmt::Display) -> RecallError {
    RecallError::invalid_input(format!("invalid skill file '{source}': {why}"))
}

/// Splits `---` front matter from the body; a file without it is all body.
fn split_front_matter(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix("---")?;
    let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n'))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

/// The first paragraph of Markdown that is not a heading.
fn first_paragraph(body: &str) -> String {
    body.split("\n\n")
        .map(|p| p.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join(" "))
        .map(|p| p.trim().to_string())
        .find(|p| !p.is_empty())
        .unwrap_or_default()
}

/// The first `# Heading` of the body.
fn first_heading(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("# ").map(|h| h.trim().to_string()))
        .filter(|h| !h.is_empty())
}

/// Parses one skill file. `source_dir` (the skill's directory) and the name
/// are its identity; a missing name falls back to the first `# Heading`,
/// then to the directory's name.
pub fn parse_skill(text: &str, source_file: &str, source_dir: &str, dataset_id: &str) -> Result<Skill> {
    if text.len() > MAX_SKILL_FILE_BYTES {
        return Err(invalid(source_file, format!("larger than {MAX_SKILL_FILE_BYTES} bytes")));
    }
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (meta, body) = match split_front_matter(text) {
        Some((yaml, body)) if yaml.trim().is_empty() => (FrontMatter::default(), body),
        Some((yaml, body)) => {
            let meta: FrontMatter = serde_yaml_ng::from_str(yaml).map_err(|e| invalid(source_file, e))?;
            (meta, body)
        }
        None if text.starts_with("---") => return Err(invalid(source_file, "the front matter is not closed by '---'")),
        None => (FrontMatter::default(), text),
    };
    let procedure = body.trim().to_string();
    let dir_name = std::path::Path::new(source_dir).file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let name = meta
        .name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .or_else(|| first_heading(&procedure))
        .unwrap_or_else(|| dir_name.to_string());
    if name.is_empty() {
        return Err(invalid(source_file, "the skill has no name (set `name:` in the front matter)"));
    }
    let description = meta
        .description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| first_paragraph(&procedure));
    let tags = meta.tags.map(StringList::into_vec).unwrap_or_default();
    let declared_tools = meta.declared_tools.map(StringList::into_vec).unwrap_or_default();
    let skill_version = match meta.version {
        Some(Scalar::Str(s)) => s.trim().to_string(),
        Some(Scalar::Num(n)) => n.to_string(),
        None => String::new(),
    };
    let search_text = search_text(&name, &description, &tags, &procedure);
    Ok(Skill {
        id: ids::id_for(SKILL_NODE_TYPE, &[&name, source_dir]),
        name,
        description,
        procedure,
        declared_tools,
        maintainer: meta.maintainer.unwrap_or_default(),
        maintainer_url: meta.maintainer_url.unwrap_or_default(),
        skill_version,
        tags,
        license: meta.license.unwrap_or_default(),
        source_repo_url: meta.source_repo_url.unwrap_or_default(),
        source_file: source_file.to_string(),
        source_dir: source_dir.to_string(),
        content_hash: ids::content_hash(text.as_bytes()),
        dataset_scope: vec![dataset_id.to_string()],
        is_active: meta.is_active.unwrap_or(true),
        skill_text: text.to_string(),
        search_text,
    })
}

fn search_text(name: &str, description: &str, tags: &[String], procedure: &str) -> String {
    let mut out = format!("{name}: {description}");
    if !tags.is_empty() {
        out.push_str(&format!("\nTags: {}", tags.join(", ")));
    }
    let start: String = procedure.chars().take(SEARCH_PROCEDURE_CHARS).collect();
    if !start.is_empty() {
        out.push('\n');
        out.push_str(&start);
    }
    out
}

impl Skill {
    /// Every field, as the stored payload and graph node properties.
    pub fn to_payload(&self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut m)) => {
                m.insert("id".into(), json!(self.id.to_string()));
                m.insert("type".into(), json!(SKILL_NODE_TYPE));
                m
            }
            _ => Map::new(),
        }
    }
}

/// The metadata-only projection of a stored skill payload (docs/recall.md, "Skills"): never `procedure`, `skill_text` or `search_text`. Missing strings
/// are `""`, lists are lists of strings.
pub fn project_metadata(payload: &Map<String, Value>, fallback_id: &str) -> Map<String, Value> {
    let string = |key: &str| payload.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
    let list = |key: &str| -> Vec<String> {
        match payload.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect(),
            _ => Vec::new(),
        }
    };
    let id = payload.get("id").and_then(Value::as_str).map_or_else(|| fallback_id.to_string(), str::to_string);
    let mut out = Map::new();
    out.insert("id".into(), json!(id));
    out.insert("name".into(), json!(string("name")));
    out.insert("description".into(), json!(string("description")));
    out.insert("maintainer".into(), json!(string("maintainer")));
    out.insert("maintainer_url".into(), json!(string("maintainer_url")));
    out.insert("version".into(), json!(string("skill_version")));
    out.insert("tags".into(), json!(list("tags")));
    out.insert("license".into(), json!(string("license")));
    out.insert("declared_tools".into(), json!(list("declared_tools")));
    out.insert("dataset_scope".into(), json!(list("dataset_scope")));
    out.insert("is_active".into(), json!(payload.get("is_active").and_then(Value::as_bool).unwrap_or(true)));
    out.insert("source_repo_url".into(), json!(string("source_repo_url")));
    out.insert("source_dir".into(), json!(string("source_dir")));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const FILE: &str = "---\nname: Rotate API keys\ndescription: >\n  Rotate the service's API keys\n  without downtime.\nversion: 1.2\ntags: [security, ops]\nallowed-tools: Bash, Read\nmaintainer: SRE team\nlicense: MIT\n---\n# Rotate API keys\n\n1. Create the new key.\n2. Deploy it.\n3. Revoke the old key.\n";

    #[test]
    fn front_matter_and_body_fill_the_skill() {
        let s = parse_skill(FILE, "skills/rotate/SKILL.md", "skills/rotate", "ds-1").unwrap();
        assert_eq!(s.name, "Rotate API keys");
        assert_eq!(s.description, "Rotate the service's API keys without downtime.");
        assert_eq!(s.skill_version, "1.2");
        assert_eq!(s.tags, ["security", "ops"]);
        assert_eq!(s.declared_tools, ["Bash", "Read"]);
        assert_eq!((s.maintainer.as_str(), s.license.as_str()), ("SRE team", "MIT"));
        assert!(s.procedure.starts_with("# Rotate API keys\n\n1. Create the new key."));
        assert_eq!(s.dataset_scope, ["ds-1"]);
        assert!(s.is_active);
        assert_eq!(s.id, ids::id_for("Skill", &["Rotate API keys", "skills/rotate"]));
        assert!(s.search_text.starts_with(
            "Rotate API keys: Rotate the service's API keys without downtime.\nTags: security, ops\n# Rotate"
        ));
    }

    #[test]
    fn the_projection_never_carries_the_body() {
        let s = parse_skill(FILE, "f", "d", "ds").unwrap();
        let m = project_metadata(&s.to_payload(), "x");
        assert_eq!(m["version"], "1.2");
        assert_eq!(m["id"], s.id.to_string());
        for hidden in ["procedure", "skill_text", "search_text", "content_hash", "source_file"] {
            assert!(!m.contains_key(hidden), "{hidden}");
        }
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 13, "{keys:?}");
        // Missing fields are empty strings and lists.
        let bare = project_metadata(&Map::new(), "fallback");
        assert_eq!((bare["id"].as_str(), bare["maintainer"].as_str()), (Some("fallback"), Some("")));
        assert_eq!(bare["tags"], json!([]));
    }

    #[test]
    fn names_fall_back_to_the_heading_then_the_directory() {
        let s = parse_skill("# Deploy the API\n\nShip it with care.", "a/SKILL.md", "a/deploy", "d").unwrap();
        assert_eq!((s.name.as_str(), s.description.as_str()), ("Deploy the API", "Ship it with care."));
        let s = parse_skill("Just text.", "x/SKILL.md", "x/backup-db", "d").unwrap();
        assert_eq!(s.name, "backup-db");
        assert!(parse_skill("", "SKILL.md", "", "d").is_err());
    }

    #[test]
    fn bad_files_are_typed_errors() {
        for bad in ["---\nname: [unclosed\n---\nbody", "---\nname: x\nno end", "---\nname: {a: 1}\n---\n"] {
            let err = parse_skill(bad, "bad/SKILL.md", "bad", "d").unwrap_err();
            assert!(matches!(err, RecallError::InvalidInput(_)), "{bad:?}: {err:?}");
        }
        let huge = "x".repeat(MAX_SKILL_FILE_BYTES + 1);
        assert!(parse_skill(&huge, "h", "h", "d").is_err());
        // Tags as one comma-separated string; inactive skills parse.
        let s = parse_skill("---\nname: t\ntags: a, b\nis_active: false\n---\n", "t", "t", "d").unwrap();
        assert_eq!(s.tags, ["a", "b"]);
        assert!(!s.is_active);
    }
}
