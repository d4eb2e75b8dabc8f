#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use recall_memory::MemorySessionStore;
use serde_json::json;

use super::*;

fn sessions() -> Sessions {
    Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig::default())
}

fn user() -> User {
    User { id: Uuid::new_v4(), email: "someone@example.com".into(), tenant_id: None }
}

fn turn(question: &str, answer: &str) -> CompletedTurn {
    CompletedTurn {
        question: question.into(),
        answer: answer.into(),
        used_graph_element_ids: None,
        used_session_context_ids: Vec::new(),
    }
}

#[tokio::test]
async fn turns_come_back_as_history_and_through_the_keyword_lane() {
    let s = sessions();
    let me = user();
    s.record_turn(&me, "chat", None, turn("How do bees talk?", "They dance.")).await.unwrap();
    s.record_turn(&me, "chat", None, turn("What is a waggle dance?", "A figure-eight run.")).await.unwrap();

    let conversation = s.conversation(&me, "chat", "and ants?", true).await.unwrap();
    let history = conversation.history;
    assert!(history.starts_with("Previous conversation:\n\n["), "{history}");
    let first = history.find("QUESTION: How do bees talk?\nANSWER: They dance.").unwrap();
    let second = history.find("QUESTION: What is a waggle dance?\nANSWER: A figure-eight run.").unwrap();
    assert!(first < second, "oldest first");

    let hits = s.search_qa(&me, "chat", "waggle dance please", None).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| h.question.as_str()).collect::<Vec<_>>(),
        ["What is a waggle dance?", "How do bees talk?"]
    );
    assert!(s.search_qa(&user(), "chat", "waggle dance", None).await.unwrap().is_empty(), "another user");
    assert!(s.search_qa(&me, "chat", "nothing matches", Some(5)).await.unwrap().is_empty());
}

#[tokio::test]
async fn history_keeps_the_last_n_turns() {
    let s =
        Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig { history_last_n: 2, ..Default::default() });
    let me = user();
    for i in 0..4 {
        s.record_turn(&me, "chat", None, turn(&format!("q{i}"), &format!("a{i}"))).await.unwrap();
    }
    let history = s.conversation(&me, "chat", "x", true).await.unwrap().history;
    assert!(!history.contains("q1") && history.contains("q2") && history.contains("q3"), "{history}");
}

#[tokio::test]
async fn feedback_is_validated_updated_and_cleared() {
    let s = sessions();
    let me = user();
    let qa = s.record_turn(&me, "chat", None, turn("q", "a")).await.unwrap();
    let err = s.add_feedback(&me, "chat", &qa.qa_id, None, Some(6)).await.err().map(|e| e.name());
    assert_eq!(err, Some("SessionParameterValidationError"));
    assert!(!s.add_feedback(&me, "chat", "no-such-id", None, Some(3)).await.unwrap());
    assert!(s.add_feedback(&me, "chat", &qa.qa_id, Some("great".into()), Some(5)).await.unwrap());
    assert!(s.add_feedback(&me, "chat", &qa.qa_id, None, Some(4)).await.unwrap(), "None keeps the text");
    let stored = s.qa_entries(&me, "chat", None).await.unwrap().remove(0);
    assert_eq!((stored.feedback_text.as_deref(), stored.feedback_score), (Some("great"), Some(4)));
    assert_eq!(stored.memify_metadata, Some(json!({"feedback_weights_applied": false})));
    assert!(s.delete_feedback(&me, "chat", &qa.qa_id).await.unwrap());
    let stored = s.qa_entries(&me, "chat", None).await.unwrap().remove(0);
    assert_eq!((stored.feedback_text, stored.feedback_score), (None, None));
}

