//! What `recall()` and `search()` report while they run (docs/recall.md,
//! "Events"): the stage, answer tokens as they arrive, a reset when the
//! answer call is retried, per-stage timings, and the final payload. A front
//! end streams them (Server-Sent Events), `--explain` collects the timings;
//! a caller that listens to nothing pays nothing.

use serde::Serialize;

use crate::RecallResponse;

/// A stage of one recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Always first: datasets are resolved and searched.
    Retrieving,
    /// A streamed answer call began.
    Generating,
}

/// One event of a recall, in the order they happen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RecallEvent {
    Stage {
        stage: Stage,
    },
    /// Answer tokens (only when the listener asks for them).
    Delta {
        text: String,
    },
    /// The answer call was retried and streams again from the start:
    /// discard the deltas received so far.
    Reset,
    /// The last answer token arrived.
    AnswerDone,
    /// A stage's wall time (what `--explain` prints).
    Timing {
        stage: String,
        ms: f64,
    },
    /// The authoritative result, always last on success. Render it over any
    /// streamed text, never append to it.
    Final {
        results: Vec<RecallResponse>,
    },
}

/// Receives a recall's events. Called from the recall's tasks: keep it cheap
/// and non-blocking (queue, don't write to a socket here).
pub trait RecallEvents: Send + Sync {
    /// Whether anything is listening: events are not even built otherwise.
    fn listening(&self) -> bool {
        true
    }

    /// Whether answers should stream as `Delta` events (an answer is then
    /// generated through `LlmClient::stream`).
    fn wants_deltas(&self) -> bool {
        false
    }

    fn emit(&self, event: RecallEvent);
}

impl RecallEvent {
    /// A stage's wall time.
    pub fn timing(stage: impl Into<String>, elapsed: std::time::Duration) -> Self {
        RecallEvent::Timing { stage: stage.into(), ms: elapsed.as_secs_f64() * 1e3 }
    }
}

impl dyn RecallEvents + '_ {
    /// Emits the event `build` makes, building it only when someone listens.
    pub fn report(&self, build: impl FnOnce() -> RecallEvent) {
        if self.listening() {
            self.emit(build());
        }
    }
}

/// Listens to nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl RecallEvents for NoEvents {
    fn listening(&self) -> bool {
        false
    }

    fn emit(&self, _event: RecallEvent) {}
}

/// Collects every event in order (tests, `--explain`).
#[derive(Debug, Default)]
pub struct CollectEvents {
    events: std::sync::Mutex<Vec<RecallEvent>>,
    deltas: bool,
}

impl CollectEvents {
    /// A collector that also asks for answer deltas.
    pub fn with_deltas() -> Self {
        Self { events: Default::default(), deltas: true }
    }

    /// The events so far.
    pub fn events(&self) -> Vec<RecallEvent> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl RecallEvents for CollectEvents {
    fn wants_deltas(&self) -> bool {
        self.deltas
    }

    fn emit(&self, event: RecallEvent) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
    }
}
