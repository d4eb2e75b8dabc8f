//! The schema as sea-orm migrations shared by SQLite and Postgres: DDL both
//! accept. Ids are UUID strings; times are epoch milliseconds; JSON is TEXT.
//! Applied migrations are recorded in `seaql_migrations`; add new ones to
//! [`Migrator::migrations`], never edit an applied one.

use recall_core::Result;
use sea_orm::DatabaseConnection;
use sea_orm_migration::prelude::*;

use crate::db_err;

/// Migration 1: users, datasets, grants, data, pipeline runs, graph tables.
const INITIAL: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS users (
        id TEXT PRIMARY KEY,
        email TEXT NOT NULL UNIQUE,
        tenant_id TEXT,
        created_at BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS datasets (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        tenant_id TEXT,
        created_at BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS datasets_owner_name ON datasets (owner_id, name)",
    "CREATE TABLE IF NOT EXISTS acls (
        principal_id TEXT NOT NULL,
        dataset_id TEXT NOT NULL,
        permission TEXT NOT NULL,
        PRIMARY KEY (principal_id, dataset_id, permission))",
    "CREATE INDEX IF NOT EXISTS acls_dataset ON acls (dataset_id)",
    "CREATE TABLE IF NOT EXISTS data (
        dataset_id TEXT NOT NULL,
        id TEXT NOT NULL,
        name TEXT NOT NULL,
        extension TEXT NOT NULL,
        mime_type TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        raw_data_location TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (dataset_id, id))",
    "CREATE TABLE IF NOT EXISTS pipeline_runs (
        id TEXT PRIMARY KEY,
        pipeline_run_id TEXT NOT NULL,
        pipeline_name TEXT,
        dataset_id TEXT NOT NULL,
        status TEXT,
        error_class TEXT,
        error_message TEXT,
        run_info TEXT NOT NULL,
        created_at BIGINT NOT NULL)",
    // The warm-up probe reads runs by dataset, status and pipeline name.
    "CREATE INDEX IF NOT EXISTS pipeline_runs_probe ON pipeline_runs (dataset_id, status, pipeline_name)",
    "CREATE TABLE IF NOT EXISTS graph_nodes (
        dataset_id TEXT NOT NULL,
        id TEXT NOT NULL,
        node_type TEXT NOT NULL,
        name TEXT,
        properties TEXT NOT NULL,
        PRIMARY KEY (dataset_id, id))",
    "CREATE INDEX IF NOT EXISTS graph_nodes_type ON graph_nodes (dataset_id, node_type)",
    "CREATE TABLE IF NOT EXISTS graph_edges (
        dataset_id TEXT NOT NULL,
        source_id TEXT NOT NULL,
        relationship_name TEXT NOT NULL,
        target_id TEXT NOT NULL,
        edge_text TEXT,
        properties TEXT NOT NULL,
        PRIMARY KEY (dataset_id, source_id, relationship_name, target_id))",
    // The primary key serves outgoing 1-hop lookups; this one serves incoming.
    "CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (dataset_id, target_id)",
];

/// Migration 2: search history.
const HISTORY: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS queries (
        id TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        query_type TEXT NOT NULL,
        user_id TEXT NOT NULL,
        dataset_id TEXT,
        created_at BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS queries_user ON queries (user_id, created_at)",
    "CREATE TABLE IF NOT EXISTS results (
        id TEXT PRIMARY KEY,
        value TEXT NOT NULL,
        query_id TEXT NOT NULL,
        user_id TEXT NOT NULL,
        dataset_id TEXT,
        created_at BIGINT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS results_user ON results (user_id, created_at)",
];

struct M20261201History;

