//! The SQL adapter (sea-orm): the relational store and a graph store on SQL
//! tables, on SQLite (the embedded default) or Postgres. Both backends run the
//! same statements: `$n` placeholders, `ON CONFLICT` upserts, `IF NOT EXISTS`
//! DDL.

mod graph;
mod history;
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

/// Each connection's page cache (negative: in KiB; 64 MiB, where SQLite's default is 2 MiB):
/// it holds the pages beyond the memory map, which a large store reads and
/// writes through it — the interior pages of the edge indexes, keyed by
/// random ids, are touched by every insert. A connection fills it only as
/// it reads, up to this bound.
const SQLITE_CACHE_KIB: &str = "-65536";

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
                    .pragma("cache_size", SQLITE_CACHE_KIB)
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

    /// The database that takes the writes a request makes — search history
    /// and session memory — when `url` is an SQLite file: the sibling file
    /// `<stem>.activity.db`, created if missing. `None` for Postgres and an
    /// in-memory database, which keep them beside everything else.
    ///
    /// Why a second file: in WAL mode any commit to a file makes every other
    /// pooled connection drop its page cache and memory map at its next read,
    /// so one history row per recall made every graph search fault the graph
    /// pages in again; and a history write no longer waits behind a
    /// remember's long write transaction.
    ///
    /// The first open moves the rows an earlier version wrote to the main file
    /// into the activity file, in one transaction marked done, then deletes
    /// them from the main file; a crash before the mark leaves the move to
    /// the next open, one after it only leftovers the next open deletes.
    pub async fn connect_activity(url: &str) -> Result<Option<Self>> {
        let Some(main) = sqlite_path(url).filter(|p| *p != ":memory:") else {
            return Ok(None);
        };
        let path = activity_path(main);
        let activity = Self::open(&format!("sqlite://{path}"), true).await?;
        activity.move_activity_rows(main).await?;
        Ok(Some(activity))
    }

    /// See [`Self::connect_activity`].
    async fn move_activity_rows(&self, main: &str) -> Result<()> {
        use sea_orm::sqlx::Row;
        let failed = |e: sea_orm::sqlx::Error| RecallError::backend(e);
        let pool = self.conn.get_sqlite_connection_pool();
        let mut conn = pool.acquire().await.map_err(failed)?;
        sea_orm::sqlx::query("CREATE TABLE IF NOT EXISTS activity_moved (moved_at BIGINT NOT NULL)")
            .execute(&mut *conn)
            .await
            .map_err(failed)?;
        let moved: i64 = sea_orm::sqlx::query("SELECT COUNT(*) FROM activity_moved")
            .fetch_one(&mut *conn)
            .await
            .map_err(failed)?
            .get(0);
        sea_orm::sqlx::query("ATTACH DATABASE $1 AS origin").bind(main).execute(&mut *conn).await.map_err(failed)?;
        let outcome = async {
            if moved == 0 {
                sea_orm::sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
                let copied = async {
                    // Another process may have moved them while this one waited.
                    let again: i64 =
                        sea_orm::sqlx::query("SELECT COUNT(*) FROM activity_moved").fetch_one(&mut *conn).await?.get(0);
                    if again == 0 {
                        for table in ACTIVITY_TABLES {
                            let columns: Vec<String> = sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(format!(
                                "PRAGMA main.table_info({table})"
                            )))
                            .fetch_all(&mut *conn)
                            .await?
                            .iter()
                            .map(|row| row.get::<String, _>("name"))
                            .collect();
                            let list = columns.join(", ");
                            let copy = format!("INSERT INTO main.{table} ({list}) SELECT {list} FROM origin.{table}");
                            sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(copy)).execute(&mut *conn).await?;
                        }
                        sea_orm::sqlx::query("INSERT INTO activity_moved (moved_at) VALUES ($1)")
                            .bind(recall_core::now_millis())
                            .execute(&mut *conn)
                            .await?;
                    }
                    Ok::<_, sea_orm::sqlx::Error>(())
                }
                .await;
                let end = if copied.is_ok() { "COMMIT" } else { "ROLLBACK" };
                sea_orm::sqlx::query(end).execute(&mut *conn).await?;
                copied?;
            }
            // Leftovers in the main file (this move's, or one a crash cut short).
            for table in ACTIVITY_TABLES {
                let any = format!("SELECT EXISTS (SELECT 1 FROM origin.{table})");
                let present: bool =
                    sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(any)).fetch_one(&mut *conn).await?.get(0);
                if present {
                    let clear = format!("DELETE FROM origin.{table}");
                    sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(clear)).execute(&mut *conn).await?;
                }
            }
            Ok::<_, sea_orm::sqlx::Error>(())
        }
        .await;
        let detached = sea_orm::sqlx::query("DETACH DATABASE origin").execute(&mut *conn).await;
        outcome.map_err(failed)?;
        if let Err(e) = detached {
            // A connection left with the main file attached must not go back
            // into the pool.
            conn.detach();
            return Err(failed(e));
        }
        Ok(())
    }

    pub fn backend(&self) -> DbBackend {
        self.conn.get_database_backend()
    }

    pub fn connection(&self) -> &DatabaseConnection {
        &self.conn
    }

    /// Closes the pool (every clone's): open connections finish and close.
    /// On SQLite the last close checkpoints the WAL and removes the `-wal`
    /// and `-shm` files, so the next process opens a clean file.
    pub async fn close(&self) -> Result<()> {
        self.conn.clone().close().await.map_err(db_err)
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

/// The tables of [`SqlDatabase::connect_activity`]: search history and
/// session memory.
const ACTIVITY_TABLES: [&str; 6] =
    ["queries", "results", "session_records", "cache_session_context", "cache_trace_entries", "cache_qa_entries"];

/// `dir/recall.db` → `dir/recall.activity.db`.
fn activity_path(main: &str) -> String {
    let path = std::path::Path::new(main);
    let stem = path.file_stem().map_or_else(|| "recall".into(), |s| s.to_string_lossy());
    path.with_file_name(format!("{stem}.activity.db")).to_string_lossy().into_owned()
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
        assert_eq!(activity_path("/d/recall.db"), "/d/recall.activity.db");
        assert_eq!(activity_path("store"), "store.activity.db");
    }
}
