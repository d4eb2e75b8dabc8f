//! Recall's domain: the data points memory is made of, the search types, the
//! response shapes, the public error catalogue, and the ports (traits) that
//! storage, LLM and embedding backends implement.
//!
//! This crate performs no I/O. Adapters depend on it; it depends on no adapter.

pub mod access;
pub mod credentials;
pub mod error;
pub mod events;
pub mod ids;
pub mod model;
pub mod ports;
pub mod request;
pub mod response;
pub mod search_type;
pub mod secret;
pub mod session;
pub mod text;
pub mod tools;

pub use access::{DatasetAccess, DatasetRef, Grant, Permission};
pub use credentials::{ApiKey, NewApiKey};
pub use error::{ErrorKind, RecallError, Result};
pub use events::{CollectEvents, NoEvents, RecallEvent, RecallEvents, Stage};
pub use model::*;
pub use request::{FilterOperator, SearchOptions, DEFAULT_SYSTEM_PROMPT, DEFAULT_TOP_K};
pub use response::*;
pub use search_type::SearchType;
pub use secret::Secret;
