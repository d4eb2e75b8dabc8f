#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The shared graph conformance suite against a real Bolt server: in CI the
//! FalkorDB server that `.ci/run` starts (../shared/tools/falkordb-bolt), or a
//! real Neo4j given by NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD. Skipped, loudly,
//! when no server is configured outside CI. Tests are isolated by dataset id.

use std::sync::Arc;
use std::time::Duration;

use recall_conformance::graph_store_conformance;
use recall_neo4j::{Neo4jConfig, Neo4jGraphStore};

fn config() -> Option<Neo4jConfig> {
    let uri = match std::env::var("NEO4J_URI") {
        Ok(uri) => uri,
        Err(_) if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("NEO4J_URI must be set in CI"),
        Err(_) => {
            eprintln!("SKIPPED: Neo4j conformance: NEO4J_URI is not set (start ../shared/tools/falkordb-bolt)");
            return None;
        }
    };
    let mut config = Neo4jConfig::new(
        uri,
        std::env::var("NEO4J_USER").unwrap_or_else(|_| "neo4j".into()),
        std::env::var("NEO4J_PASSWORD").unwrap_or_default(),
    );
    // FalkorDB (through the test tool's Redis-protocol upstream) has its own
    // index DDL; against a real Neo4j set NEO4J_SCHEMA=neo4j. Batches and
    // strings are the adapter's defaults: what it writes is what a user's
    // own Cypher reads.
    config.schema = match std::env::var("NEO4J_SCHEMA").as_deref() {
        Ok("neo4j") => recall_neo4j::SchemaMode::Neo4j,
        Ok("none") => recall_neo4j::SchemaMode::None,
        _ => recall_neo4j::SchemaMode::FalkorDb,
    };
    Some(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn neo4j_graph_store_conforms() {
    let Some(config) = config() else { return };
    let run = async {
        let store = Neo4jGraphStore::connect(&config).await.unwrap();
        let large = std::env::var("NEO4J_CONFORMANCE_BATCH").ok().and_then(|v| v.parse().ok()).unwrap_or(50_000);
        graph_store_conformance(Arc::new(store), large).await;
    };
    // A crashed server shows up as a hang: bound it.
    tokio::time::timeout(Duration::from_secs(900), run).await.expect("Neo4j conformance timed out");
}