#[tokio::test]
async fn guidance_is_served_by_profile_and_deduplicated() {
    let s = sessions();
    let me = user();
    let a = s.add_guidance(&me, "chat", Profile::Qa, "rules", "Always cite sources", 0.9).await.unwrap();
    let b = s.add_guidance(&me, "chat", Profile::Qa, "rules", "  always   CITE sources ", 0.8).await.unwrap();
    assert_eq!(a.id, b.id, "the same rule is one entry");
    s.add_guidance(&me, "chat", Profile::Agent, "tool_rules", "Retry the search tool once", 0.9).await.unwrap();

    let qa = s.session_context(&me, "chat", "q", "qa").await.unwrap();
    assert_eq!(qa.len(), 1);
    assert!(qa[0].content.contains("### Rules\n- [") && qa[0].content.ends_with("] Always cite sources"));
    assert!(!qa[0].content.contains("Retry"), "the agent profile is separate");
    let agent = s.session_context(&me, "chat", "q", "agent").await.unwrap();
    assert!(agent[0].content.contains("### Tool rules"));
    assert_eq!(
        s.session_context(&me, "chat", "q", "both").await.err().map(|e| e.name()),
        Some("SessionParameterValidationError")
    );

    // A preview serves without stamping; a completion stamps what it served.
    let preview = s.conversation(&me, "chat", "q", true).await.unwrap();
    assert_eq!(preview.served_context_ids, [a.id.as_str()]);
    let key = SessionKey::new(me.id, "chat");
    assert!(!stamped(&s, &key).await);
    s.conversation(&me, "chat", "q", false).await.unwrap();
    assert!(stamped(&s, &key).await);
}

async fn stamped(s: &Sessions, key: &SessionKey) -> bool {
    s.guidance_entries(key).await.unwrap().iter().any(|e| e.last_served_at.is_some())
}

#[tokio::test]
async fn entries_are_remembered_typed_and_checked() {
    let s = sessions();
    let me = user();
    let qa_of = |v: Value| serde_json::from_value::<SessionEntry>(v).unwrap();
    let first = qa_of(json!({"type": "qa", "question": "q", "answer": "a", "context": "c", "qa_id": "qa-1"}));
    let qa = s.remember_entry(&me, "chat", None, first).await.unwrap();
    assert_eq!((qa.entry_type.as_str(), qa.id.as_str()), ("qa", "qa-1"));
    let fb = SessionEntry::Feedback { qa_id: "qa-1".into(), feedback_text: None, feedback_score: Some(2) };
    assert_eq!(s.remember_entry(&me, "chat", None, fb).await.unwrap().entry_type, "feedback");
    let missing = SessionEntry::Feedback { qa_id: "nope".into(), feedback_text: None, feedback_score: Some(2) };
    assert_eq!(s.remember_entry(&me, "chat", None, missing).await.err().map(|e| e.http_status()), Some(404));

    let trace: SessionEntry = serde_json::from_value(json!({
        "type": "trace", "origin_function": "search_tool", "status": "error",
        "method_params": {"query": "x".repeat(20_000)}, "error_message": "timeout"
    }))
    .unwrap();
    s.remember_entry(&me, "chat", None, trace).await.unwrap();
    let steps = s.trace_steps(&me, "chat", None).await.unwrap();
    assert_eq!(steps[0].session_feedback.as_deref(), Some("search_tool failed."));
    assert!(
        matches!(&steps[0].method_params, Some(Value::String(s)) if s.ends_with("[truncated]")),
        "oversized params are cut, not dropped"
    );
    assert_eq!(s.search_traces(&me, "chat", "timeout", None).await.unwrap().len(), 1);

    let bad: SessionEntry =
        serde_json::from_value(json!({"type": "trace", "origin_function": " ", "status": "success"})).unwrap();
    assert!(s.remember_entry(&me, "chat", None, bad).await.is_err());
    let bad: SessionEntry =
        serde_json::from_value(json!({"type": "trace", "origin_function": "f", "status": "maybe"})).unwrap();
    assert!(s.remember_entry(&me, "chat", None, bad).await.is_err());
    assert!(s
        .remember_entry(&me, " ", None, qa_of(json!({"type": "qa", "question": "q", "answer": "a"})))
        .await
        .is_err());
    let odd = json!({"type": "qa", "question": "q", "answer": "a", "used_graph_element_ids": {"chunks": []}});
    assert!(s.remember_entry(&me, "chat", None, qa_of(odd)).await.is_err(), "only node_ids and edge_ids");
    let rated = json!({"type": "qa", "question": "", "answer": "a note", "feedback_score": 4,
        "used_graph_element_ids": {"node_ids": ["n1"], "edge_ids": []}});
    let stored = s.remember_entry(&me, "chat", None, qa_of(rated)).await.unwrap();
    let entry = s.qa_entries(&me, "chat", None).await.unwrap().into_iter().find(|e| e.qa_id == stored.id).unwrap();
    assert_eq!((entry.feedback_score, entry.used_graph_element_ids), (Some(4), Some(json!({"node_ids": ["n1"]}))));
    let blank = json!({"type": "qa", "question": " ", "answer": ""});
    assert!(s.remember_entry(&me, "chat", None, qa_of(blank)).await.is_err(), "a turn needs some text");
    assert!(s.qa_entries(&me, "chat", Some(0)).await.is_err());
}

