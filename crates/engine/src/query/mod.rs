//! The read direction: `recall()` and the legacy `search()`: the request and
//! its validation, scopes and lanes, dataset routing, the graph lane, the
//! per-dataset fan-out through the retriever registry, and result
//! normalisation (docs/recall.md).

pub(crate) mod agentic;
pub mod dataset_routing;
pub(crate) mod fan_out;
pub(crate) mod graph_lane;
pub(crate) mod normalise;
pub(crate) mod prompt_files;
pub(crate) mod query_embedder;
pub(crate) mod recall;
pub(crate) mod request;
pub mod scope;
pub(crate) mod search;
pub(crate) mod session_turn;
pub mod tools_lane;
