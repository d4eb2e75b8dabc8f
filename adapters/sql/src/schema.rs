//! Tables and indexes, in DDL that SQLite and Postgres both accept.
//! Ids are UUID strings; times are epoch milliseconds; JSON is TEXT.

use recall_core::Result;
use sea_orm::{ConnectionTrait, DatabaseConnection};

use crate::db_err;

const DDL: &[&str] = &[
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

pub(crate) async fn create(conn: &DatabaseConnection) -> Result<()> {
    for ddl in DDL {
        conn.execute_unprepared(ddl).await.map_err(db_err)?;
    }
    Ok(())
}
