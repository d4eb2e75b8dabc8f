//! The recall "tools" lane's outside world (docs/tools-lane.md): the SQL
//! databases a deployment lets recall ask through text-to-SQL, and the
//! read-only port the engine asks them through.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;

use crate::{RecallError, Result, Secret};

/// A database the tools lane may read.
#[derive(Debug, Clone)]
pub struct SqlConnection {
    pub name: String,
    pub connection_string: Secret,
    /// `postgres` or `sqlite`, from the connection string's scheme when not given.
    pub provider: String,
    /// Only these tables are shown to the model (all when `None`).
    pub allowed_tables: Option<Vec<String>>,
    /// Row cap of this connection (else the lane's).
    pub max_rows: Option<usize>,
    pub description: Option<String>,
}

/// One table as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub name: String,
    /// `(name, type)` in table order.
    pub columns: Vec<(String, String)>,
    pub primary_key: Vec<String>,
    /// `(columns, referenced table, referenced columns)`.
    pub foreign_keys: Vec<(Vec<String>, String, Vec<String>)>,
}

/// What a query returned: the column names and each row's values in that
/// order (JSON-safe: numbers, strings, booleans, null).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SqlRows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// A database opened read-only.
#[async_trait]
pub trait ReadOnlySql: Send + Sync {
    /// `sqlite` or `postgresql`.
    fn dialect(&self) -> &'static str;
    /// The tables (sorted by name, among `allowed` when given), at most `max_tables`.
    async fn schema(&self, allowed: Option<&[String]>, max_tables: usize) -> Result<Vec<TableSchema>>;
    /// Runs one SELECT in a read-only transaction that is rolled back,
    /// within `timeout`; at most `max_rows` rows are read.
    async fn select(&self, sql: &str, max_rows: usize, timeout: Duration) -> Result<SqlRows>;
}

/// Opens connections for the tools lane (an adapter: sea-orm's drivers).
#[async_trait]
pub trait SqlConnector: Send + Sync {
    async fn open(&self, connection: &SqlConnection) -> Result<Arc<dyn ReadOnlySql>>;
}

/// The lane's settings (`TOOL_CALLS_ENABLED`, `TOOL_SQL_CONNECTIONS`, `TEXT_TO_SQL_*`).
#[derive(Debug, Clone)]
pub struct ToolSettings {
    pub enabled: bool,
    /// The deployment's connections, visible to every caller, in order.
    pub connections: Vec<SqlConnection>,
    pub max_rows: usize,
    pub max_attempts: usize,
    pub statement_timeout: Duration,
    pub max_schema_tables: usize,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            connections: Vec::new(),
            max_rows: 100,
            max_attempts: 3,
            statement_timeout: Duration::from_millis(5000),
            max_schema_tables: 50,
        }
    }
}

/// The provider of a connection string: `postgres*` or `sqlite*`.
pub fn provider_of(connection_string: &str) -> Result<String> {
    let scheme = connection_string.split(':').next().unwrap_or_default().trim().to_lowercase();
    if scheme.starts_with("postgres") {
        Ok("postgres".into())
    } else if scheme.starts_with("sqlite") {
        Ok("sqlite".into())
    } else {
        Err(RecallError::invalid_input(format!(
            "Unsupported tool connection provider for scheme '{scheme}'. Supported providers: postgres, sqlite."
        )))
    }
}

fn shape_error(name: &str) -> RecallError {
    RecallError::invalid_input(format!(
        "TOOL_SQL_CONNECTIONS entry '{name}' must be a connection string or an object with a 'connection_string' key"
    ))
}

/// `TOOL_SQL_CONNECTIONS`: a JSON object mapping each name to a connection
/// string or to `{connection_string, provider?, allowed_tables?, max_rows?, description?}`.
pub fn parse_connections(json: &str) -> Result<Vec<SqlConnection>> {
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let value: Value = serde_json::from_str(json)
        .map_err(|e| RecallError::invalid_input(format!("TOOL_SQL_CONNECTIONS is not valid JSON: {e}")))?;
    let Value::Object(entries) = value else {
        return Err(RecallError::invalid_input("TOOL_SQL_CONNECTIONS must be a JSON object"));
    };
    let mut out = Vec::new();
    for (name, entry) in entries {
        let connection = match entry {
            Value::String(dsn) => SqlConnection {
                provider: provider_of(&dsn)?,
                name: name.clone(),
                connection_string: Secret::new(dsn),
                allowed_tables: None,
                max_rows: None,
                description: None,
            },
            Value::Object(o) => {
                let dsn = o.get("connection_string").and_then(Value::as_str).ok_or_else(|| shape_error(&name))?;
                let provider = match o.get("provider").and_then(Value::as_str) {
                    Some(p) => provider_of(&format!("{p}:"))?,
                    None => provider_of(dsn)?,
                };
                let allowed_tables = match o.get("allowed_tables") {
                    None | Some(Value::Null) => None,
                    Some(Value::Array(t)) => Some(
                        t.iter()
                            .map(|v| v.as_str().map(str::to_string))
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| shape_error(&name))?,
                    ),
                    Some(_) => return Err(shape_error(&name)),
                };
                SqlConnection {
                    name: name.clone(),
                    connection_string: Secret::new(dsn.to_string()),
                    provider,
                    allowed_tables,
                    max_rows: o.get("max_rows").and_then(Value::as_u64).and_then(|n| usize::try_from(n).ok()),
                    description: o.get("description").and_then(Value::as_str).map(str::to_string),
                }
            }
            _ => return Err(shape_error(&name)),
        };
        if connection.name.trim().is_empty() {
            return Err(RecallError::invalid_input("Tool connection name must be a non-empty string"));
        }
        out.push(connection);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn connections_parse_from_strings_and_objects() {
        let c = parse_connections(
            r#"{"shop": "sqlite:///tmp/shop.db", "crm": {"connection_string": "postgresql://u@h/db", "allowed_tables": ["accounts"], "max_rows": 5}}"#,
        )
        .unwrap();
        assert_eq!(c.len(), 2);
        let shop = c.iter().find(|c| c.name == "shop").unwrap();
        assert_eq!(shop.provider, "sqlite");
        let crm = c.iter().find(|c| c.name == "crm").unwrap();
        assert_eq!((crm.provider.as_str(), crm.max_rows), ("postgres", Some(5)));
        assert_eq!(crm.allowed_tables, Some(vec!["accounts".to_string()]));
        assert_eq!(parse_connections(" ").unwrap().len(), 0);
        assert_eq!(parse_connections("[1]").unwrap_err().to_string(), "TOOL_SQL_CONNECTIONS must be a JSON object");
        assert!(parse_connections(r#"{"x": 3}"#).unwrap_err().to_string().contains("entry 'x' must be"));
        assert!(parse_connections(r#"{"x": "mysql://h/db"}"#).unwrap_err().to_string().contains("scheme 'mysql'"));
        assert!(parse_connections("{").is_err());
    }
}