impl MigrationName for M20261201History {
    fn name(&self) -> &str {
        "m20261201_000002_search_history"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261201History {
    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        for ddl in HISTORY {
            manager.get_connection().execute_unprepared(ddl).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        for table in ["results", "queries"] {
            manager.get_connection().execute_unprepared(&format!("DROP TABLE IF EXISTS {table}")).await?;
        }
        Ok(())
    }
}

/// Migration 3: an edge's provenance (`document_ids`) moves out of
/// `properties` into the table's last column, so a read that does not ask for
/// it never loads it. Idempotent: a crash before the migration is recorded
/// re-runs it.
struct M20261202EdgeProvenance;

impl MigrationName for M20261202EdgeProvenance {
    fn name(&self) -> &str {
        "m20261202_000003_edge_provenance"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261202EdgeProvenance {
    /// One transaction on every backend (sea-orm wraps only Postgres'):
    /// all or nothing, and every statement on one SQLite connection. Spread
    /// over the pool, a statement could land on a connection whose cached
    /// schema predates the change, and SQLite's `DROP COLUMN` does not
    /// re-check a stale schema (it failed with "no such column").
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        if !manager.has_column("graph_edges", "document_ids").await? {
            conn.execute_unprepared("ALTER TABLE graph_edges ADD COLUMN document_ids TEXT").await?;
        }
        let moved = match conn.get_database_backend() {
            sea_orm::DbBackend::Postgres => {
                "UPDATE graph_edges SET document_ids = (properties::jsonb -> 'document_ids')::text, \
                 properties = (properties::jsonb - 'document_ids')::text \
                 WHERE jsonb_exists(properties::jsonb, 'document_ids')"
            }
            _ => {
                "UPDATE graph_edges SET document_ids = json_extract(properties, '$.document_ids'), \
                 properties = json_remove(properties, '$.document_ids') \
                 WHERE json_type(properties, '$.document_ids') IS NOT NULL"
            }
        };
        conn.execute_unprepared(moved).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let back = match conn.get_database_backend() {
            sea_orm::DbBackend::Postgres => {
                "UPDATE graph_edges SET properties = jsonb_set(properties::jsonb, '{document_ids}', \
                 document_ids::jsonb)::text WHERE document_ids IS NOT NULL"
            }
            _ => {
                "UPDATE graph_edges SET properties = json_set(properties, '$.document_ids', json(document_ids)) \
                 WHERE document_ids IS NOT NULL"
            }
        };
        conn.execute_unprepared(back).await?;
        conn.execute_unprepared("ALTER TABLE graph_edges DROP COLUMN document_ids").await?;
        Ok(())
    }
}

/// Migration 4: each edge's type key (`Edge::type_key`, the id of the
/// EdgeType vector row that scores it) in a column, with two indexes: by
/// endpoint key and type key together, so a search's ranking reads the keys
/// between its seeds from the index alone (no text, no properties, no row);
/// and by type key, so the edges of a hit type are found without reading a
/// hub's every edge. Existing rows are keyed in batches (the key is a uuid5,
/// computed here), all in one transaction: a crash leaves the table as it
/// was, and the next connection runs it again.
struct M20261203EdgeTypeKey;

impl MigrationName for M20261203EdgeTypeKey {
    fn name(&self) -> &str {
        "m20261203_000004_edge_type_key"
    }
}

/// Rows keyed per statement by migration 4.
const KEY_BATCH: u64 = 2_000;

#[async_trait::async_trait]
impl MigrationTrait for M20261203EdgeTypeKey {
    /// One transaction on every backend (sea-orm wraps only Postgres'):
    /// all or nothing, and every statement on one SQLite connection. Spread
    /// over the pool, a statement could land on a connection whose cached
    /// schema predates the change, and SQLite's `DROP COLUMN` does not
    /// re-check a stale schema (it failed with "no such column").
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let backend = conn.get_database_backend();
        if !manager.has_column("graph_edges", "type_key").await? {
            conn.execute_unprepared("ALTER TABLE graph_edges ADD COLUMN type_key TEXT").await?;
        }
        let update = match backend {
            sea_orm::DbBackend::Postgres => {
                "UPDATE graph_edges SET type_key = v.k FROM (SELECT e->>0 AS d, e->>1 AS s, e->>2 AS r, e->>3 AS t, \
                 e->>4 AS k FROM json_array_elements($1::json) e) v WHERE graph_edges.dataset_id = v.d AND \
                 graph_edges.source_id = v.s AND graph_edges.relationship_name = v.r AND graph_edges.target_id = v.t"
            }
            _ => {
                "UPDATE graph_edges SET type_key = v.k FROM (SELECT value ->> 0 AS d, value ->> 1 AS s, \
                 value ->> 2 AS r, value ->> 3 AS t, value ->> 4 AS k FROM json_each($1)) v WHERE \
                 graph_edges.dataset_id = v.d AND graph_edges.source_id = v.s AND \
                 graph_edges.relationship_name = v.r AND graph_edges.target_id = v.t"
            }
        };
        // Keyset pages in primary-key order; edge_text comes before the
        // provenance column, so SQLite reads no overflow page of a long list.
        let mut after: Option<(String, String, String, String)> = None;
        loop {
            let (filter, values): (&str, Vec<sea_orm::Value>) = match &after {
                None => ("", vec![]),
                Some((d, s, r, t)) => (
                    " AND (dataset_id, source_id, relationship_name, target_id) > ($1, $2, $3, $4)",
                    vec![d.clone().into(), s.clone().into(), r.clone().into(), t.clone().into()],
                ),
            };
            let sql = format!(
                "SELECT dataset_id, source_id, relationship_name, target_id, edge_text FROM graph_edges \
                 WHERE type_key IS NULL{filter} ORDER BY dataset_id, source_id, relationship_name, target_id \
                 LIMIT {KEY_BATCH}"
            );
            let rows = conn.query_all_raw(sea_orm::Statement::from_sql_and_values(backend, &sql, values)).await?;
            let Some(last) = rows.last() else { break };
            let mut keyed = Vec::with_capacity(rows.len());
            for row in &rows {
                let d: String = row.try_get("", "dataset_id")?;
                let s: String = row.try_get("", "source_id")?;
                let r: String = row.try_get("", "relationship_name")?;
                let t: String = row.try_get("", "target_id")?;
                let text: Option<String> = row.try_get("", "edge_text")?;
                let key = recall_core::ids::edge_type_key(text.as_deref(), &r).to_string();
                keyed.push(serde_json::json!([d, s, r, t, key]));
            }
            let listed = serde_json::Value::from(keyed).to_string();
            conn.execute_raw(sea_orm::Statement::from_sql_and_values(backend, update, vec![listed.into()])).await?;
            after = Some((
                last.try_get("", "dataset_id")?,
                last.try_get("", "source_id")?,
                last.try_get("", "relationship_name")?,
                last.try_get("", "target_id")?,
            ));
            if (rows.len() as u64) < KEY_BATCH {
                break;
            }
        }
        conn.execute_unprepared(
            "CREATE INDEX IF NOT EXISTS graph_edges_sketch ON graph_edges \
             (dataset_id, source_id, relationship_name, target_id, type_key)",
        )
        .await?;
        conn.execute_unprepared(
            "CREATE INDEX IF NOT EXISTS graph_edges_type_key ON graph_edges (dataset_id, type_key)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared("DROP INDEX IF EXISTS graph_edges_sketch").await?;
        conn.execute_unprepared("DROP INDEX IF EXISTS graph_edges_type_key").await?;
        conn.execute_unprepared("ALTER TABLE graph_edges DROP COLUMN type_key").await?;
        Ok(())
    }
}

/// Migration 5: data versions (docs/backends.md, "Data versions"). Every
/// write bumps `store_version` (one row) and stamps the written dataset with
/// the new value, in one transaction, so a long-lived process can tell at its
/// next read that another process changed the data.
struct M20261204DataVersions;

impl MigrationName for M20261204DataVersions {
    fn name(&self) -> &str {
        "m20261204_000005_data_versions"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261204DataVersions {
    /// One transaction on every backend (see migration 3).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        if !manager.has_column("datasets", "data_version").await? {
            conn.execute_unprepared("ALTER TABLE datasets ADD COLUMN data_version BIGINT NOT NULL DEFAULT 0").await?;
        }
        conn.execute_unprepared(
            "CREATE TABLE IF NOT EXISTS store_version (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)",
        )
        .await?;
        conn.execute_unprepared("INSERT INTO store_version (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared("DROP TABLE IF EXISTS store_version").await?;
        conn.execute_unprepared("ALTER TABLE datasets DROP COLUMN data_version").await?;
        Ok(())
    }
}

/// Migration 6: credentials (docs/auth.md). API keys are stored as their
/// derived hash only (unique: a lookup compares hashes); a user's password as
/// an Argon2 PHC string, NULL for a user without one.
struct M20261205Credentials;

impl MigrationName for M20261205Credentials {
    fn name(&self) -> &str {
        "m20261205_000006_credentials"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261205Credentials {
    /// One transaction on every backend (see migration 3).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared(
            "CREATE TABLE IF NOT EXISTS api_keys (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL,
                key_hash TEXT NOT NULL UNIQUE,
                label TEXT NOT NULL,
                name TEXT,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT)",
        )
        .await?;
        conn.execute_unprepared("CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys (user_id, created_at)").await?;
        if !manager.has_column("users", "hashed_password").await? {
            conn.execute_unprepared("ALTER TABLE users ADD COLUMN hashed_password TEXT").await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared("DROP TABLE IF EXISTS api_keys").await?;
        conn.execute_unprepared("ALTER TABLE users DROP COLUMN hashed_password").await?;
        Ok(())
    }
}

/// Migration 7: session memory (docs/sessions.md). Rows keep their insertion
/// order in `seq`; `expires_at` is NULL for rows that never expire. QA rows
/// carry the dataset whose search wrote them, so forgetting the dataset
/// forgets them.
struct M20261206Sessions;

impl MigrationName for M20261206Sessions {
    fn name(&self) -> &str {
        "m20261206_000007_sessions"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261206Sessions {
    /// One transaction on every backend (see migration 3).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let seq = match conn.get_database_backend() {
            sea_orm::DbBackend::Postgres => "seq BIGSERIAL PRIMARY KEY",
            _ => "seq INTEGER PRIMARY KEY AUTOINCREMENT",
        };
        let ddl = [
            format!(
                "CREATE TABLE IF NOT EXISTS cache_qa_entries ({seq}, user_id TEXT NOT NULL, session_id TEXT NOT NULL, \
                 qa_id TEXT NOT NULL, dataset_id TEXT, payload TEXT NOT NULL, created_at BIGINT NOT NULL, \
                 expires_at BIGINT, UNIQUE (user_id, session_id, qa_id))"
            ),
            "CREATE INDEX IF NOT EXISTS cache_qa_entries_session ON cache_qa_entries (user_id, session_id, seq)".into(),
            "CREATE INDEX IF NOT EXISTS cache_qa_entries_dataset ON cache_qa_entries (dataset_id)".into(),
            format!(
                "CREATE TABLE IF NOT EXISTS cache_trace_entries ({seq}, user_id TEXT NOT NULL, session_id TEXT NOT NULL, \
                 trace_id TEXT NOT NULL, payload TEXT NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT)"
            ),
            "CREATE INDEX IF NOT EXISTS cache_trace_entries_session ON cache_trace_entries (user_id, session_id, seq)"
                .into(),
            format!(
                "CREATE TABLE IF NOT EXISTS cache_session_context ({seq}, user_id TEXT NOT NULL, \
                 session_id TEXT NOT NULL, entry_id TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, \
                 created_at BIGINT NOT NULL, expires_at BIGINT, UNIQUE (user_id, session_id, entry_id))"
            ),
            "CREATE TABLE IF NOT EXISTS session_records (session_id TEXT NOT NULL, user_id TEXT NOT NULL, \
             dataset_id TEXT, created_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, expires_at BIGINT, \
             version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (session_id, user_id))"
                .into(),
            "CREATE INDEX IF NOT EXISTS session_records_user ON session_records (user_id, updated_at)".into(),
        ];
        for sql in ddl {
            conn.execute_unprepared(&sql).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        for table in ["session_records", "cache_session_context", "cache_trace_entries", "cache_qa_entries"] {
            conn.execute_unprepared(&format!("DROP TABLE IF EXISTS {table}")).await?;
        }
        Ok(())
    }
}

/// Migration 8: QA embeddings kept with their entries (`vector`, the
/// little-endian `f32` bytes, its `vector_model`, and the session version it
/// was written at), a session's pinned node set (a JSON array), and the
/// session rows indexed by expiry.
struct M20261207SessionVectors;

impl MigrationName for M20261207SessionVectors {
    fn name(&self) -> &str {
        "m20261207_000008_session_vectors"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261207SessionVectors {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let bytes = match conn.get_database_backend() {
            sea_orm::DbBackend::Postgres => "BYTEA",
            _ => "BLOB",
        };
        // Each column only when missing: a database whose migration records
        // were lost runs this again (as the earlier, `IF NOT EXISTS` ones do).
        let columns = [
            ("cache_qa_entries", "vector_model", "TEXT"),
            ("cache_qa_entries", "vector", bytes),
            ("cache_qa_entries", "vector_version", "BIGINT"),
            ("session_records", "node_set", "TEXT"),
        ];
        for (table, column, kind) in columns {
            if !manager.has_column(table, column).await? {
                conn.execute_unprepared(&format!("ALTER TABLE {table} ADD COLUMN {column} {kind}")).await?;
            }
        }
        conn.execute_unprepared(
            "CREATE INDEX IF NOT EXISTS cache_qa_entries_vectors ON cache_qa_entries (user_id, session_id, vector_version)",
        )
        .await?;
        // Every write slides the expiry of the session's stale rows: by
        // expiry, it reads those rows only, not the whole session.
        for table in ["cache_qa_entries", "cache_trace_entries", "cache_session_context"] {
            conn.execute_unprepared(&format!(
                "CREATE INDEX IF NOT EXISTS {table}_expiry ON {table} (user_id, session_id, expires_at)"
            ))
            .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let ddl = [
            "DROP INDEX IF EXISTS cache_qa_entries_vectors",
            "DROP INDEX IF EXISTS cache_qa_entries_expiry",
            "DROP INDEX IF EXISTS cache_trace_entries_expiry",
            "DROP INDEX IF EXISTS cache_session_context_expiry",
            "ALTER TABLE cache_qa_entries DROP COLUMN vector_version",
            "ALTER TABLE cache_qa_entries DROP COLUMN vector",
            "ALTER TABLE cache_qa_entries DROP COLUMN vector_model",
            "ALTER TABLE session_records DROP COLUMN node_set",
        ];
        for sql in ddl {
            conn.execute_unprepared(sql).await?;
        }
        Ok(())
    }
}

/// Migration 9: the quarantine of items being built or forgotten
/// (docs/reliability.md, "Crash-safe remember and forget"): the ids a
/// search must not see while the row's data item is unfinished.
struct M20261208Quarantine;

impl MigrationName for M20261208Quarantine {
    fn name(&self) -> &str {
        "m20261208_000009_quarantine"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261208Quarantine {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared(
            "CREATE TABLE IF NOT EXISTS data_quarantine (
                dataset_id TEXT NOT NULL,
                node_id TEXT NOT NULL,
                data_id TEXT NOT NULL,
                PRIMARY KEY (dataset_id, node_id, data_id))",
        )
        .await?;
        // Lifting an item's quarantine reads its rows by item.
        conn.execute_unprepared(
            "CREATE INDEX IF NOT EXISTS data_quarantine_item ON data_quarantine (dataset_id, data_id)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        manager.get_connection().execute_unprepared("DROP TABLE IF EXISTS data_quarantine").await?;
        Ok(())
    }
}

/// Migration 10: two indexes widened, each replacing its prefix. The
/// incoming-edge index carries the relationship and the source, so the edges
/// of one relationship into a node are read from the index alone: the
/// `contains` edges into the entities a write touched (their document
/// frequencies, `document_mentions` of the graph store) without a table row
/// per edge. The node type index carries the name, so the first documents by
/// name (the global context root) are read in order, not sorted from all.
struct M20261209WiderIndexes;

impl MigrationName for M20261209WiderIndexes {
    fn name(&self) -> &str {
        "m20261209_000010_wider_indexes"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261209WiderIndexes {
    /// One transaction on every backend (see migration 4).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared(
            "CREATE INDEX IF NOT EXISTS graph_edges_target_relationship ON graph_edges \
             (dataset_id, target_id, relationship_name, source_id)",
        )
        .await?;
        conn.execute_unprepared("DROP INDEX IF EXISTS graph_edges_target").await?;
        conn.execute_unprepared(
            "CREATE INDEX IF NOT EXISTS graph_nodes_type_name ON graph_nodes (dataset_id, node_type, name, id)",
        )
        .await?;
        conn.execute_unprepared("DROP INDEX IF EXISTS graph_nodes_type").await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        conn.execute_unprepared("CREATE INDEX IF NOT EXISTS graph_edges_target ON graph_edges (dataset_id, target_id)")
            .await?;
        conn.execute_unprepared("DROP INDEX IF EXISTS graph_edges_target_relationship").await?;
        conn.execute_unprepared("CREATE INDEX IF NOT EXISTS graph_nodes_type ON graph_nodes (dataset_id, node_type)")
            .await?;
        conn.execute_unprepared("DROP INDEX IF EXISTS graph_nodes_type_name").await?;
        Ok(())
    }
}

/// Migration 11, on SQLite only: an index on `dataset_id` alone for each
/// graph table. Its entries are in (dataset, rowid) order, so an export reads
/// one dataset's rows in the order the table stores them
/// (`nodes_page`/`edges_page`) instead of looking each up at random by key.
/// Postgres pages in key order and needs none.
struct M20261210DatasetRowOrder;

impl MigrationName for M20261210DatasetRowOrder {
    fn name(&self) -> &str {
        "m20261210_000011_dataset_row_order"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261210DatasetRowOrder {
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        if conn.get_database_backend() == sea_orm::DbBackend::Sqlite {
            for table in ["graph_nodes", "graph_edges"] {
                conn.execute_unprepared(&format!("CREATE INDEX IF NOT EXISTS {table}_dataset ON {table} (dataset_id)"))
                    .await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        for table in ["graph_nodes", "graph_edges"] {
            conn.execute_unprepared(&format!("DROP INDEX IF EXISTS {table}_dataset")).await?;
        }
        Ok(())
    }
}

/// Migration 12: an edge's provenance moves from the `document_ids` column
/// (a JSON list rewritten whole by every batch that stated the fact again,
/// which grew with the dataset) to `graph_edge_documents`, one row per
/// (edge, document), keyed by both: a batch adds rows, a forget deletes
/// one. SQLite keeps the table WITHOUT ROWID (the key is the row, stored
/// once). One transaction: a crash leaves the column as it was.
struct M20261211EdgeDocuments;

impl MigrationName for M20261211EdgeDocuments {
    fn name(&self) -> &str {
        "m20261211_000012_edge_documents"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261211EdgeDocuments {
    /// One connection and one transaction, as migration 3 (SQLite's
    /// `DROP COLUMN` on a stale cached schema).
    fn use_transaction(&self) -> Option<bool> {
        Some(true)
    }

    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;
        conn.execute_unprepared(&format!(
            "CREATE TABLE IF NOT EXISTS graph_edge_documents (
                dataset_id TEXT NOT NULL,
                source_id TEXT NOT NULL,
                relationship_name TEXT NOT NULL,
                target_id TEXT NOT NULL,
                document_id TEXT NOT NULL,
                PRIMARY KEY (dataset_id, source_id, relationship_name, target_id, document_id)){}",
            if postgres { "" } else { " WITHOUT ROWID" }
        ))
        .await?;
        if manager.has_column("graph_edges", "document_ids").await? {
            let moved = if postgres {
                "INSERT INTO graph_edge_documents SELECT e.dataset_id, e.source_id, e.relationship_name, \
                 e.target_id, d FROM graph_edges e CROSS JOIN LATERAL json_array_elements_text(CASE \
                 WHEN json_typeof(e.document_ids::json) = 'array' THEN e.document_ids::json ELSE '[]'::json END) d \
                 WHERE e.document_ids IS NOT NULL ON CONFLICT DO NOTHING"
            } else {
                "INSERT OR IGNORE INTO graph_edge_documents SELECT e.dataset_id, e.source_id, \
                 e.relationship_name, e.target_id, d.value FROM graph_edges e, json_each(CASE \
                 WHEN json_type(e.document_ids) = 'array' THEN e.document_ids ELSE '[]' END) d \
                 WHERE e.document_ids IS NOT NULL AND d.type = 'text'"
            };
            conn.execute_unprepared(moved).await?;
            conn.execute_unprepared("ALTER TABLE graph_edges DROP COLUMN document_ids").await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        let conn = manager.get_connection();
        let postgres = conn.get_database_backend() == sea_orm::DbBackend::Postgres;
        if !manager.has_column("graph_edges", "document_ids").await? {
            conn.execute_unprepared("ALTER TABLE graph_edges ADD COLUMN document_ids TEXT").await?;
        }
        let aggregate = if postgres {
            "json_agg(p.document_id ORDER BY p.document_id)::text"
        } else {
            "json_group_array(p.document_id)"
        };
        conn.execute_unprepared(&format!(
            "UPDATE graph_edges SET document_ids = (SELECT {aggregate} FROM graph_edge_documents p \
             WHERE p.dataset_id = graph_edges.dataset_id AND p.source_id = graph_edges.source_id \
             AND p.relationship_name = graph_edges.relationship_name AND p.target_id = graph_edges.target_id) \
             WHERE EXISTS (SELECT 1 FROM graph_edge_documents p WHERE p.dataset_id = graph_edges.dataset_id \
             AND p.source_id = graph_edges.source_id AND p.relationship_name = graph_edges.relationship_name \
             AND p.target_id = graph_edges.target_id)"
        ))
        .await?;
        conn.execute_unprepared("DROP TABLE IF EXISTS graph_edge_documents").await?;
        Ok(())
    }
}

struct M20261130Initial;

impl MigrationName for M20261130Initial {
    /// What `DeriveMigrationName` gave it (the file's name): recorded under
    /// this name in existing databases, so it must never change.
    fn name(&self) -> &str {
        "schema"
    }
}

#[async_trait::async_trait]
impl MigrationTrait for M20261130Initial {
    async fn up(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        for ddl in INITIAL {
            manager.get_connection().execute_unprepared(ddl).await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> std::result::Result<(), DbErr> {
        for table in ["graph_edges", "graph_nodes", "pipeline_runs", "data", "acls", "datasets", "users"] {
            manager.get_connection().execute_unprepared(&format!("DROP TABLE IF EXISTS {table}")).await?;
        }
        Ok(())
    }
}

/// Every migration, in order.
pub struct Migrator;

impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(M20261130Initial),
            Box::new(M20261201History),
            Box::new(M20261202EdgeProvenance),
            Box::new(M20261203EdgeTypeKey),
            Box::new(M20261204DataVersions),
            Box::new(M20261205Credentials),
            Box::new(M20261206Sessions),
            Box::new(M20261207SessionVectors),
            Box::new(M20261208Quarantine),
            Box::new(M20261209WiderIndexes),
            Box::new(M20261210DatasetRowOrder),
            Box::new(M20261211EdgeDocuments),
        ]
    }
}

/// Applies pending migrations. The initial DDL is idempotent (`IF NOT
/// EXISTS`), so databases created before migrations were recorded upgrade
/// cleanly.
pub(crate) async fn create(conn: &DatabaseConnection) -> Result<()> {
    Migrator::up(conn, None).await.map_err(db_err)
}
