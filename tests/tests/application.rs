#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The application layer's policies (docs/application.md), in process: what
//! runs after a remember, in the background or not, into a session or the
//! graph, and what forget removes. The front ends only parse and render;
//! app/tests/front_ends.rs checks that the three of them agree.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::me;
use recall_api::{Application, ForgetReport, ForgetRequest, Improvement, RememberReport, RememberRequest};
use recall_core::session::SessionMemory;
use recall_core::{DatasetId, DatasetRef, SearchType};
use recall_engine::{Engine, RecallRequest, RememberInput};
use recall_sessions::Sessions;
use serde_json::Value;

const FACTS: &str = "Alice founded Acme. Bob joined Acme. Acme builds rockets. Carol founded Zenith.";

async fn application() -> (Application, Engine, Arc<Sessions>) {
    let (engine, sessions) = common::engine_with_sessions().await;
    (Application::new(engine.clone(), common::accounts(&engine)), engine, sessions)
}

fn rated(improvement: &Option<Improvement>) -> Value {
    match improvement {
        Some(Improvement::Done(outcome)) => outcome.stages[0].counts["rated"].clone(),
        other => panic!("no improve outcome: {other:?}"),
    }
}

#[tokio::test]
async fn a_remember_applies_pending_ratings_unless_self_improvement_is_off() {
    let (app, engine, sessions) = application().await;
    let user = me(&engine).await;
    let report = app.remember_quietly(&user, RememberRequest::new("people", vec![RememberInput::text(FACTS)])).await;
    let RememberReport::Completed { outcome, improvement } = report.unwrap() else { panic!("not completed") };
    assert!(outcome.chunks_written > 0);
    assert_eq!(rated(&improvement), 0, "nothing rated yet");

    // A rated answer: the next remember's improve applies it, once.
    let question = RecallRequest::new("Who founded Acme?").query_type(SearchType::GraphCompletion).session_id("chat");
    app.recall(&user, &question).await.unwrap();
    let turns = sessions.qa_entries(&user, "chat", None).await.unwrap();
    assert!(sessions.add_feedback(&user, "chat", &turns[0].qa_id, None, Some(5)).await.unwrap());

    let mut quiet = RememberRequest::new("people", vec![RememberInput::text("Dave joined Zenith.")]);
    quiet.self_improvement = false;
    let RememberReport::Completed { improvement, .. } = app.remember_quietly(&user, quiet).await.unwrap() else {
        panic!("not completed")
    };
    assert!(improvement.is_none(), "self_improvement off: no improve");

    let more = RememberRequest::new("people", vec![RememberInput::text("Zenith builds satellites.")]);
    let RememberReport::Completed { improvement, .. } = app.remember_quietly(&user, more).await.unwrap() else {
        panic!("not completed")
    };
    assert_eq!(rated(&improvement), 1, "the rating left pending by the quiet remember is applied now");
    let again = app.remember_quietly(&user, RememberRequest::new("people", vec![RememberInput::text("Eve.")])).await;
    let RememberReport::Completed { improvement, .. } = again.unwrap() else { panic!("not completed") };
    assert_eq!(rated(&improvement), 0, "a rating is applied once");
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_is_written() {
    let (app, engine, _) = application().await;
    let user = me(&engine).await;
    let empty = app.remember_quietly(&user, RememberRequest::new("notes", Vec::new())).await.unwrap_err();
    assert_eq!(empty.http_status(), 400);
    let blank = app.remember_quietly(&user, RememberRequest::new("notes", vec![RememberInput::text("  ")])).await;
    assert_eq!(blank.unwrap_err().http_status(), 400);
    let mut zero = RememberRequest::new("notes", vec![RememberInput::text("Bees dance.")]);
    zero.chunk_size = Some(0);
    assert!(zero.check().is_err());
    assert!(app.remember_quietly(&user, zero).await.is_err());
    let unsupported = RememberRequest::new("notes", vec![RememberInput::File("/etc/hostname.pdf".into())]);
    assert!(unsupported.check().is_err());
    assert!(app.datasets(&user).await.unwrap().is_empty(), "no dataset was created");
}

#[tokio::test]
async fn a_background_remember_checks_the_dataset_first_then_builds_and_is_waited_for() {
    let (app, engine, _) = application().await;
    let user = me(&engine).await;
    let mut request = RememberRequest::new("later", vec![RememberInput::text(FACTS)]);
    request.background = true;
    let RememberReport::Running { dataset } = app.remember_quietly(&user, request).await.unwrap() else {
        panic!("not running")
    };
    assert_eq!(dataset.name, "later", "the dataset exists before the build finishes");
    app.background().drain(Duration::from_secs(60)).await;
    assert!(!app.background().running_for(&user, &[]));
    assert!(app.background().errors_of(&user, "later").is_empty());
    let found = app.recall(&user, &RecallRequest::new("Who founded Acme?").query_type(SearchType::Chunks)).await;
    assert!(!found.unwrap().is_empty(), "the background build is searchable");

    // A dataset the caller may not write is refused at once, not in the background.
    let mut foreign = RememberRequest::new(DatasetId(uuid::Uuid::new_v4()), vec![RememberInput::text(FACTS)]);
    foreign.background = true;
    assert_eq!(app.remember_quietly(&user, foreign).await.unwrap_err().http_status(), 403);
}

#[tokio::test]
async fn a_session_remember_stores_one_turn_and_builds_nothing() {
    let (app, engine, sessions) = application().await;
    let user = me(&engine).await;
    let mut request =
        RememberRequest::new("chat-notes", vec![RememberInput::text("Call me Sam."), RememberInput::text("Hi.")]);
    request.session_id = Some("s1".into());
    let RememberReport::SessionStored { dataset, session_id, texts } =
        app.remember_quietly(&user, request).await.unwrap()
    else {
        panic!("not stored in the session")
    };
    assert_eq!((dataset.name.as_str(), session_id.as_str(), texts), ("chat-notes", "s1", 2));
    let turns = sessions.qa_entries(&user, "s1", None).await.unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].answer, "Call me Sam.\n\nHi.");
    let graph = app.dataset_graph(&user, &DatasetRef::Id(dataset.id)).await.unwrap().1;
    assert!(graph.nodes.is_empty(), "nothing was built");
}