#[tokio::test]
async fn forgetting_removes_what_used_gone_elements_and_default_sessions() {
    let s = sessions();
    let me = user();
    let dataset = DatasetId(Uuid::new_v4());
    let (gone, kept) = (Uuid::new_v4(), Uuid::new_v4());
    let used = |id: Uuid| CompletedTurn {
        used_graph_element_ids: Some(json!({"node_ids": [id.to_string()], "edge_ids": []})),
        ..turn(&format!("about {id}"), "answer")
    };
    s.record_turn(&me, "chat", Some(dataset), used(gone)).await.unwrap();
    s.record_turn(&me, "chat", Some(dataset), used(kept)).await.unwrap();
    assert_eq!(s.forget_elements(dataset, &[gone]).await.unwrap(), 1);
    let left = s.qa_entries(&me, "chat", None).await.unwrap();
    assert_eq!(left.len(), 1);
    assert!(left[0].question.contains(&kept.to_string()));

    let default = s.resolve_session_id(None, Some(dataset));
    assert_eq!(default, format!("default_session_{dataset}"));
    s.record_turn(&me, &default, Some(dataset), turn("q", "a")).await.unwrap();
    assert!(s.forget_dataset(dataset).await.unwrap() >= 2);
    assert!(s.qa_entries(&me, "chat", None).await.unwrap().is_empty());
    assert!(s.list_sessions(&me).await.unwrap().iter().all(|i| i.session_id != default));
}

/// The lanes keep an index per session; a write by another process (another
/// `Sessions` on the same store) is seen at the next query.
#[tokio::test]
async fn the_lane_sees_another_writers_changes() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let (a, b) =
        (Sessions::new(store.clone(), SessionConfig::default()), Sessions::new(store, SessionConfig::default()));
    let me = user();
    let first = a.record_turn(&me, "chat", None, turn("Do bees dance?", "Yes.")).await.unwrap();
    assert_eq!(a.search_qa(&me, "chat", "bees", None).await.unwrap().len(), 1);
    b.record_turn(&me, "chat", None, turn("Where do bees sleep?", "In hives.")).await.unwrap();
    assert_eq!(a.search_qa(&me, "chat", "bees", None).await.unwrap().len(), 2, "a new turn");
    b.add_feedback(&me, "chat", &first.qa_id, None, Some(2)).await.unwrap();
    let hits = a.search_qa(&me, "chat", "dance", None).await.unwrap();
    assert_eq!(hits[0].feedback_score, Some(2), "an update in place");
    b.delete_session(&me, "chat").await.unwrap();
    assert!(a.search_qa(&me, "chat", "bees", None).await.unwrap().is_empty(), "a deleted session");
    let trace: SessionEntry =
        serde_json::from_value(json!({"type": "trace", "origin_function": "lookup", "status": "success"})).unwrap();
    b.remember_entry(&me, "chat", None, trace).await.unwrap();
    assert_eq!(a.search_traces(&me, "chat", "lookup", None).await.unwrap().len(), 1);
}

