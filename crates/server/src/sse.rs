//! Server-Sent Events for `POST /api/v1/recall` (docs/http.md, "Streaming"):
//! negotiation by `stream` and the Accept header's q-values, and the relay
//! from a recall's events to frames. The status is decided before the
//! first frame: a recall that fails before any event is a real HTTP error.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use recall_api::{stream_error_frame, Route};
use recall_api::{Application, RecallRequest};
use recall_core::events::{RecallEvent, RecallEvents, Stage};
use recall_core::{RecallResponse, Result, User};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::error::{ApiError, ApiResult};

/// Events queued for a slow client before preview frames are dropped.
const QUEUE: usize = 2048;

/// Whether to answer with an event stream: `stream` decides outright;
/// otherwise only when the Accept header prefers `text/event-stream` to
/// `application/json` (RFC 7231 specificity; a tie goes to JSON).
pub fn wants_event_stream(accept: Option<&str>, stream: Option<bool>) -> bool {
    if let Some(stream) = stream {
        return stream;
    }
    let Some(accept) = accept else { return false };
    let entries: Vec<(String, f32)> = accept.split(',').filter_map(entry).collect();
    if !entries.iter().any(|(media, _)| media == "text/event-stream") {
        return false;
    }
    let sse = q_value(&entries, "text/event-stream");
    sse > 0.0 && sse > q_value(&entries, "application/json")
}

fn entry(raw: &str) -> Option<(String, f32)> {
    let mut parts = raw.split(';');
    let media = parts.next()?.trim().to_ascii_lowercase();
    if media.is_empty() {
        return None;
    }
    let mut q = 1.0;
    for param in parts {
        if let Some((k, v)) = param.split_once('=') {
            if k.trim().eq_ignore_ascii_case("q") {
                q = v.trim().parse::<f32>().ok().filter(|q| q.is_finite()).unwrap_or(0.0);
            }
        }
    }
    Some((media, q))
}

/// The q-value of `target`: the most specific tier with an entry (exact,
/// then `type/*`, then `*/*`), the highest q within it.
fn q_value(entries: &[(String, f32)], target: &str) -> f32 {
    let wildcard = format!("{}/*", target.split('/').next().unwrap_or_default());
    [target, wildcard.as_str(), "*/*"]
        .iter()
        .map(|tier| {
            entries
                .iter()
                .filter(|(m, _)| m == tier)
                .map(|(_, q)| *q)
                .fold(None, |a: Option<f32>, q| Some(a.map_or(q, |a| a.max(q))))
        })
        .find_map(|q| q)
        .unwrap_or(0.0)
}

/// Queues a recall's events for the relay; never blocks the recall.
struct Sink {
    tx: mpsc::Sender<RecallEvent>,
    deltas: bool,
    dropped: AtomicBool,
}

impl RecallEvents for Sink {
    fn wants_deltas(&self) -> bool {
        self.deltas
    }

    fn emit(&self, event: RecallEvent) {
        // Timings are for --explain; the final payload comes from the result.
        if matches!(event, RecallEvent::Timing { .. } | RecallEvent::Final { .. }) {
            return;
        }
        if self.tx.try_send(event).is_err() {
            self.dropped.store(true, Ordering::Relaxed);
        }
    }
}

fn frame(event: &str, data: &Value) -> Event {
    Event::default().event(event).data(data.to_string())
}

