//! The recall "tools" lane (docs/tools-lane.md): the question asked of the
//! deployment's SQL databases through text-to-SQL — the model writes one
//! SELECT from the schema, a guard refuses anything else, a LIMIT caps the
//! rows, and it runs read-only. One `tools` entry per connection.

use std::sync::Arc;

use recall_core::ports::ChatRequest;
use recall_core::tools::{ReadOnlySql, SqlConnection, SqlRows, TableSchema};
use recall_core::{RecallError, RecallResponse, ResponseToolEntry, Result};
use regex::Regex;
use serde_json::{json, Value};

use super::request::RecallRequest;
use crate::Engine;

/// The tool name of every entry the lane produces.
pub const TEXT_TO_SQL: &str = "text_to_sql";

/// Keywords a read-only query never holds (whole words, any case).
const FORBIDDEN: [&str; 21] = [
    "insert", "update", "delete", "drop", "alter", "create", "truncate", "grant", "revoke", "copy", "attach", "detach",
    "vacuum", "pragma", "call", "merge", "execute", "exec", "replace", "set", "reindex",
];

/// The guard's patterns, compiled once.
struct Patterns {
    block_comment: Regex,
    line_comment: Regex,
    literal: Regex,
    forbidden: Vec<(&'static str, Regex)>,
    limit: Regex,
}

fn compile() -> std::result::Result<Patterns, regex::Error> {
    Ok(Patterns {
        block_comment: Regex::new(r"(?s)/\*.*?\*/")?,
        line_comment: Regex::new(r"--[^\n]*")?,
        literal: Regex::new(r"'(?:[^']|'')*'")?,
        forbidden: FORBIDDEN
            .iter()
            .map(|k| Regex::new(&format!(r"(?i)\b{k}\b")).map(|r| (*k, r)))
            .collect::<std::result::Result<_, _>>()?,
        limit: Regex::new(r"(?i)\blimit\s+(\d+)")?,
    })
}

static PATTERNS: std::sync::LazyLock<std::result::Result<Patterns, String>> =
    std::sync::LazyLock::new(|| compile().map_err(|e| format!("the SQL guard is unavailable: {e}")));

/// The patterns; the guard refuses everything if they do not compile.
fn patterns() -> std::result::Result<&'static Patterns, String> {
    PATTERNS.as_ref().map_err(Clone::clone)
}

/// The generated SQL cleaned (fence, comments, one trailing `;`) and
/// checked to be one read-only SELECT; else why not.
pub fn validate_select(generated: &str) -> std::result::Result<String, String> {
    let mut sql = generated.trim().to_string();
    if sql.starts_with("```") {
        let body = sql.trim_start_matches('`');
        let body = body.split_once('\n').map_or("", |(_, rest)| rest);
        sql = body.trim_end().trim_end_matches('`').to_string();
    }
    let p = patterns()?;
    let sql = p.block_comment.replace_all(&sql, " ").into_owned();
    let sql = p.line_comment.replace_all(&sql, " ").into_owned();
    let mut sql = sql.trim().to_string();
    if let Some(stripped) = sql.strip_suffix(';') {
        sql = stripped.trim_end().to_string();
    }
    if sql.is_empty() {
        return Err("The generated SQL is empty.".into());
    }
    let blanked = p.literal.replace_all(&sql, "''").into_owned();
    if blanked.contains(';') {
        return Err("Only a single SQL statement is allowed (no ';' separators).".into());
    }
    let first = blanked.split(|c: char| !c.is_alphanumeric() && c != '_').find(|w| !w.is_empty()).unwrap_or("");
    if !matches!(first.to_lowercase().as_str(), "select" | "with") {
        return Err(format!(
            "Only SELECT statements are allowed; got a statement starting with '{}'.",
            first.to_uppercase()
        ));
    }
    for (keyword, pattern) in &p.forbidden {
        if pattern.is_match(&blanked) {
            return Err(format!(
                "Forbidden keyword '{}' found — only read-only SELECT statements are allowed.",
                keyword.to_uppercase()
            ));
        }
    }
    Ok(sql)
}