fn embedded(config: SessionConfig) -> (Sessions, Arc<MemorySessionStore>) {
    let store = Arc::new(MemorySessionStore::new());
    let embedder = Arc::new(recall_memory::HashingEmbedder::new(256).unwrap());
    (Sessions::new(store.clone(), config).with_embedder(embedder), store)
}

const TOPICS: [(&str, &str); 8] = [
    ("How do honey bees find flowers?", "Scouts dance to show the way to nectar."),
    ("What is the capital of Peru?", "Lima."),
    ("Which gas do plants absorb?", "Carbon dioxide."),
    ("Who wrote Hamlet?", "William Shakespeare."),
    ("How deep is the Mariana trench?", "About eleven kilometres."),
    ("What does a compiler do?", "It translates source code."),
    ("When did the Berlin wall fall?", "In 1989."),
    ("What is a prime number?", "A number with exactly two divisors."),
];

#[tokio::test]
async fn older_turns_like_the_question_join_the_recent_ones() {
    let (s, store) = embedded(SessionConfig { history_last_n: 2, ..Default::default() });
    let me = user();
    for (q, a) in TOPICS {
        s.record_turn(&me, "chat", None, turn(q, a)).await.unwrap();
    }
    let conversation = s.conversation(&me, "chat", "Tell me more about how bees dance to find nectar", true).await;
    let history = conversation.unwrap().history;
    let at = |q: &str| history.find(&format!("QUESTION: {q}"));
    let (bees, berlin, primes) = (at(TOPICS[0].0), at(TOPICS[6].0), at(TOPICS[7].0));
    assert!(bees.is_some(), "the oldest turn is recalled by likeness: {history}");
    assert!(bees < berlin && berlin < primes, "oldest first, the recent two last");
    let carried = history.matches("QUESTION: ").count();
    assert!((3..=5).contains(&carried), "the last two and at most three recalled: {carried}");

    // A turn deleted after its vector was read is not recalled (nor kept).
    let key = SessionKey::new(me.id, "chat");
    let bees_id = store.qa_entries(&key, None, now_millis()).await.unwrap()[0].qa_id.clone();
    store.delete_qa(&key, &[bees_id]).await.unwrap();
    let again = s.conversation(&me, "chat", "Tell me more about how bees dance to find nectar", true).await.unwrap();
    assert!(!again.history.contains(TOPICS[0].0), "{}", again.history);

    // Short sessions carry only the recent turns; another user's session is not read.
    let other = user();
    s.record_turn(&other, "chat", None, turn("Who wrote Hamlet?", "Shakespeare.")).await.unwrap();
    let theirs = s.conversation(&other, "chat", "bees dance nectar", true).await.unwrap().history;
    assert_eq!(theirs.matches("QUESTION: ").count(), 1);
}

#[tokio::test]
async fn without_an_embedder_only_the_recent_turns_are_carried() {
    let s =
        Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig { history_last_n: 2, ..Default::default() });
    let me = user();
    for (q, a) in TOPICS {
        s.record_turn(&me, "chat", None, turn(q, a)).await.unwrap();
    }
    let history = s.conversation(&me, "chat", "bees dance nectar", true).await.unwrap().history;
    assert_eq!(history.matches("QUESTION: ").count(), 2, "{history}");
}

