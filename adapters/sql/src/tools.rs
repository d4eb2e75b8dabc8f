//! The tools lane's databases, opened read-only through sqlx
//! (docs/tools-lane.md): SQLite files in read-only mode with `query_only`,
//! Postgres sessions with `default_transaction_read_only` and a
//! `statement_timeout`; every query in a transaction that is rolled back.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::TryStreamExt;
use recall_core::tools::{ReadOnlySql, SqlConnection, SqlConnector, SqlRows, TableSchema};
use recall_core::{RecallError, Result};
use sea_orm::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
// Dynamic SQL here is audited: table names are quoted identifiers, and the
// generated query passed the lane's guard and runs in a read-only session.
use sea_orm::sqlx::{AssertSqlSafe, Column, PgPool, Row, SqlitePool};
use serde_json::Value;

fn failed(what: &str, e: impl std::fmt::Display) -> RecallError {
    RecallError::invalid_input(format!("{what}: {e}"))
}

/// Opens SQLite and Postgres connections for the tools lane.
#[derive(Debug, Clone)]
pub struct SqlToolConnector {
    /// Postgres `statement_timeout`, and the bound of every query.
    pub statement_timeout: Duration,
}

/// The file of an SQLite connection string (`sqlite:///abs`, `sqlite://rel`,
/// `sqlite:path`, `sqlite+aiosqlite:///abs`), query string dropped.
fn sqlite_file(dsn: &str) -> &str {
    let rest = dsn.split_once(':').map_or(dsn, |(_, rest)| rest);
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    rest.split('?').next().unwrap_or(rest)
}

#[async_trait]
impl SqlConnector for SqlToolConnector {
    async fn open(&self, connection: &SqlConnection) -> Result<Arc<dyn ReadOnlySql>> {
        let dsn = connection.connection_string.expose();
        match connection.provider.as_str() {
            "sqlite" => {
                let file = sqlite_file(dsn);
                if !tokio::fs::try_exists(file).await.unwrap_or(false) {
                    return Err(RecallError::invalid_input(format!(
                        "tool connection '{}': no SQLite database at '{file}'",
                        connection.name
                    )));
                }
                let options = SqliteConnectOptions::new()
                    .filename(file)
                    .read_only(true)
                    .create_if_missing(false)
                    .pragma("query_only", "ON");
                let pool = SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await
                    .map_err(|e| failed("cannot open the SQLite tool connection", e))?;
                Ok(Arc::new(Sqlite(pool)))
            }
            "postgres" => {
                let url = dsn.replacen("postgresql+asyncpg://", "postgres://", 1);
                let timeout = self.statement_timeout.as_millis().to_string();
                let options = PgConnectOptions::from_str(&url)
                    .map_err(|e| failed("bad Postgres tool connection string", e))?
                    .options([("default_transaction_read_only", "on"), ("statement_timeout", timeout.as_str())]);
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(options)
                    .await
                    .map_err(|e| failed("cannot open the Postgres tool connection", e))?;
                Ok(Arc::new(Postgres(pool)))
            }
            other => Err(RecallError::invalid_input(format!(
                "Unsupported tool connection provider for scheme '{other}'. Supported providers: postgres, sqlite."
            ))),
        }
    }
}

/// A query's work, stopped at `timeout`.
async fn bounded<T>(timeout: Duration, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| RecallError::invalid_input(format!("the query ran past {} ms", timeout.as_millis())))?
}

