//! `recall doctor`: the configured adapters, and whether each answers.

use recall::{build_engine, OpenMode, Settings};
use recall_core::{RecallError, Result};

pub(crate) async fn run(settings: &Settings) -> Result<()> {
    let (engine, active) = build_engine(settings, OpenMode::Create).await?;
    println!("relational: {}", active.relational);
    println!("graph:      {}", active.graph);
    println!("vector:     {}", active.vector);
    println!("embedder:   {}", active.embedder);
    println!("llm:        {}", active.llm.as_deref().unwrap_or("none (recall defaults to CHUNKS)"));
    let mut healthy = true;
    for (name, status) in recall::doctor(&engine).await {
        match status {
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
