//! Session memory as the engine offers it to its front ends (docs/sessions.md):
//! the CLI and the server call it with their caller, who only ever reaches
//! their own sessions (each call is keyed by the caller's id).

use std::sync::Arc;

use recall_core::session::SessionMemory;
use recall_core::{RecallError, Result};

use crate::Engine;

impl Engine {
    /// Session memory, or `SessionPreconditionError` when it is off.
    pub fn session_memory(&self) -> Result<Arc<dyn SessionMemory>> {
        self.sessions.clone().ok_or_else(|| RecallError::Validation {
            name: "SessionPreconditionError",
            message: "Session prerequisites not met: session memory is off (CACHING=false), so no session is kept."
                .into(),
        })
    }
}