/// The tables to describe: sorted, among `allowed`, at most `max`.
fn pick_tables(mut names: Vec<String>, allowed: Option<&[String]>, max: usize) -> Vec<String> {
    names.retain(|n| allowed.is_none_or(|a| a.contains(n)));
    names.sort();
    names.truncate(max);
    names
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

struct Sqlite(SqlitePool);

/// A SQLite value, JSON-safe: integer, real, text, bytes (base64), null.
fn sqlite_value(row: &sea_orm::sqlx::sqlite::SqliteRow, i: usize) -> Value {
    use base64::Engine as _;
    if let Ok(v) = row.try_get::<Option<i64>, _>(i) {
        return v.map_or(Value::Null, Value::from);
    }
    if let Ok(v) = row.try_get::<Option<f64>, _>(i) {
        return v.map_or(Value::Null, Value::from);
    }
    if let Ok(v) = row.try_get::<Option<String>, _>(i) {
        return v.map_or(Value::Null, Value::String);
    }
    match row.try_get::<Option<Vec<u8>>, _>(i) {
        Ok(Some(bytes)) => Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        _ => Value::Null,
    }
}

#[async_trait]
impl ReadOnlySql for Sqlite {
    fn dialect(&self) -> &'static str {
        "sqlite"
    }

    async fn schema(&self, allowed: Option<&[String]>, max_tables: usize) -> Result<Vec<TableSchema>> {
        let err = |e| failed("cannot read the schema", e);
        let names: Vec<String> = sea_orm::sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'",
        )
        .fetch_all(&self.0)
        .await
        .map_err(err)?;
        let mut out = Vec::new();
        for name in pick_tables(names, allowed, max_tables) {
            let info = sea_orm::sqlx::query(AssertSqlSafe(format!("PRAGMA table_info({})", quoted(&name))))
                .fetch_all(&self.0)
                .await
                .map_err(err)?;
            let mut columns = Vec::new();
            let mut pk: Vec<(i64, String)> = Vec::new();
            for c in &info {
                let column: String = c.try_get("name").map_err(err)?;
                let ty: String = c.try_get("type").unwrap_or_default();
                let at: i64 = c.try_get("pk").unwrap_or(0);
                if at > 0 {
                    pk.push((at, column.clone()));
                }
                columns.push((column, ty));
            }
            pk.sort();
            let fks = sea_orm::sqlx::query(AssertSqlSafe(format!("PRAGMA foreign_key_list({})", quoted(&name))))
                .fetch_all(&self.0)
                .await
                .map_err(err)?;
            let foreign_keys = fks
                .iter()
                .filter_map(|f| {
                    let table: String = f.try_get("table").ok()?;
                    let from: String = f.try_get("from").ok()?;
                    let to: Option<String> = f.try_get("to").ok()?;
                    Some((vec![from], table, to.into_iter().collect()))
                })
                .collect();
            out.push(TableSchema {
                name,
                columns,
                primary_key: pk.into_iter().map(|(_, c)| c).collect(),
                foreign_keys,
            });
        }
        Ok(out)
    }

    async fn select(&self, sql: &str, max_rows: usize, timeout: Duration) -> Result<SqlRows> {
        let run = async {
            let mut tx = self.0.begin().await.map_err(|e| failed("cannot start a transaction", e))?;
            let mut out = SqlRows::default();
            {
                let mut rows = sea_orm::sqlx::query(AssertSqlSafe(sql.to_string())).fetch(&mut *tx);
                while let Some(row) = rows.try_next().await.map_err(|e| failed("query failed", e))? {
                    if out.columns.is_empty() {
                        out.columns = row.columns().iter().map(|c| c.name().to_string()).collect();
                    }
                    out.rows.push((0..row.columns().len()).map(|i| sqlite_value(&row, i)).collect());
                    if out.rows.len() >= max_rows {
                        break;
                    }
                }
            }
            tx.rollback().await.map_err(|e| failed("cannot roll back", e))?;
            Ok(out)
        };
        bounded(timeout, run).await
    }
}

struct Postgres(PgPool);

/// A row's JSON object with its keys in column order.
struct OrderedRow(Vec<(String, Value)>);

