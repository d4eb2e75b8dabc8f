//! Health: whether each store answers, and one real embedding call.

use std::time::{Duration, Instant};

use recall_engine::ComponentHealth;

use super::Application;

/// One embedding of a short text, timed.
#[derive(Debug, Clone)]
pub struct EmbeddingHealth {
    /// The configured model.
    pub model: String,
    pub elapsed: Duration,
    /// `Err` with why when the call failed or the vector had the wrong width.
    pub outcome: Result<(), String>,
}

impl Application {
    /// Each store's health check, timed.
    pub async fn component_health(&self) -> Vec<ComponentHealth> {
        self.engine.component_health().await
    }

    /// Embeds one short text with the configured embedder.
    pub async fn embedding_health(&self) -> EmbeddingHealth {
        let embedder = self.engine.embedder();
        let started = Instant::now();
        let outcome = match embedder.embed(&["health check".to_string()]).await {
            Ok(v) if v.first().is_some_and(|e| e.len() == embedder.dimensions()) => Ok(()),
            Ok(_) => Err("the model answered with the wrong width".to_string()),
            Err(e) => Err(e.to_string()),
        };
        EmbeddingHealth { model: embedder.model().to_string(), elapsed: started.elapsed(), outcome }
    }
}
