//! Prompt files named by a request (`system_prompt_path`, and
//! `retriever_specific_config.system_prompt_path` of NATURAL_LANGUAGE).
//! A request's path is never trusted: it is read only when it resolves,
//! after symlinks and `..`, to a file inside one of the configured prompt
//! directories (`RECALL_PROMPT_DIRS`); built-in names need no file. The
//! sources are handed to the retrievers in `RetrieverOptions::prompt_files`.

use std::path::Path;

use recall_core::{RecallError, Result};
use recall_retrievers::{prompts, RetrieverOptions};

use crate::Engine;

/// The largest prompt file read (a template, not a document).
const MAX_PROMPT_FILE_BYTES: u64 = 1 << 20;

impl Engine {
    /// Reads every prompt file the options name into `options.prompt_files`.
    pub(crate) async fn load_prompt_files(&self, options: &mut RetrieverOptions) -> Result<()> {
        let mut names = Vec::new();
        if options.search.system_prompt.as_deref().is_none_or(|s| s.trim().is_empty()) {
            names.extend(options.search.system_prompt_path.clone());
        }
        names.extend(options.rsc_str("system_prompt_path")?);
        for name in names {
            if prompts::is_builtin(&name) || options.prompt_files.contains_key(&name) {
                continue;
            }
            let source = self.read_prompt_file(&name).await?;
            options.prompt_files.insert(name, source);
        }
        Ok(())
    }

    async fn read_prompt_file(&self, path: &str) -> Result<String> {
        let refuse = || {
            RecallError::invalid_input(format!(
                "Prompt template '{path}' is not built in, and not a readable file inside an allowed prompt directory (RECALL_PROMPT_DIRS)."
            ))
        };
        let file = tokio::fs::canonicalize(path).await.map_err(|_| refuse())?;
        if !self.inside_prompt_dirs(&file).await {
            return Err(refuse());
        }
        let meta = tokio::fs::metadata(&file).await.map_err(|_| refuse())?;
        if !meta.is_file() {
            return Err(refuse());
        }
        if meta.len() > MAX_PROMPT_FILE_BYTES {
            return Err(RecallError::invalid_input(format!(
                "Prompt template '{path}' is {} bytes; prompt files are at most {MAX_PROMPT_FILE_BYTES} bytes.",
                meta.len()
            )));
        }
        tokio::fs::read_to_string(&file).await.map_err(|e| {
            RecallError::invalid_input(format!("Prompt template '{path}' is not readable UTF-8 text: {e}"))
        })
    }

    /// Whether a canonical path lies inside one of the prompt directories.
    async fn inside_prompt_dirs(&self, file: &Path) -> bool {
        for dir in &self.config.prompt_dirs {
            if let Ok(dir) = tokio::fs::canonicalize(dir).await {
                if file.starts_with(&dir) {
                    return true;
                }
            }
        }
        false
    }
}