impl<'de> serde::Deserialize<'de> for OrderedRow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = OrderedRow;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<OrderedRow, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(OrderedRow(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

#[async_trait]
impl ReadOnlySql for Postgres {
    fn dialect(&self) -> &'static str {
        "postgresql"
    }

    async fn schema(&self, allowed: Option<&[String]>, max_tables: usize) -> Result<Vec<TableSchema>> {
        let err = |e| failed("cannot read the schema", e);
        let names: Vec<String> = sea_orm::sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()",
        )
        .fetch_all(&self.0)
        .await
        .map_err(err)?;
        let mut out = Vec::new();
        for name in pick_tables(names, allowed, max_tables) {
            let columns: Vec<(String, String)> = sea_orm::sqlx::query_as(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
            )
            .bind(&name)
            .fetch_all(&self.0)
            .await
            .map_err(err)?;
            let primary_key: Vec<String> = sea_orm::sqlx::query_scalar(
                "SELECT kcu.column_name::text FROM information_schema.table_constraints tc \
                 JOIN information_schema.key_column_usage kcu \
                   ON tc.constraint_name = kcu.constraint_name AND tc.table_schema = kcu.table_schema \
                 WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = current_schema() AND tc.table_name = $1 \
                 ORDER BY kcu.ordinal_position",
            )
            .bind(&name)
            .fetch_all(&self.0)
            .await
            .map_err(err)?;
            let fks: Vec<(String, String, String)> = sea_orm::sqlx::query_as(
                "SELECT kcu.column_name::text, ccu.table_name::text, ccu.column_name::text \
                 FROM information_schema.table_constraints tc \
                 JOIN information_schema.key_column_usage kcu \
                   ON tc.constraint_name = kcu.constraint_name AND tc.table_schema = kcu.table_schema \
                 JOIN information_schema.constraint_column_usage ccu \
                   ON tc.constraint_name = ccu.constraint_name AND tc.table_schema = ccu.table_schema \
                 WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema() AND tc.table_name = $1",
            )
            .bind(&name)
            .fetch_all(&self.0)
            .await
            .map_err(err)?;
            let foreign_keys = fks.into_iter().map(|(from, table, to)| (vec![from], table, vec![to])).collect();
            out.push(TableSchema { name, columns, primary_key, foreign_keys });
        }
        Ok(out)
    }

    async fn select(&self, sql: &str, max_rows: usize, timeout: Duration) -> Result<SqlRows> {
        // Each row as JSON in column order: numbers, text, dates as ISO text.
        let wrapped = format!("SELECT row_to_json(q)::text FROM ({sql}) AS q");
        let run = async {
            let mut tx = self.0.begin().await.map_err(|e| failed("cannot start a transaction", e))?;
            sea_orm::sqlx::query("SET TRANSACTION READ ONLY")
                .execute(&mut *tx)
                .await
                .map_err(|e| failed("cannot make the transaction read-only", e))?;
            let mut out = SqlRows::default();
            {
                let mut rows = sea_orm::sqlx::query_scalar::<_, String>(AssertSqlSafe(wrapped.clone())).fetch(&mut *tx);
                while let Some(json) = rows.try_next().await.map_err(|e| failed("query failed", e))? {
                    let row: OrderedRow = serde_json::from_str(&json).map_err(|e| failed("unreadable row", e))?;
                    if out.columns.is_empty() {
                        out.columns = row.0.iter().map(|(k, _)| k.clone()).collect();
                    }
                    out.rows.push(row.0.into_iter().map(|(_, v)| v).collect());
                    if out.rows.len() >= max_rows {
                        break;
                    }
                }
            }
            tx.rollback().await.map_err(|e| failed("cannot roll back", e))?;
            Ok(out)
        };
        bounded(timeout, run).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_files_come_out_of_any_spelling() {
        assert_eq!(sqlite_file("sqlite:///tmp/a.db"), "/tmp/a.db");
        assert_eq!(sqlite_file("sqlite://a.db?mode=ro"), "a.db");
        assert_eq!(sqlite_file("sqlite:a.db"), "a.db");
        assert_eq!(sqlite_file("sqlite+aiosqlite:///abs/b.db"), "/abs/b.db");
    }

    #[test]
    fn tables_are_sorted_filtered_and_capped() {
        let names = vec!["b".to_string(), "a".into(), "c".into()];
        assert_eq!(pick_tables(names.clone(), None, 2), ["a", "b"]);
        assert_eq!(pick_tables(names, Some(&["c".to_string()]), 50), ["c"]);
    }
}