#[tokio::test]
async fn forget_removes_a_document_a_dataset_or_everything() {
    let (app, engine, _) = application().await;
    let user = me(&engine).await;
    for (dataset, text) in [("a", FACTS), ("a", "Bees dance."), ("b", "Owls hoot.")] {
        let mut request = RememberRequest::new(dataset, vec![RememberInput::Text { text: text.into(), name: None }]);
        request.self_improvement = false;
        app.remember_quietly(&user, request).await.unwrap();
    }
    let a = app.dataset(&user, &"a".into()).await.unwrap();
    let first = app.dataset_data(&user, a.id, 10, 0).await.unwrap().remove(0);
    let document = ForgetRequest::Document { dataset: DatasetRef::Name("a".into()), document: first.id.to_string() };
    let ForgetReport::Document { dataset, outcome } = app.forget(&user, document).await.unwrap() else {
        panic!("not a document")
    };
    assert_eq!((dataset.name.as_str(), outcome.dataset_name.as_str()), ("a", "a"));
    assert!(outcome.nodes_deleted > 0);

    let stranger = engine.relational().users.ensure_user("stranger@example.com").await.unwrap();
    let refused = app.forget(&stranger, ForgetRequest::Dataset(DatasetRef::Id(dataset.id))).await.unwrap_err();
    assert_eq!(refused.http_status(), 403);
    let ForgetReport::Dataset(gone) = app.forget(&user, ForgetRequest::Dataset("a".into())).await.unwrap() else {
        panic!("not a dataset")
    };
    assert_eq!(gone.id, dataset.id);
    let ForgetReport::Everything { datasets_removed } = app.forget(&user, ForgetRequest::Everything).await.unwrap()
    else {
        panic!("not everything")
    };
    assert_eq!(datasets_removed, 1);
    assert!(app.datasets(&user).await.unwrap().is_empty());
}
