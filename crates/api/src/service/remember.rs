//! `remember`: texts and files into a dataset's graph — blocking or in the
//! background — or into a session. One policy for every front end:
//!
//! - bad input (an unsupported file, a blank text, a zero chunk size) is
//!   refused before storage is touched;
//! - with a session id the texts become one turn of that session, bound to
//!   the dataset, and nothing is built;
//! - otherwise the items are added and cognified, and then, unless
//!   `self_improvement` is off, `improve` applies the dataset's answer
//!   ratings (as Cognee's `remember()` does). An improve that fails never
//!   fails the remember: it is reported beside it;
//! - in the background the dataset is resolved (and created) first, so a
//!   refusal is still immediate; the run and its improve are then tracked
//!   by [`BackgroundWork`](super::BackgroundWork).

use recall_core::{Dataset, DatasetRef, RecallError, Result, User};
use recall_engine::{ImproveOutcome, NoProgress, RememberInput, RememberOutcome, RememberProgress};

use super::Application;

/// What to remember, and how.
#[derive(Debug, Clone)]
pub struct RememberRequest {
    /// A name is the caller's own dataset (created when missing); an id is
    /// any dataset the caller may write to.
    pub dataset: DatasetRef,
    pub inputs: Vec<RememberInput>,
    /// Store the texts as one turn of this session instead of building them.
    pub session_id: Option<String>,
    /// Return once the dataset is resolved; the run goes on in the background.
    pub background: bool,
    /// Run `improve` after the build (default on).
    pub self_improvement: bool,
    /// This request's chunk budget in words (default: the configured one).
    pub chunk_size: Option<usize>,
}

impl RememberRequest {
    /// A blocking remember into `dataset`, followed by an improve.
    pub fn new(dataset: impl Into<DatasetRef>, inputs: Vec<RememberInput>) -> Self {
        Self {
            dataset: dataset.into(),
            inputs,
            session_id: None,
            background: false,
            self_improvement: true,
            chunk_size: None,
        }
    }

    /// What can be refused before storage is opened: nothing to remember,
    /// an unsupported or unreadable file, a blank text, a zero chunk size.
    /// (It reads every file: a front end that opens storage lazily calls it
    /// first; [`Application::remember`] leaves the reading to the engine,
    /// which reads every input before it writes anything.)
    pub fn check(&self) -> Result<()> {
        self.check_shape()?;
        recall_engine::check_inputs(&self.inputs)
    }

    /// The checks that read nothing.
    fn check_shape(&self) -> Result<()> {
        if self.inputs.is_empty() {
            return Err(RecallError::invalid_input("Nothing to remember: pass at least one text or file."));
        }
        if self.chunk_size == Some(0) {
            return Err(RecallError::invalid_input("chunk_size must be positive"));
        }
        Ok(())
    }
}

/// The improve that followed a remember.
#[derive(Debug)]
pub enum Improvement {
    Done(Box<ImproveOutcome>),
    Failed(RecallError),
}

/// What a remember did.
#[derive(Debug)]
pub enum RememberReport {
    /// Built into the graph (then improved, unless switched off).
    Completed { outcome: RememberOutcome, improvement: Option<Improvement> },
    /// Running in the background.
    Running { dataset: Dataset },
    /// Stored as one turn of a session.
    SessionStored { dataset: Dataset, session_id: String, texts: usize },
}

impl Application {
    /// Runs a remember for `caller`; `progress` hears the add and cognify
    /// stages of a blocking run.
    pub async fn remember(
        &self,
        caller: &User,
        request: RememberRequest,
        progress: &dyn RememberProgress,
    ) -> Result<RememberReport> {
        request.check_shape()?;
        let RememberRequest { dataset, inputs, session_id, background, self_improvement, chunk_size } = request;
        let engine = match chunk_size {
            Some(words) => self.engine.with_chunk_size(words)?,
            None => self.engine.clone(),
        };
        if let Some(session_id) = session_id {
            let dataset = engine.remember_in_session(caller, &dataset, &session_id, &inputs).await?;
            return Ok(RememberReport::SessionStored { dataset, session_id, texts: inputs.len() });
        }
        if background {
            // The engine would refuse bad input only once the run has started.
            recall_engine::check_inputs(&inputs)?;
            let dataset = engine.access().writable(caller, &dataset).await?;
            let (user, target) = (caller.clone(), DatasetRef::Id(dataset.id));
            self.background.spawn(caller, &dataset.name, "remember", async move {
                engine.remember(&user, target.clone(), &inputs).await?;
                if self_improvement {
                    if let Err(e) = engine.improve(&user, &target, None).await {
                        tracing::warn!(error = %e, "improve after a background remember failed");
                    }
                }
                Ok(())
            });
            return Ok(RememberReport::Running { dataset });
        }
        let outcome = engine.remember_with_progress(caller, dataset, &inputs, progress).await?;
        let improvement = match self_improvement {
            false => None,
            true => Some(match engine.improve(caller, &DatasetRef::Id(outcome.dataset_id), None).await {
                Ok(improved) => Improvement::Done(Box::new(improved)),
                Err(e) => Improvement::Failed(e),
            }),
        };
        Ok(RememberReport::Completed { outcome, improvement })
    }

    /// [`Application::remember`] with no progress report.
    pub async fn remember_quietly(&self, caller: &User, request: RememberRequest) -> Result<RememberReport> {
        self.remember(caller, request, &NoProgress).await
    }
}
