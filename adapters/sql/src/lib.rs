//! The SQL adapter (sea-orm): the relational store and a graph store on SQL
//! tables, on SQLite (the embedded default) or Postgres. Both backends run the
//! same statements: `$n` placeholders, `ON CONFLICT` upserts, `IF NOT EXISTS`
//! DDL.

mod graph;
mod relational;
mod schema;
mod sessions;
mod tools;

use std::time::Duration;

use recall_core::{RecallError, Result};
use sea_orm::sqlx::sqlite::{SqliteJournalMode, SqliteSynchronous};
use sea_orm::{ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, Statement, Value};

pub use graph::SqlGraphStore;
pub use relational::SqlRelationalStore;
pub use schema::Migrator;
pub use sessions::SqlSessionStore;
pub use tools::SqlToolConnector;

/// Maps a driver error into the domain's backend error.
pub(crate) fn db_err(err: DbErr) -> RecallError {
    RecallError::backend(err)
}

/// The most bytes of an SQLite file each connection maps (1 GiB).
const SQLITE_MMAP_SIZE: &str = "1073741824";

/// A pooled connection to SQLite or Postgres, with the schema in place.
#[derive(Clone)]
pub struct SqlDatabase {
    conn: DatabaseConnection,
}

impl SqlDatabase {
    /// Connects to `sqlite://PATH` (created if missing) or `postgres://…`, and
    /// creates the tables and indexes if they do not exist.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::open(url, true).await
    }

    /// Connects without creating anything: `Ok(None)` when an SQLite file does
    /// not exist yet (nothing was ever remembered).
    pub async fn connect_existing(url: &str) -> Result<Option<Self>> {
        if let Some(path) = sqlite_path(url) {
            if path != ":memory:" && !tokio::fs::try_exists(path).await.unwrap_or(false) {
                return Ok(None);
            }
        }
        Self::open(url, true).await.map(Some)
    }

    async fn open(url: &str, create: bool) -> Result<Self> {
        if let Some(path) = sqlite_path(url).filter(|p| create && *p != ":memory:") {
            if let Some(parent) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
                tokio::fs::create_dir_all(parent).await.map_err(RecallError::backend)?;
            }
        }
        let mut opts = ConnectOptions::new(normalise_url(url)?);
        opts.sqlx_logging(false).connect_timeout(Duration::from_secs(10));
        if sqlite_path(url).is_some() {
            // A busy SQLite file waits for the writer instead of failing at once.
            // Reads through a memory map (no read syscall and copy per page):
            // graph reads touch thousands of pages per search. Virtual
            // address space only; pages stay in the OS page cache.
            //
            // synchronous=NORMAL is SQLite's recommended setting in WAL mode:
            // a commit no longer waits for an fsync of the WAL (one per
            // recall, for its history rows), the database cannot be corrupted,
            // and a commit survives any crash of the process; only a power
            // loss or OS crash may roll back the last commits (whole
            // transactions) since the previous checkpoint.
            opts.map_sqlx_sqlite_opts(|o| {
                o.busy_timeout(Duration::from_secs(30))
                    // WAL lets readers run while one writer writes; set on
                    // every connection, before synchronous, which relies on it.
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    .pragma("mmap_size", SQLITE_MMAP_SIZE)
            });
            opts.max_connections(8);
        } else {
            opts.max_connections(16);
        }
        let conn = Database::connect(opts).await.map_err(db_err)?;
        let db = Self { conn };
        schema::create(&db.conn).await?;
        Ok(db)
    }

    pub fn backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    pub fn connection(&self) -> &DatabaseConnection {
        &self.conn
    }

    pub async fn healthcheck(&self) -> Result<()> {
        self.conn.execute_unprepared("SELECT 1").await.map_err(db_err)?;
        Ok(())
    }

    pub(crate) fn stmt(&self, sql: &str, values: Vec<Value>) -> Statement {
        Statement::from_sql_and_values(self.backend(), sql, values)
    }

    /// A subquery over the ids of a JSON array bound at `$param` (see
    /// [`id_array`]): one parameter however many ids, so the statement text is
    /// the same for every list and is prepared once. SQLite binds `$n`
    /// parameters by name, in time quadratic in their number per statement;
    /// an 800-id list cost more than the read itself.
    pub(crate) fn id_set(&self, param: usize) -> String {
        match self.backend() {
            DbBackend::Postgres => format!("SELECT json_array_elements_text(${param}::json)"),
            _ => format!("SELECT value FROM json_each(${param})"),
        }
    }
}

fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    Some(rest.split('?').next().unwrap_or(rest))
}

fn normalise_url(url: &str) -> Result<String> {
    if let Some(path) = sqlite_path(url) {
        if path == ":memory:" {
            return Ok("sqlite::memory:".into());
        }
        return Ok(format!("sqlite://{path}?mode=rwc"));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(url.to_string());
    }
    Err(RecallError::invalid_input(format!("Unsupported database URL '{url}': use sqlite://PATH or postgres://…")))
}

/// `$1, $2, …` placeholders for `rows` rows of `cols` columns.
pub(crate) fn placeholders(rows: usize, cols: usize) -> String {
    let mut out = String::new();
    for r in 0..rows {
        if r > 0 {
            out.push_str(", ");
        }
        out.push('(');
        for c in 0..cols {
            if c > 0 {
                out.push_str(", ");
            }
            out.push('$');
            out.push_str(&(r * cols + c + 1).to_string());
        }
        out.push(')');
    }
    out
}

/// Ids as the JSON array text an [`SqlDatabase::id_set`] parameter takes.
pub(crate) fn id_array(ids: &[uuid::Uuid]) -> Value {
    Value::from(serde_json::Value::from(ids.iter().map(|id| id.to_string()).collect::<Vec<_>>()).to_string())
}

/// `$start, $start+1, …` for an IN list of `n` values.
pub(crate) fn in_list(start: usize, n: usize) -> String {
    (0..n).map(|i| format!("${}", start + i)).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_lists() {
        assert_eq!(placeholders(2, 2), "($1, $2), ($3, $4)");
        assert_eq!(in_list(2, 3), "$2, $3, $4");
    }

    #[test]
    fn urls() {
        assert_eq!(normalise_url("sqlite:///tmp/x.db").ok().as_deref(), Some("sqlite:///tmp/x.db?mode=rwc"));
        assert!(normalise_url("mysql://x").is_err());
        assert_eq!(sqlite_path("sqlite://a/b.db?mode=ro"), Some("a/b.db"));
    }
}
