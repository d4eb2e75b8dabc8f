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

/// A graph filled from empty gets its statistics refreshed by the adapter
/// (autovacuum waits a minute and a tenth of the table, and counts its own
/// runs apart): after a few thousand edges the adapter's `ANALYZE` has run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_graph_statistics_follow_a_growing_graph() {
    use recall_core::ports::GraphStore;
    use recall_core::{DatasetId, Edge, Node};
    use sea_orm::{ConnectionTrait, Database, Statement};

    let Some((url, name)) = throwaway_database("analyze").await else { return };
    {
        let graph = SqlGraphStore::new(SqlDatabase::connect(&url).await.unwrap());
        let ds = DatasetId(uuid::Uuid::new_v4());
        let nodes: Vec<Node> = (0..600)
            .map(|_| Node { id: uuid::Uuid::new_v4(), node_type: "Entity".into(), properties: Default::default() })
            .collect();
        graph.upsert_nodes(ds, &nodes).await.unwrap();
        for round in 0..6 {
            let edges: Vec<Edge> =
                nodes.windows(2).map(|w| Edge::new(w[0].id, &format!("r{round}"), w[1].id)).collect();
            graph.upsert_edges(ds, &edges).await.unwrap();
        }
        let conn = Database::connect(&url).await.unwrap();
        let analysed = conn
            .query_one_raw(Statement::from_string(
                conn.get_database_backend(),
                "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'graph_edges'",
            ))
            .await
            .unwrap()
            .unwrap();
        let count: i64 = analysed.try_get("", "analyze_count").unwrap();
        assert!(count >= 1, "the adapter analysed the edges it wrote");
        conn.close().await.unwrap();
    }
    drop_database(&name).await;
}
