//! In-process adapters: real implementations of every port that keep their
//! data in memory, plus the built-in offline embedder. They run the same
//! conformance suites as the persistent adapters, and serve tests and
//! ephemeral engines.

mod graph;
mod hashing_embedder;
mod relational;
mod sessions;
mod vector;

pub use graph::MemoryGraphStore;
pub use hashing_embedder::HashingEmbedder;
pub use relational::MemoryRelationalStore;
pub use sessions::MemorySessionStore;
pub use vector::{cosine_distance, MemoryVectorStore};
