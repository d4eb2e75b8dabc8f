#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Feedback that changes ranking, end to end (docs/sessions.md): a
//! completion records the triplets its answer used; rating the answer and
//! running improve moves those elements' weights, and a recall with
//! `feedback_influence` ranks them accordingly.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::me;
use recall_core::session::SessionMemory;
use recall_core::{DatasetRef, SearchType, User};
use recall_engine::{Engine, RecallRequest, RememberInput, SearchRequest};
use recall_sessions::Sessions;
use serde_json::Value;

const FACTS: &str = "Alice founded Acme. Bob joined Acme. Acme builds rockets. Carol founded Zenith. \
Zenith builds satellites. Dave joined Zenith. Alice mentors Dave. Bob admires Carol.";

async fn engine() -> (Engine, Arc<Sessions>) {
    let (engine, sessions) = common::engine_with_sessions().await;
    engine.remember(&me(&engine).await, "people", &[RememberInput::text(FACTS)]).await.unwrap();
    (engine, sessions)
}

/// Each retrieved triplet's score (lower ranks higher), keyed by its edge.
async fn triplet_scores(engine: &Engine, user: &User, query: &str, influence: f64) -> HashMap<String, f64> {
    let mut request = SearchRequest::new(query).query_type(SearchType::GraphCompletion);
    request.options.only_context = true;
    request.options.top_k = Some(50);
    request.options.feedback_influence = influence;
    let payloads = engine.search(user, &request).await.unwrap();
    payloads[0]
        .objects
        .iter()
        .map(|t| {
            let key = format!(
                "{}|{}|{}",
                t["edge"]["source_node_id"], t["edge"]["relationship_name"], t["edge"]["target_node_id"]
            );
            (key, t["score"].as_f64().unwrap())
        })
        .collect()
}

fn used_edges(engine_objects: &Value) -> Vec<String> {
    engine_objects["edge_ids"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn a_well_rated_answer_lifts_the_triplets_it_used() {
    let (engine, sessions) = engine().await;
    let user = me(&engine).await;
    let question = "Who founded Acme?";
    let before = triplet_scores(&engine, &user, question, 0.5).await;
    let plain = triplet_scores(&engine, &user, question, 0.0).await;
    assert!(!before.is_empty());

    // A completion in a session records what it used; only_context and CHUNKS record nothing.
    let request = RecallRequest::new(question).query_type(SearchType::GraphCompletion).session_id("chat").top_k(3);
    engine.recall(&user, &request).await.unwrap();
    let turns = sessions.qa_entries(&user, "chat", None).await.unwrap();
    assert_eq!(turns.len(), 1);
    let used = turns[0].used_graph_element_ids.clone().expect("the answer's triplets are recorded");
    assert_eq!(used_edges(&used).len(), 3, "top_k 3: three triplets used: {used}");

    // Nothing moves before a rating; a rating moves nothing before improve.
    let people = DatasetRef::Name("people".into());
    let outcome = engine.improve(&user, &people, None).await.unwrap();
    assert_eq!(outcome.stages[0].counts["rated"], 0);
    assert!(sessions.add_feedback(&user, "chat", &turns[0].qa_id, Some("exactly".into()), Some(5)).await.unwrap());
    assert_eq!(triplet_scores(&engine, &user, question, 0.5).await, before);

    let outcome = engine.improve(&user, &people, None).await.unwrap();
    assert_eq!((outcome.status.as_str(), &outcome.stages[0].counts["rated"]), ("completed", &Value::from(1)));
    assert_eq!(outcome.stages[0].counts["edges"], 3);
    let after = triplet_scores(&engine, &user, question, 0.5).await;
    let mut lifted = 0;
    for (edge, score) in &after {
        let was = before[edge];
        if (score - was).abs() < 1e-9 {
            continue;
        }
        assert!(*score < was, "a rated 5 element only ever ranks higher: {edge} {was} -> {score}");
        lifted += 1;
    }
    assert!(lifted >= 3, "the three used triplets moved: {lifted}");
    // Without feedback influence the ranking is what it was.
    assert_eq!(triplet_scores(&engine, &user, question, 0.0).await, plain);

    // Applied once: a second improve moves nothing until a new rating.
    let again = engine.improve(&user, &people, None).await.unwrap();
    assert_eq!(again.stages[0].counts["rated"], 0);
    assert_eq!(triplet_scores(&engine, &user, question, 0.5).await, after);

    // A poor rating pushes them back down.
    sessions.add_feedback(&user, "chat", &turns[0].qa_id, None, Some(1)).await.unwrap();
    engine.improve(&user, &people, None).await.unwrap();
    let lowered = triplet_scores(&engine, &user, question, 0.5).await;
    assert!(lowered.iter().any(|(edge, score)| *score > after[edge]), "a rating of 1 lowers what it rated");

    // Bad alpha; no write permission.
    assert_eq!(engine.improve(&user, &people, Some(1.5)).await.unwrap_err().name(), "ImproveValidationError");
    let stranger = engine.relational().users.ensure_user("stranger@example.com").await.unwrap();
    let err = engine.improve(&stranger, &people, None).await.unwrap_err();
    assert_eq!(err.http_status(), 404, "a name resolves among the caller's own datasets");
}
