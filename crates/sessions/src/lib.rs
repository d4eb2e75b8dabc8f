//! Placeholder crate: filled by its own issue (see issues list).