/// Every `LIMIT n` clamped to `max_rows`; ` LIMIT max_rows` appended when there is none.
/// A LIMIT only inside parentheses (a subquery's) caps nothing outside: the
/// outer query gets one too (Cognee would leave it uncapped).
pub fn ensure_limit(sql: &str, max_rows: usize) -> String {
    let Ok(p) = patterns() else {
        return format!("SELECT * FROM ({sql}) AS capped LIMIT {max_rows}");
    };
    let clamped = p
        .limit
        .replace_all(sql, |c: &regex::Captures<'_>| {
            let n = c[1].parse::<usize>().unwrap_or(max_rows).min(max_rows);
            format!("LIMIT {n}")
        })
        .into_owned();
    if has_outer_limit(&clamped, &p.literal) {
        clamped
    } else {
        format!("{clamped} LIMIT {max_rows}")
    }
}

/// Whether the word LIMIT appears outside parentheses and string literals.
fn has_outer_limit(sql: &str, literal: &Regex) -> bool {
    let blanked = literal.replace_all(sql, "''");
    let mut depth = 0usize;
    let outer: String = blanked
        .chars()
        .map(|c| match c {
            '(' => {
                depth += 1;
                ' '
            }
            ')' => {
                depth = depth.saturating_sub(1);
                ' '
            }
            c if depth == 0 => c,
            _ => ' ',
        })
        .collect();
    outer.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w.eq_ignore_ascii_case("limit"))
}

