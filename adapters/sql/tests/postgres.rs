#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The shared conformance suites against the SQL adapter on a real PostgreSQL
//! server. Each run creates a throwaway database and drops it afterwards.
//! Outside CI the suite is skipped, loudly, when no server answers; in CI
//! (`CI=true`) an unreachable server fails it.

mod common;

use std::sync::Arc;

use recall_conformance::{graph_store_conformance, relational_store_conformance};
use recall_sql::{SqlDatabase, SqlGraphStore, SqlRelationalStore};

use recall_conformance::postgres::{drop_database, throwaway_database};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_graph_store_conforms() {
    let Some((url, name)) = throwaway_database("graph").await else { return };
    {
        let db = SqlDatabase::connect(&url).await.unwrap();
        graph_store_conformance(Arc::new(SqlGraphStore::new(db)), 50_000).await;
    }
    drop_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_relational_store_conforms() {
    let Some((url, name)) = throwaway_database("rel").await else { return };
    {
        let db = SqlDatabase::connect(&url).await.unwrap();
        // Connecting again must find the schema in place (idempotent DDL).
        SqlDatabase::connect(&url).await.unwrap();
        relational_store_conformance(Arc::new(SqlRelationalStore::new(db))).await;
    }
    drop_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_session_store_conforms() {
    let Some((url, name)) = throwaway_database("sessions").await else { return };
    {
        let db = SqlDatabase::connect(&url).await.unwrap();
        recall_conformance::session_store_conformance(Arc::new(recall_sql::SqlSessionStore::new(db))).await;
    }
    drop_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_edges_from_before_the_type_key_upgrade() {
    let Some((url, name)) = throwaway_database("typekey").await else { return };
    common::edges_from_before_the_type_key_upgrade(&url).await;
    drop_database(&name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_edges_from_before_the_provenance_column_upgrade() {
    let Some((url, name)) = throwaway_database("provenance").await else { return };
    common::edges_from_before_the_provenance_column_upgrade(&url).await;
    drop_database(&name).await;
}
