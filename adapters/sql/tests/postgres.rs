#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The shared conformance suites against the SQL adapter on a real PostgreSQL
//! server. Each run creates a throwaway database and drops it afterwards.
//! Outside CI the suite is skipped, loudly, when no server answers; in CI
//! (`CI=true`) an unreachable server fails it.

mod common;

use std::sync::Arc;

use recall_conformance::{graph_store_conformance, relational_store_conformance};
use recall_sql::{SqlDatabase, SqlGraphStore, SqlRelationalStore};
use sea_orm::{ConnectionTrait, Database};

const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A throwaway database, or `None` (after saying so) when no server is reachable outside CI.
async fn throwaway_database(tag: &str) -> Option<(String, String)> {
    let admin_url = std::env::var("RECALL_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.into());
    let admin = match Database::connect(&admin_url).await {
        Ok(c) => c,
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("PostgreSQL at {admin_url} is unreachable in CI: {e}")
        }
        Err(e) => {
            eprintln!("SKIPPED: PostgreSQL conformance ({tag}): no server at {admin_url}: {e}");
            return None;
        }
    };
    let name = format!("recall_test_{}_{}", tag, uuid::Uuid::new_v4().simple());
    admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.unwrap();
    let base = admin_url.rsplit_once('/').map(|(b, _)| b.to_string()).unwrap();
    Some((format!("{base}/{name}"), name))
}

async fn drop_database(name: &str) {
    let admin_url = std::env::var("RECALL_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.into());
    let admin = Database::connect(&admin_url).await.unwrap();
    admin.execute_unprepared(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await.unwrap();
}

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
