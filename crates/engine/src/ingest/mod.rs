//! The write direction: `remember()` (add, then cognify), chunking, graph
//! extraction, the global-context index and `forget()` (docs/ingestion.md).
//! Nothing here reads the query side.

pub(crate) mod chunking;
pub(crate) mod cognify;
pub mod extract;
pub(crate) mod forget;
pub(crate) mod global_context;
pub(crate) mod graph_rows;
pub(crate) mod improve;
pub(crate) mod progress;
pub(crate) mod reembed;
pub(crate) mod remember;
pub(crate) mod update;
