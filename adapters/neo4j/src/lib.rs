//! The Neo4j graph store (neo4rs). Filled by the production-backends issue;
//! for now it connects and reports health, so configuration can select it and
//! fail loudly rather than fall back to another backend.

use recall_core::{RecallError, Result};

/// Connection settings for a Bolt server.
#[derive(Debug, Clone)]
pub struct Neo4jConfig {
    pub uri: String,
    pub user: String,
    pub password: String,
}

/// A connected Neo4j graph.
pub struct Neo4jGraphStore {
    graph: neo4rs::Graph,
}

impl Neo4jGraphStore {
    pub async fn connect(config: &Neo4jConfig) -> Result<Self> {
        let graph =
            neo4rs::Graph::new(&config.uri, &config.user, &config.password).await.map_err(RecallError::backend)?;
        Ok(Self { graph })
    }

    pub async fn healthcheck(&self) -> Result<()> {
        self.graph.run(neo4rs::query("RETURN 1")).await.map_err(RecallError::backend)
    }
}
