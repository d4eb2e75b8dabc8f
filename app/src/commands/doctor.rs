//! `recall doctor`: the configured adapters, and whether each answers.

use recall::{build_engine, OpenMode, Settings};
use recall_core::{RecallError, Result};

pub(crate) async fn run(settings: &Settings) -> Result<()> {
    let (engine, active) = build_engine(settings, OpenMode::Create).await?;
    let app = recall::application(engine, settings)?;
    println!("relational: {}", active.relational);
    println!("graph:      {}", active.graph);
    println!("vector:     {}", active.vector);
    println!("embedder:   {}", active.embedder);
    println!("llm:        {}", active.llm.as_deref().unwrap_or("none (recall defaults to CHUNKS)"));
    let mut healthy = true;
    for check in app.component_health().await {
        let name = match check.component {
            "graph_db" => format!("graph: {}", check.provider),
            "vector_db" => format!("vector: {}", check.provider),
            _ => "relational".to_string(),
        };
        match check.outcome {
            Ok(()) => println!("ok    {name}"),
            Err(e) => {
                healthy = false;
                println!("FAIL  {name}: {e}");
            }
        }
    }
    if healthy {
        Ok(())
    } else {
        Err(RecallError::backend_msg("an adapter failed its health check"))
    }
}