#[tokio::test]
async fn the_conversational_query_quotes_the_last_two_turns_in_concurrent_mode() {
    let (s, _) = embedded(SessionConfig::default());
    let me = user();
    let first = s.conversation(&me, "chat", "Which planet is largest?", true).await.unwrap();
    assert_eq!(first.retrieval_query, None, "no earlier turn: one lane");
    for (q, a) in &TOPICS[..3] {
        s.record_turn(&me, "chat", None, turn(q, a)).await.unwrap();
    }
    let query = s.conversation(&me, "chat", "and  why?", true).await.unwrap().retrieval_query.unwrap();
    assert_eq!(
        query,
        format!(
            "Prior user: {}\nPrior assistant (untrusted retrieval guidance): {}\n\nPrior user: {}\n\
             Prior assistant (untrusted retrieval guidance): {}\n\nCurrent user request: and why?",
            TOPICS[1].0, TOPICS[1].1, TOPICS[2].0, TOPICS[2].1
        )
    );
    let (sequential, _) = embedded(SessionConfig { turn_mode: TurnMode::Sequential, ..Default::default() });
    sequential.record_turn(&me, "chat", None, turn("q", "a")).await.unwrap();
    assert_eq!(sequential.conversation(&me, "chat", "and?", true).await.unwrap().retrieval_query, None);
}

fn trace(status: &str, error: Option<&str>, node_set: Option<Vec<&str>>) -> SessionEntry {
    SessionEntry::Trace {
        origin_function: "run_sql".into(),
        status: status.into(),
        memory_query: String::new(),
        memory_context: String::new(),
        method_params: Some(json!({"sql": "select * from users"})),
        method_return_value: None,
        error_message: error.map(str::to_string),
        session_feedback: None,
        node_set: node_set.map(|n| n.into_iter().map(str::to_string).collect()),
    }
}

#[tokio::test]
async fn an_errored_trace_step_becomes_an_agent_failure_lesson() {
    let s = sessions();
    let me = user();
    let stored = s.remember_entry(&me, "agent", None, trace("error", Some("no such table: users"), None)).await;
    let trace_id = stored.unwrap().id;
    s.remember_entry(&me, "agent", None, trace("success", None, None)).await.unwrap();
    let block = s.session_context(&me, "agent", "users table", "agent").await.unwrap();
    assert_eq!(block.len(), 1);
    assert!(block[0].content.contains("### Failure lessons\n- ["), "{}", block[0].content);
    assert!(block[0].content.contains("run_sql failed: no such table: users"));
    assert!(s.session_context(&me, "agent", "users", "qa").await.unwrap().is_empty(), "profiles are apart");
    let (entries, _) = s.guidance_block(&me, "agent", "users", Profile::Agent).await.unwrap();
    assert_eq!(entries[0].source_trace_ids, [trace_id]);

    // The same failure again links the step to the same lesson.
    let second = s.remember_entry(&me, "agent", None, trace("error", Some("no such  table: users"), None)).await;
    let (entries, _) = s.guidance_block(&me, "agent", "users", Profile::Agent).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].source_trace_ids.len(), 2);
    assert!(entries[0].source_trace_ids.contains(&second.unwrap().id));

    let quiet = Sessions::new(
        Arc::new(MemorySessionStore::new()),
        SessionConfig { auto_feedback: false, ..Default::default() },
    );
    quiet.remember_entry(&me, "agent", None, trace("error", Some("boom"), None)).await.unwrap();
    assert!(quiet.session_context(&me, "agent", "boom", "agent").await.unwrap().is_empty(), "AUTO_FEEDBACK=false");
}

