#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! recall() as an event stream, against a fake OpenAI-compatible server in
//! streaming mode (real HTTP, Server-Sent Events): the stage first, the
//! answer's tokens as deltas, a reset when the stream broke and was asked for
//! again, the final payload last, equal to the non-streamed answer.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use recall_core::ports::RelationalPorts;
use recall_core::{CollectEvents, RecallEvent, SearchType, Stage, User};
use recall_engine::extract::{ExtractiveSummarizer, RuleBasedExtractor};
use recall_engine::{Engine, EngineBuilder, RecallRequest, RememberInput, SearchRequest};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};
use recall_openai::{OpenAiChat, OpenAiConfig};
use serde_json::json;

mod common;

use common::fake_llm::{fake_llm, Seen, TOKENS};

async fn engine(seen: Arc<Seen>) -> (Engine, User) {
    let chat = OpenAiChat::new(OpenAiConfig::new(fake_llm(seen).await, "gpt-test", Some("sk".into()))).unwrap();
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        Arc::new(MemoryGraphStore::new()),
        Arc::new(MemoryVectorStore::new()),
        Arc::new(HashingEmbedder::new(64).unwrap()),
    )
    .llm(Some(Arc::new(chat)))
    .extractor(Arc::new(RuleBasedExtractor))
    .summarizer(Arc::new(ExtractiveSummarizer::default()))
    .build()
    .unwrap();
    let user = engine.relational().users.ensure_user("events@example.com").await.unwrap();
    engine
        .remember(&user, "bees", &[RememberInput::text("Honeybees share directions with the waggle dance.")])
        .await
        .unwrap();
    (engine, user)
}

/// The events without timings (those interleave wherever stages end).
fn story(events: &[RecallEvent]) -> Vec<RecallEvent> {
    events.iter().filter(|e| !matches!(e, RecallEvent::Timing { .. })).cloned().collect()
}

fn deltas(texts: &[&str]) -> Vec<RecallEvent> {
    texts.iter().map(|t| RecallEvent::Delta { text: (*t).to_string() }).collect()
}

#[tokio::test]
async fn a_streamed_recall_reports_stage_deltas_and_the_same_final_answer() {
    let seen = Arc::new(Seen::default());
    let (engine, user) = engine(seen.clone()).await;
    let request = RecallRequest::new("How do bees share directions?").query_type(SearchType::RagCompletion);

    let plain = engine.recall(&user, &request).await.unwrap();
    assert_eq!(seen.plain.load(Ordering::SeqCst), 1);
    assert_eq!(plain[0].text(), TOKENS.concat());

    let events = Arc::new(CollectEvents::with_deltas());
    let streamed = engine.recall_with_events(&user, &request, events.clone()).await.unwrap();
    assert_eq!(seen.streamed.load(Ordering::SeqCst), 1, "the answer went through the streaming call");
    assert_eq!(seen.plain.load(Ordering::SeqCst), 1, "and not through a second plain call");
    assert_eq!(streamed, plain, "the final payload equals the non-streamed answer");

    let all = events.events();
    let mut expected =
        vec![RecallEvent::Stage { stage: Stage::Retrieving }, RecallEvent::Stage { stage: Stage::Generating }];
    expected.extend(deltas(&TOKENS));
    expected.push(RecallEvent::AnswerDone);
    expected.push(RecallEvent::Final { results: plain.clone() });
    assert_eq!(story(&all), expected);
    let stages: Vec<&str> = all
        .iter()
        .filter_map(|e| match e {
            RecallEvent::Timing { stage, .. } => Some(stage.as_str()),
            _ => None,
        })
        .collect();
    assert!(stages.contains(&"search") && stages.contains(&"resolve_datasets"), "{stages:?}");

    // A listener that wants no deltas gets stages and the final payload only.
    let quiet = Arc::new(CollectEvents::default());
    engine.recall_with_events(&user, &request, quiet.clone()).await.unwrap();
    assert_eq!(
        story(&quiet.events()),
        vec![RecallEvent::Stage { stage: Stage::Retrieving }, RecallEvent::Final { results: plain.clone() }]
    );
    assert_eq!(seen.streamed.load(Ordering::SeqCst), 1);

    // --explain's timings come from the same events.
    let (_, explain) = engine.recall_explained(&user, &request).await.unwrap();
    assert!(explain.timings_ms.iter().any(|t| t.stage == "search"), "{:?}", explain.timings_ms);
}

#[tokio::test]
async fn a_broken_stream_is_reset_and_streamed_again() {
    let seen = Arc::new(Seen::default());
    seen.break_streams.store(1, Ordering::SeqCst);
    let (engine, user) = engine(seen.clone()).await;
    let request = RecallRequest::new("How do bees share directions?").query_type(SearchType::RagCompletion);
    let events = Arc::new(CollectEvents::with_deltas());
    let results = engine.recall_with_events(&user, &request, events.clone()).await.unwrap();
    assert_eq!(results[0].text(), TOKENS.concat());
    assert_eq!(seen.streamed.load(Ordering::SeqCst), 2);

    let mut expected = vec![
        RecallEvent::Stage { stage: Stage::Retrieving },
        RecallEvent::Stage { stage: Stage::Generating },
        RecallEvent::Delta { text: TOKENS[0].into() },
        RecallEvent::Reset,
    ];
    expected.extend(deltas(&TOKENS));
    expected.push(RecallEvent::AnswerDone);
    expected.push(RecallEvent::Final { results: results.clone() });
    assert_eq!(story(&events.events()), expected);

    // Two broken streams in a row: the recall fails with the provider's error.
    seen.break_streams.store(2, Ordering::SeqCst);
    let err = engine.recall_with_events(&user, &request, Arc::new(CollectEvents::with_deltas())).await.unwrap_err();
    assert_eq!(err.name(), "ProviderError", "{err}");
}

#[tokio::test]
async fn the_legacy_search_streams_too_and_structured_answers_do_not() {
    let seen = Arc::new(Seen::default());
    let (engine, user) = engine(seen.clone()).await;
    let events = Arc::new(CollectEvents::with_deltas());
    let out = engine
        .search_with_events(
            &user,
            &SearchRequest::new("How do bees share directions?").query_type(SearchType::RagCompletion),
            events.clone(),
        )
        .await
        .unwrap();
    let answer = out[0].completion.as_ref().and_then(|c| c.first()).and_then(|a| a.as_str()).unwrap_or_default();
    assert_eq!(answer, TOKENS.concat());
    let story = story(&events.events());
    assert_eq!(story.first(), Some(&RecallEvent::Stage { stage: Stage::Retrieving }));
    assert!(story.contains(&RecallEvent::AnswerDone), "{story:?}");

    // A response schema needs the structured call: no deltas.
    let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
    let request = RecallRequest::new("How do bees share directions?")
        .query_type(SearchType::RagCompletion)
        .response_schema(schema);
    let events = Arc::new(CollectEvents::with_deltas());
    let _ = engine.recall_with_events(&user, &request, events.clone()).await;
    assert!(!events.events().iter().any(|e| matches!(e, RecallEvent::Delta { .. })));
}