/// The schema as the model reads it.
fn schema_text(tables: &[TableSchema]) -> String {
    tables
        .iter()
        .map(|t| {
            let columns: Vec<String> = t.columns.iter().map(|(n, ty)| format!("  {n} {ty}")).collect();
            let mut block = format!("TABLE {}\n{}", t.name, columns.join("\n"));
            if !t.primary_key.is_empty() {
                block.push_str(&format!("\n  PRIMARY KEY ({})", t.primary_key.join(", ")));
            }
            for (cols, table, refs) in &t.foreign_keys {
                block.push_str(&format!(
                    "\n  FOREIGN KEY ({}) REFERENCES {table} ({})",
                    cols.join(", "),
                    refs.join(", ")
                ));
            }
            block
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A value as the entry's text shows it (Python's `str`).
fn cell(value: &Value) -> String {
    match value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One connection's outcome.
struct Outcome {
    dialect: String,
    sql: Option<String>,
    rows: SqlRows,
    truncated: bool,
    attempts: usize,
    error: Option<String>,
}

impl Outcome {
    fn entry(self, connection: &str, question: &str) -> RecallResponse {
        let rows: Vec<Value> = self
            .rows
            .rows
            .iter()
            .map(|r| Value::Object(self.rows.columns.iter().cloned().zip(r.iter().cloned()).collect()))
            .collect();
        let text = match (&self.error, &self.sql) {
            (Some(error), _) => format!("[{connection}] text-to-SQL failed: {error}"),
            (None, sql) if rows.is_empty() => format!("[{connection}] {} → no rows", sql.as_deref().unwrap_or("")),
            (None, sql) => {
                let mut text = format!("[{connection}] {} → {} row(s)", sql.as_deref().unwrap_or(""), rows.len());
                if self.truncated {
                    text.push_str(" (truncated)");
                }
                text.push('\n');
                text.push_str(&self.rows.columns.join(" | "));
                for row in &self.rows.rows {
                    text.push('\n');
                    text.push_str(&row.iter().map(cell).collect::<Vec<_>>().join(" | "));
                }
                text
            }
        };
        RecallResponse::Tools(ResponseToolEntry {
            tool_name: TEXT_TO_SQL.into(),
            question: question.to_string(),
            text,
            success: self.error.is_none(),
            error: self.error,
            structured: Some(json!({
                "connection": connection, "dialect": self.dialect, "sql": self.sql, "row_count": rows.len(),
                "rows": rows, "truncated": self.truncated, "attempts": self.attempts,
            })),
        })
    }
}

impl Engine {
    /// The lane: `TOOL_CALLS_ENABLED` or `ToolCallsDisabledError`; then
    /// each named connection (else every configured one), in order. An
    /// unknown name fails the recall; a failing query is a `success=false`
    /// entry.
    pub(crate) async fn tools_lane(&self, request: &RecallRequest) -> Result<Vec<RecallResponse>> {
        let settings = &self.config.tools;
        if !settings.enabled {
            return Err(RecallError::Validation {
                name: "ToolCallsDisabledError",
                message: "Recall scope 'tools' requested but tool calls are disabled. Set TOOL_CALLS_ENABLED=true and register a connection with cognee.tools.register_sql_connection(...) to enable it.".into(),
            });
        }
        let connections: Vec<&SqlConnection> = match request.tool_connections.as_deref().filter(|n| !n.is_empty()) {
            Some(names) => names
                .iter()
                .map(|name| {
                    settings.connections.iter().find(|c| &c.name == name).ok_or_else(|| RecallError::Conflict {
                        name: "ToolConnectionNotFoundError",
                        message: format!("No authorized tool connection named '{name}' for this user."),
                    })
                })
                .collect::<Result<_>>()?,
            None => settings.connections.iter().collect(),
        };
        let mut out = Vec::with_capacity(connections.len());
        for connection in connections {
            let outcome = self.text_to_sql(connection, &request.query_text).await?;
            out.push(outcome.entry(&connection.name, &request.query_text));
        }
        Ok(out)
    }

    /// One connection: the schema, then up to `max_attempts` rounds of
    /// generate → guard → limit → run, each failure a note for the next.
    async fn text_to_sql(&self, connection: &SqlConnection, question: &str) -> Result<Outcome> {
        let settings = &self.config.tools;
        let connector = self.sql_connector.as_ref().ok_or_else(|| {
            RecallError::invalid_input("the tools lane has no SQL driver in this build (EngineBuilder::sql_connector)")
        })?;
        let db: Arc<dyn ReadOnlySql> = connector.open(connection).await?;
        let max_rows = connection.max_rows.unwrap_or(settings.max_rows).max(1);
        let mut outcome = Outcome {
            dialect: db.dialect().to_string(),
            sql: None,
            rows: SqlRows::default(),
            truncated: false,
            attempts: 0,
            error: None,
        };
        let tables = match db.schema(connection.allowed_tables.as_deref(), settings.max_schema_tables).await {
            Ok(tables) if tables.is_empty() => {
                outcome.error = Some("The database exposes no readable tables.".into());
                return Ok(outcome);
            }
            Ok(tables) => tables,
            Err(e) => {
                outcome.error = Some(format!("Could not read the database schema: {e}"));
                return Ok(outcome);
            }
        };
        let schema = schema_text(&tables);
        let mut notes: Vec<String> = Vec::new();
        for attempt in 1..=settings.max_attempts.max(1) {
            outcome.attempts = attempt;
            let previous = if notes.is_empty() { "No attempts yet".to_string() } else { notes.join("\n") };
            let max_rows_text = max_rows.to_string();
            let system = recall_retrievers::prompts::render(
                recall_retrievers::prompts::TEXT_TO_SQL_SYSTEM,
                &[
                    ("schema", schema.as_str()),
                    ("dialect", outcome.dialect.as_str()),
                    ("max_rows", max_rows_text.as_str()),
                    ("previous_attempts", previous.as_str()),
                ],
            )?;
            let generated = match &self.llm {
                Some(llm) => llm.chat(&ChatRequest::new(system, question)).await,
                None => Err(RecallError::Provider("no LLM is configured (LLM_API_KEY)".into())),
            };
            let generated = match generated {
                Ok(sql) => sql,
                Err(e) => {
                    outcome.error = Some(format!("SQL generation failed: {e}"));
                    notes.push(format!("Attempt {attempt}: generation failed: {e}"));
                    continue;
                }
            };
            let sql = match validate_select(&generated) {
                Ok(sql) => ensure_limit(&sql, max_rows),
                Err(reason) => {
                    notes.push(format!("Attempt {attempt}: `{}` was refused: {reason}", generated.trim()));
                    outcome.error = Some(reason);
                    continue;
                }
            };
            outcome.sql = Some(sql.clone());
            match db.select(&sql, max_rows + 1, settings.statement_timeout).await {
                Ok(mut rows) => {
                    outcome.truncated = rows.rows.len() > max_rows;
                    rows.rows.truncate(max_rows);
                    outcome.rows = rows;
                    outcome.error = None;
                    return Ok(outcome);
                }
                Err(e) => {
                    outcome.error = Some(format!("SQL execution failed: {e}"));
                    notes.push(format!("Attempt {attempt}: `{sql}` failed: {e}"));
                }
            }
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_keeps_one_read_only_select() {
        assert_eq!(validate_select("```sql\nSELECT 1;\n```"), Ok("SELECT 1".into()));
        assert_eq!(validate_select("/* hi */ select a -- c\nfrom t;").as_deref(), Ok("select a  \nfrom t"));
        assert_eq!(validate_select("  ;").unwrap_err(), "The generated SQL is empty.");
        assert_eq!(
            validate_select("SELECT 1; DROP TABLE t").unwrap_err(),
            "Only a single SQL statement is allowed (no ';' separators)."
        );
        assert_eq!(
            validate_select("delete from t").unwrap_err(),
            "Only SELECT statements are allowed; got a statement starting with 'DELETE'."
        );
        assert_eq!(
            validate_select("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x").unwrap_err(),
            "Forbidden keyword 'DELETE' found — only read-only SELECT statements are allowed."
        );
        // Literals are data; updated_at is not UPDATE.
        assert!(validate_select("SELECT updated_at FROM t WHERE note = 'drop; delete'").is_ok());
    }

    #[test]
    fn limits_are_clamped_or_added() {
        assert_eq!(ensure_limit("SELECT * FROM t", 100), "SELECT * FROM t LIMIT 100");
        assert_eq!(
            ensure_limit("SELECT * FROM (SELECT * FROM t limit 500) LIMIT 20", 100),
            "SELECT * FROM (SELECT * FROM t LIMIT 100) LIMIT 20"
        );
        // A subquery's LIMIT does not cap the outer query.
        assert_eq!(ensure_limit("SELECT (SELECT b FROM u LIMIT 900)", 5), "SELECT (SELECT b FROM u LIMIT 5) LIMIT 5");
        assert_eq!(ensure_limit("SELECT 'limit' FROM t", 5), "SELECT 'limit' FROM t LIMIT 5");
    }

    #[test]
    fn entries_read_like_cognees() {
        let ok = Outcome {
            dialect: "sqlite".into(),
            sql: Some("SELECT name, vip FROM c LIMIT 2".into()),
            rows: SqlRows {
                columns: vec!["name".into(), "vip".into()],
                rows: vec![vec![json!("Ann"), json!(true)], vec![json!(null), json!(false)]],
            },
            truncated: true,
            attempts: 1,
            error: None,
        };
        let RecallResponse::Tools(entry) = ok.entry("shop", "who?") else { unreachable!() };
        assert_eq!(
            entry.text,
            "[shop] SELECT name, vip FROM c LIMIT 2 → 2 row(s) (truncated)\nname | vip\nAnn | True\nNone | False"
        );
        assert!(entry.success);
        let structured = entry.structured.unwrap_or_default();
        assert_eq!((structured["row_count"].clone(), structured["rows"][0]["name"].clone()), (json!(2), json!("Ann")));
        let failed = Outcome {
            dialect: "sqlite".into(),
            sql: None,
            rows: SqlRows::default(),
            truncated: false,
            attempts: 3,
            error: Some("The generated SQL is empty.".into()),
        };
        let RecallResponse::Tools(entry) = failed.entry("shop", "who?") else { unreachable!() };
        assert_eq!(entry.text, "[shop] text-to-SQL failed: The generated SQL is empty.");
        assert!(!entry.success);
    }
}
