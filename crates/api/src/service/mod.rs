//! The application layer: each use case a user can invoke, written once.
//!
//! The CLI, the HTTP routes and the MCP tools parse their input into one of
//! the typed requests here, call [`Application`] for the caller they act
//! for, and render the typed outcome. What happens around a use case — what
//! runs after a remember, whether it runs in the background, which dataset
//! a session turn is bound to — is decided here and nowhere else
//! (docs/application.md).

mod accounts;
mod background;
mod datasets;
mod forget;
mod health;
mod pipelines;
mod query;
mod remember;
mod sessions;
mod skills;

use std::sync::Arc;

use recall_accounts::Accounts;
use recall_engine::Engine;

pub use background::{BackgroundError, BackgroundWork};
pub use datasets::GrantRequest;
pub use forget::{ForgetReport, ForgetRequest};
pub use health::EmbeddingHealth;
pub use pipelines::{CognifyRun, ImproveRequest};
pub use remember::{Improvement, RememberReport, RememberRequest};

/// The use cases, on the engine (memory) and the accounts service (keys
/// and passwords). Cheap to clone: every front end of one process shares
/// them and the background work.
#[derive(Clone)]
pub struct Application {
    engine: Engine,
    accounts: Accounts,
    background: Arc<BackgroundWork>,
}

impl Application {
    pub fn new(engine: Engine, accounts: Accounts) -> Self {
        Self { engine, accounts, background: Arc::default() }
    }

    /// Work that outlives its request: what runs, what failed, and the
    /// wait for it at shutdown.
    pub fn background(&self) -> &Arc<BackgroundWork> {
        &self.background
    }
}
