//! `recall`, the legacy `search` and the history of both. The request
//! types are the engine's ([`RecallRequest`], [`SearchRequest`]): they are
//! also the HTTP bodies (docs/requests.md).

use std::sync::Arc;

use recall_core::events::RecallEvents;
use recall_core::{HistoryRow, RecallResponse, Result, User};
use recall_engine::{RecallExplain, RecallRequest, SearchRequest};
use serde_json::Value;

use super::Application;
use crate::search_results;

impl Application {
    /// Asks memory a question (automatic routing unless the request pins a type).
    pub async fn recall(&self, caller: &User, request: &RecallRequest) -> Result<Vec<RecallResponse>> {
        self.engine.recall(caller, request).await
    }

    /// [`Application::recall`], with what it decided and each stage's time.
    pub async fn recall_explained(
        &self,
        caller: &User,
        request: &RecallRequest,
    ) -> Result<(Vec<RecallResponse>, RecallExplain)> {
        self.engine.recall_explained(caller, request).await
    }

    /// [`Application::recall`], reporting its events as it runs (an event stream).
    pub async fn recall_with_events(
        &self,
        caller: &User,
        request: &RecallRequest,
        events: Arc<dyn RecallEvents>,
    ) -> Result<Vec<RecallResponse>> {
        self.engine.recall_with_events(caller, request, events).await
    }

    /// The legacy `search()`, in Cognee's backwards-compatible JSON: one
    /// result per dataset when access control is on, the bare results when
    /// it is off (`ENABLE_BACKEND_ACCESS_CONTROL`), verbose when asked.
    pub async fn search(&self, caller: &User, request: &SearchRequest) -> Result<Vec<Value>> {
        let payloads = self.engine.search(caller, request).await?;
        Ok(search_results(&payloads, request.verbose, self.engine.settings().access_control))
    }

    /// The caller's questions and the answers they got, oldest first.
    pub async fn history(&self, caller: &User) -> Result<Vec<HistoryRow>> {
        self.engine.search_history(caller).await
    }
}
