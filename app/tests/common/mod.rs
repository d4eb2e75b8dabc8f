//! Runs the `recall` binary as a user would, with none of the developer's
//! own model or user settings leaking in.

use std::path::Path;
use std::process::{Command, Output};

pub fn recall(data_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_remove("LLM_API_KEY")
        .env_remove("EMBEDDING_API_KEY")
        .env_remove("EMBEDDING_ENDPOINT")
        .env_remove("RECALL_CHUNK_SIZE")
        .env_remove("RECALL_USER")
        .output()
        .unwrap()
}
