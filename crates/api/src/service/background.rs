//! Work that outlives the request that started it (a background remember,
//! a background cognify): a task tracker the process waits for at
//! shutdown, how many runs are in flight per dataset, and the errors they
//! ended with — each keyed by the user who started it, so one caller never
//! sees another's.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use recall_core::{RecallError, User};
use tokio_util::task::TaskTracker;
use uuid::Uuid;

/// The errors kept per dataset (newest first).
const ERRORS_KEPT: usize = 50;

/// (user id, dataset name).
type Key = (Uuid, String);

/// One background run that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundError {
    /// When it failed, RFC 3339.
    pub at: String,
    /// The error and its class: `<message> [<ErrorName>]`.
    pub message: String,
}

#[derive(Default)]
pub struct BackgroundWork {
    tracker: TaskTracker,
    running: Mutex<HashMap<Key, usize>>,
    errors: Mutex<HashMap<Key, VecDeque<BackgroundError>>>,
}

impl BackgroundWork {
    /// Runs `work` for `user` on `dataset` (a name) in the background;
    /// shutdown waits for it ([`BackgroundWork::drain`]), and its error is
    /// kept for [`BackgroundWork::errors_of`].
    pub fn spawn(
        self: &std::sync::Arc<Self>,
        user: &User,
        dataset: &str,
        what: &'static str,
        work: impl Future<Output = Result<(), RecallError>> + Send + 'static,
    ) {
        let key: Key = (user.id, dataset.to_string());
        if let Ok(mut running) = self.running.lock() {
            *running.entry(key.clone()).or_default() += 1;
        }
        let this = self.clone();
        self.tracker.spawn(async move {
            let outcome = work.await;
            if let Err(e) = &outcome {
                tracing::error!(error = %e, dataset = %key.1, "background {what} failed");
            }
            this.finish(key, outcome.err());
        });
    }

    fn finish(&self, key: Key, error: Option<RecallError>) {
        if let Ok(mut running) = self.running.lock() {
            if let Some(n) = running.get_mut(&key) {
                *n = n.saturating_sub(1);
            }
        }
        if let (Some(error), Ok(mut errors)) = (error, self.errors.lock()) {
            let ring = errors.entry(key).or_default();
            ring.push_front(BackgroundError {
                at: chrono::Utc::now().to_rfc3339(),
                message: format!("{error} [{}]", error.name()),
            });
            ring.truncate(ERRORS_KEPT);
        }
    }

    /// Whether a run of `user`'s is in flight on one of `datasets` (on any, when empty).
    pub fn running_for(&self, user: &User, datasets: &[String]) -> bool {
        self.running.lock().is_ok_and(|running| {
            running.iter().any(|((owner, d), n)| {
                *owner == user.id && *n > 0 && (datasets.is_empty() || datasets.iter().any(|x| x == d))
            })
        })
    }

    /// The errors `user`'s runs on `dataset` ended with, newest first.
    pub fn errors_of(&self, user: &User, dataset: &str) -> Vec<BackgroundError> {
        let key: Key = (user.id, dataset.to_string());
        self.errors
            .lock()
            .map(|e| e.get(&key).map(|r| r.iter().cloned().collect()).unwrap_or_default())
            .unwrap_or_default()
    }

    /// Stops taking work and waits up to `timeout` for what runs.
    pub async fn drain(&self, timeout: Duration) {
        self.tracker.close();
        if tokio::time::timeout(timeout, self.tracker.wait()).await.is_err() {
            tracing::warn!(tasks = self.tracker.len(), "shutting down with background work unfinished");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;

    fn user(email: &str) -> User {
        User { id: Uuid::new_v4(), email: email.into(), tenant_id: None }
    }

    #[tokio::test]
    async fn a_run_is_seen_by_its_user_only_and_its_error_is_kept() {
        let work = Arc::new(BackgroundWork::default());
        let (ada, bob) = (user("ada@example.com"), user("bob@example.com"));
        let (release, wait) = tokio::sync::oneshot::channel::<()>();
        work.spawn(&ada, "notes", "remember", async move {
            let _ = wait.await;
            Err(RecallError::invalid_input("no"))
        });
        assert!(work.running_for(&ada, &[]));
        assert!(work.running_for(&ada, &["notes".into()]));
        assert!(!work.running_for(&ada, &["other".into()]));
        assert!(!work.running_for(&bob, &[]), "another user's run is not visible");
        release.send(()).unwrap();
        work.drain(Duration::from_secs(5)).await;
        assert!(!work.running_for(&ada, &[]));
        let errors = work.errors_of(&ada, "notes");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].message.ends_with(&format!("[{}]", RecallError::invalid_input("no").name())), "{errors:?}");
        assert!(work.errors_of(&bob, "notes").is_empty());
    }
}