/// Runs the recall and answers with an event stream, or with the real
/// error when it fails before its first event. A client that goes away
/// does not cancel the recall.
pub async fn recall_stream(app: Application, user: User, request: RecallRequest, deltas: bool) -> ApiResult<Response> {
    let (tx, mut events) = mpsc::channel(QUEUE);
    let sink = Arc::new(Sink { tx, deltas, dropped: AtomicBool::new(false) });
    let recall_sink: Arc<dyn RecallEvents> = sink.clone();
    let mut task = tokio::spawn(async move { app.recall_with_events(&user, &request, recall_sink).await });

    // The status waits for the recall's first event past retrieval (an
    // answer starting to stream) or its end: a failure while datasets are
    // resolved and searched is still a real HTTP error.
    let (first, finished) = loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(RecallEvent::Stage { stage: Stage::Retrieving }) => continue,
                event => break (event, None),
            },
            done = &mut task => match (next_past_retrieval(&mut events), joined(done)) {
                (None, Err(error)) => return Err(ApiError::Engine { error, route: Route::Recall }),
                (first, result) => break (first, Some(result)),
            },
        }
    };
    let (frames, frames_rx) = mpsc::channel::<Event>(QUEUE);
    tokio::spawn(async move {
        let mut relay = Relay { frames, last_stage: None };
        relay.send(&RecallEvent::Stage { stage: Stage::Retrieving }).await;
        let mut pending = first;
        let result = match finished {
            Some(result) => result,
            None => loop {
                if let Some(event) = pending.take() {
                    relay.send(&event).await;
                }
                tokio::select! {
                    event = events.recv() => match event {
                        Some(event) => pending = Some(event),
                        None => break joined((&mut task).await),
                    },
                    done = &mut task => break joined(done),
                }
            },
        };
        if let Some(event) = pending {
            relay.send(&event).await;
        }
        while let Ok(event) = events.try_recv() {
            relay.send(&event).await;
        }
        if sink.dropped.load(Ordering::Relaxed) {
            relay.push(frame("reset", &json!({}))).await;
        }
        relay
            .push(match result {
                Ok(results) => frame("final", &json!({"results": results})),
                Err(e) => frame("error", &stream_error_frame(&e)),
            })
            .await;
    });
    Ok(respond(frames_rx))
}

/// The first queued event that is not the retrieving stage.
fn next_past_retrieval(events: &mut mpsc::Receiver<RecallEvent>) -> Option<RecallEvent> {
    std::iter::from_fn(|| events.try_recv().ok())
        .find(|e| !matches!(e, RecallEvent::Stage { stage: Stage::Retrieving }))
}

fn joined(
    done: std::result::Result<Result<Vec<RecallResponse>>, tokio::task::JoinError>,
) -> Result<Vec<RecallResponse>> {
    done.map_err(|e| recall_core::RecallError::backend_msg(format!("the recall task failed: {e}")))?
}

/// Turns events into frames for one client; a client that left is ignored.
struct Relay {
    frames: mpsc::Sender<Event>,
    last_stage: Option<Stage>,
}

impl Relay {
    async fn send(&mut self, event: &RecallEvent) {
        if let Some(f) = event_frame(event, &mut self.last_stage) {
            self.push(f).await;
        }
    }

    async fn push(&self, f: Event) {
        let _ = self.frames.send(f).await;
    }
}

fn event_frame(event: &RecallEvent, last_stage: &mut Option<Stage>) -> Option<Event> {
    match event {
        RecallEvent::Stage { stage } => {
            if *last_stage == Some(*stage) {
                return None;
            }
            *last_stage = Some(*stage);
            Some(frame("stage", &json!({"stage": stage})))
        }
        RecallEvent::Delta { text } => Some(frame("delta", &json!({"text": text}))),
        RecallEvent::Reset => Some(frame("reset", &json!({}))),
        RecallEvent::AnswerDone => Some(frame("answer_done", &json!({}))),
        RecallEvent::Timing { .. } | RecallEvent::Final { .. } => None,
    }
}

fn respond(frames: mpsc::Receiver<Event>) -> Response {
    let stream = futures::stream::unfold(frames, |mut rx| async move {
        rx.recv().await.map(|event| (Ok::<_, Infallible>(event), rx))
    });
    let sse = Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)).text("keepalive"));
    ([("x-accel-buffering", "no")], sse).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_the_spec_table() {
        let cases = [
            (None, false),
            (Some("*/*"), false),
            (Some("text/*"), false),
            (Some("text/event-stream"), true),
            (Some("application/json, text/event-stream"), false),
            (Some("application/json;q=0.5, text/event-stream"), true),
            (Some("text/event-stream;q=0, */*"), false),
            (Some("text/event-stream;q=0.9, application/*;q=0.8"), true),
            (Some("text/event-stream;q=abc"), false),
            (Some("TEXT/EVENT-STREAM"), true),
        ];
        for (accept, sse) in cases {
            assert_eq!(wants_event_stream(accept, None), sse, "{accept:?}");
        }
        assert!(wants_event_stream(Some("application/json"), Some(true)));
        assert!(!wants_event_stream(Some("text/event-stream"), Some(false)));
    }
}