#[tokio::test]
async fn every_tenth_step_and_improve_read_the_new_steps_for_lessons() {
    use recall_core::ports::MockLlmClient;
    let inputs = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut llm = MockLlmClient::new();
    llm.expect_model().return_const("scripted".to_string());
    let seen = inputs.clone();
    llm.expect_structured().returning(move |request, name, _schema| {
        assert_eq!(name, agent::SCHEMA_NAME);
        seen.lock().unwrap().push(request.messages.last().map(|m| m.content.clone()).unwrap_or_default());
        Ok(json!({"lessons": [
            {"section": "tool_rules", "content": "Check the schema before querying.", "confidence": 0.9},
            {"section": "tool_rules", "content": "Maybe retry.", "confidence": 0.3},
            {"section": "not_a_section", "content": "x", "confidence": 0.9}
        ]}))
    });
    let s = Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig::default()).with_llm(Some(Arc::new(llm)));
    let me = user();
    for _ in 0..9 {
        s.remember_entry(&me, "agent", None, trace("success", None, None)).await.unwrap();
    }
    assert!(inputs.lock().unwrap().is_empty(), "nine steps: not yet");
    s.remember_entry(&me, "agent", None, trace("success", None, None)).await.unwrap();
    assert_eq!(inputs.lock().unwrap().len(), 1, "the tenth step triggers a read");
    assert_eq!(inputs.lock().unwrap()[0].matches("- run_sql [success]").count(), 10);
    let (entries, _) = s.guidance_block(&me, "agent", "schema", Profile::Agent).await.unwrap();
    let contents: Vec<&str> = entries.iter().map(|e| e.content.as_str()).collect();
    assert_eq!(contents, ["Check the schema before querying."], "the gate keeps one of three");

    // improve reads what is new since (one step, and the overlap), showing the kept lesson.
    s.remember_entry(&me, "agent", None, trace("success", None, None)).await.unwrap();
    assert_eq!(s.extract_agent_context(&me, "agent").await.unwrap(), Some(1));
    let last = inputs.lock().unwrap().last().cloned().unwrap();
    assert!(last.starts_with("EXISTING LESSONS"), "{last}");
    assert_eq!(last.matches("- run_sql [success]").count(), 1 + agent::EXTRACTION_OVERLAP);
    assert_eq!(s.extract_agent_context(&me, "agent").await.unwrap(), Some(0), "nothing new");
    assert_eq!(inputs.lock().unwrap().len(), 2);
    let (entries, _) = s.guidance_block(&me, "agent", "schema", Profile::Agent).await.unwrap();
    assert_eq!(entries.len(), 1, "the same lesson is not stored twice");
    assert_eq!(sessions().extract_agent_context(&me, "agent").await.unwrap(), None, "no LLM");
}

#[tokio::test]
async fn the_first_node_set_pins_the_session() {
    let s = sessions();
    let me = user();
    let qa = |node_set: Vec<&str>| SessionEntry::Qa {
        question: "q".into(),
        answer: "a".into(),
        context: String::new(),
        qa_id: None,
        feedback_text: None,
        feedback_score: None,
        used_graph_element_ids: None,
        node_set: Some(node_set.into_iter().map(str::to_string).collect()),
    };
    s.remember_entry(&me, "pinned", None, trace("success", None, None)).await.unwrap();
    s.remember_entry(&me, "pinned", None, qa(vec!["b", "a"])).await.unwrap();
    s.remember_entry(&me, "pinned", None, trace("success", None, Some(vec!["a", "b", "a"]))).await.unwrap();
    s.remember_entry(&me, "pinned", None, trace("success", None, None)).await.unwrap();
    let err = s.remember_entry(&me, "pinned", None, qa(vec!["c"])).await.unwrap_err();
    assert_eq!((err.http_status(), err.name()), (409, "SessionNodeSetConflictError"));
    assert_eq!(
        err.to_string(),
        "A session's node_set cannot change once pinned (pinned: [\"a\", \"b\"], requested: [\"c\"]); start a new session"
    );
    let blank = s.remember_entry(&me, "other", None, qa(vec!["a", " "])).await.unwrap_err();
    assert_eq!(blank.name(), "SessionParameterValidationError");
    assert_eq!(s.qa_entries(&me, "pinned", None).await.unwrap().len(), 1, "nothing written on a conflict");
    assert!(s.qa_entries(&me, "other", None).await.unwrap().is_empty());
    s.remember_entry(&user(), "pinned", None, qa(vec!["c"])).await.unwrap();
}
