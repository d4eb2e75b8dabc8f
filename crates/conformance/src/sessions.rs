//! The session-store suite (docs/sessions.md, "Storage"): isolation by
//! (user, session), insertion order, replacement in place, the sliding TTL,
//! concurrent writers, listing, deletes and forgetting a dataset. Time is
//! passed in explicitly, so expiry is checked without sleeping.

use std::sync::Arc;

use recall_core::session::{
    record_kind, ContextRecord, QaEntry, QaVector, SessionKey, SessionStore, TraceStep, WriteStamp,
};
use recall_core::DatasetId;
use serde_json::json;
use uuid::Uuid;

/// An arbitrary fixed "now" far from the epoch, so offsets are readable.
const T: i64 = 1_800_000_000_000;

fn key(user: Uuid, session: &str) -> SessionKey {
    SessionKey::new(user, session)
}

fn qa(id: &str, answer: &str) -> QaEntry {
    QaEntry {
        time: "2026-12-02T10:00:00+00:00".into(),
        question: format!("question {id}"),
        context: String::new(),
        answer: answer.into(),
        qa_id: id.into(),
        feedback_text: None,
        feedback_score: None,
        used_graph_element_ids: Some(json!({"node_ids": [Uuid::nil().to_string()]})),
        memify_metadata: None,
        used_session_context_ids: Some(vec!["g1".into()]),
    }
}

fn step(id: &str) -> TraceStep {
    TraceStep {
        trace_id: id.into(),
        origin_function: "search_tool".into(),
        status: "success".into(),
        memory_query: "q".into(),
        memory_context: "ctx".into(),
        method_params: Some(json!({"k": 1})),
        method_return_value: Some(json!(["r"])),
        error_message: None,
        session_feedback: Some("ok".into()),
    }
}

fn at(now: i64, ttl_ms: Option<i64>) -> WriteStamp {
    WriteStamp { now, ttl_ms }
}

const NO_TTL: Option<i64> = None;

fn ids(entries: &[QaEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.qa_id.as_str()).collect()
}

/// Runs every session-store check.
pub async fn session_store_conformance(store: Arc<dyn SessionStore>) {
    isolation_and_order(store.as_ref()).await;
    traces_and_records(store.as_ref()).await;
    sliding_ttl(store.as_ref()).await;
    listing_and_deletes(store.as_ref()).await;
    forgetting_a_dataset(store.as_ref()).await;
    versions_track_every_change(store.as_ref()).await;
    qa_vectors(store.as_ref()).await;
    pinned_node_sets(store.as_ref()).await;
    concurrent_writers(store).await;
}

async fn isolation_and_order(store: &dyn SessionStore) {
    let (u1, u2) = (Uuid::new_v4(), Uuid::new_v4());
    let s = key(u1, "chat");
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        store.put_qa(&s, None, &qa(id, "x"), at(T + i as i64, NO_TTL)).await.unwrap();
    }
    store.put_qa(&key(u2, "chat"), None, &qa("z", "other user"), at(T, NO_TTL)).await.unwrap();
    store.put_qa(&key(u1, "chat-2"), None, &qa("y", "other session"), at(T, NO_TTL)).await.unwrap();

    let got = store.qa_entries(&s, None, T).await.unwrap();
    assert_eq!(ids(&got), ["a", "b", "c"], "oldest first, only this (user, session)");
    assert_eq!(got[0], qa("a", "x"), "every field round-trips");
    assert_eq!(ids(&store.qa_entries(&s, Some(2), T).await.unwrap()), ["b", "c"], "last_n keeps the newest");
    assert_eq!(ids(&store.qa_entries(&key(u2, "chat"), None, T).await.unwrap()), ["z"]);
    assert!(store.qa_entries(&key(Uuid::new_v4(), "chat"), None, T).await.unwrap().is_empty());

    // Writing an existing id replaces the entry where it stands.
    store.put_qa(&s, None, &qa("a", "revised"), at(T + 10, NO_TTL)).await.unwrap();
    let got = store.qa_entries(&s, None, T + 10).await.unwrap();
    assert_eq!(ids(&got), ["a", "b", "c"]);
    assert_eq!(got[0].answer, "revised");
    assert_eq!(store.qa_entry(&s, "a", T).await.unwrap().map(|e| e.answer), Some("revised".into()));
    assert_eq!(store.qa_entry(&key(u2, "chat"), "a", T).await.unwrap(), None, "another user's session");

    // Unicode and quotes survive.
    let tricky = qa("q'\"", "Ünïcödé — 日本語 \\ 'quoted'");
    store.put_qa(&s, None, &tricky, at(T + 11, NO_TTL)).await.unwrap();
    assert_eq!(store.qa_entry(&s, "q'\"", T).await.unwrap(), Some(tricky));

    assert_eq!(store.delete_qa(&s, &["b".into(), "nope".into()]).await.unwrap(), 1);
    assert_eq!(ids(&store.qa_entries(&s, None, T).await.unwrap()), ["a", "c", "q'\""]);
}

async fn traces_and_records(store: &dyn SessionStore) {
    let s = key(Uuid::new_v4(), "agent");
    for (i, id) in ["t1", "t2", "t3"].iter().enumerate() {
        store.append_trace(&s, &step(id), at(T + i as i64, NO_TTL)).await.unwrap();
    }
    let steps = store.trace_steps(&s, None, T).await.unwrap();
    assert_eq!(steps.iter().map(|t| t.trace_id.as_str()).collect::<Vec<_>>(), ["t1", "t2", "t3"]);
    assert_eq!(steps[0], step("t1"));
    let last = store.trace_steps(&s, Some(1), T).await.unwrap();
    assert_eq!(last.iter().map(|t| t.trace_id.as_str()).collect::<Vec<_>>(), ["t3"]);

    let record = |id: &str, kind: &str, content: &str| ContextRecord {
        id: id.into(),
        kind: kind.into(),
        payload: json!({"content": content}),
    };
    store.put_record(&s, &record("g1", record_kind::CONTEXT, "be brief"), at(T, NO_TTL)).await.unwrap();
    store.put_record(&s, &record("f1", record_kind::FEEDBACK, "good"), at(T, NO_TTL)).await.unwrap();
    store.put_record(&s, &record("g2", record_kind::CONTEXT, "cite sources"), at(T, NO_TTL)).await.unwrap();
    store.put_record(&s, &record("g1", record_kind::CONTEXT, "be very brief"), at(T, NO_TTL)).await.unwrap();
    let guidance = store.records(&s, record_kind::CONTEXT, T).await.unwrap();
    assert_eq!(guidance, vec![record("g1", "context", "be very brief"), record("g2", "context", "cite sources")]);
    assert_eq!(store.records(&s, record_kind::FEEDBACK, T).await.unwrap(), vec![record("f1", "feedback", "good")]);
}

async fn sliding_ttl(store: &dyn SessionStore) {
    let ttl = Some(1_000);
    let s = key(Uuid::new_v4(), "ttl");
    store.put_qa(&s, None, &qa("first", "x"), at(T, ttl)).await.unwrap();
    assert_eq!(ids(&store.qa_entries(&s, None, T + 999).await.unwrap()), ["first"]);
    assert!(store.qa_entries(&s, None, T + 1_000).await.unwrap().is_empty(), "expired at now + TTL");
    assert_eq!(store.qa_entry(&s, "first", T + 1_000).await.unwrap(), None);

    // A write within 5 % of the TTL does not re-stamp the older row...
    store.put_qa(&s, None, &qa("second", "x"), at(T + 30, ttl)).await.unwrap();
    assert_eq!(ids(&store.qa_entries(&s, None, T + 1_010).await.unwrap()), ["second"]);
    // ...a later one slides every stale row of the session.
    store.put_qa(&s, None, &qa("third", "x"), at(T + 100, ttl)).await.unwrap();
    assert_eq!(ids(&store.qa_entries(&s, None, T + 1_050).await.unwrap()), ["first", "second", "third"]);
    store.append_trace(&s, &step("t"), at(T + 200, ttl)).await.unwrap();
    let live = store.qa_entries(&s, None, T + 1_150).await.unwrap();
    assert_eq!(ids(&live), ["first", "second", "third"], "a trace write slides the QA rows too");
    assert!(store.qa_entries(&s, None, T + 1_200).await.unwrap().is_empty());

    // The sweep deletes what expired, and only that.
    let kept = key(s.user_id, "ttl-kept");
    store.put_qa(&kept, None, &qa("kept", "x"), at(T + 5_000, ttl)).await.unwrap();
    assert!(store.purge_expired(T + 1_200).await.unwrap() >= 4, "three QA rows and a trace step");
    assert!(store.qa_entries(&s, None, T).await.unwrap().is_empty(), "purged rows are gone at any time");
    assert_eq!(ids(&store.qa_entries(&kept, None, T + 5_500).await.unwrap()), ["kept"]);
    let listed: Vec<String> =
        store.sessions(s.user_id, T + 1_200).await.unwrap().into_iter().map(|i| i.session_id).collect();
    assert_eq!(listed, ["ttl-kept"], "an expired session is not listed");

    // TTL 0 (none): nothing expires, and a write without one un-expires the session.
    let forever = key(s.user_id, "forever");
    store.put_qa(&forever, None, &qa("old", "x"), at(T, ttl)).await.unwrap();
    store.put_qa(&forever, None, &qa("new", "x"), at(T + 10, NO_TTL)).await.unwrap();
    assert_eq!(ids(&store.qa_entries(&forever, None, i64::MAX - 1).await.unwrap()), ["old", "new"]);
    store.purge_expired(i64::MAX - 1).await.unwrap();
    assert_eq!(ids(&store.qa_entries(&forever, None, i64::MAX - 1).await.unwrap()), ["old", "new"]);
}

fn vector(model: &str, x: f32) -> QaVector {
    QaVector { model: model.into(), vector: vec![x, -x, 0.25, f32::MIN_POSITIVE] }
}

/// QA embeddings: kept with their entry, read per model and after a
/// version, untouched by a plain replacement, replaced by a new vector,
/// gone with their entry, isolated per session, and expiring with it.
async fn qa_vectors(store: &dyn SessionStore) {
    let s = key(Uuid::new_v4(), "vectors");
    let other = key(s.user_id, "vectors-other");
    assert!(store.qa_vectors(&s, "m1", 0, T).await.unwrap().is_empty(), "no session yet");
    store.put_qa_embedded(&s, None, &qa("a", "x"), &vector("m1", 1.0), at(T, NO_TTL)).await.unwrap();
    store.put_qa(&s, None, &qa("plain", "x"), at(T + 1, NO_TTL)).await.unwrap();
    store.put_qa_embedded(&s, None, &qa("b", "x"), &vector("m1", 2.0), at(T + 2, NO_TTL)).await.unwrap();
    store.put_qa_embedded(&s, None, &qa("c", "x"), &vector("m2", 3.0), at(T + 3, NO_TTL)).await.unwrap();
    store.put_qa_embedded(&other, None, &qa("z", "x"), &vector("m1", 9.0), at(T + 4, NO_TTL)).await.unwrap();
    assert_eq!(
        ids(&store.qa_entries(&s, None, T + 5).await.unwrap()),
        ["a", "plain", "b", "c"],
        "an embedded entry is an ordinary entry"
    );

    let read = store.qa_vectors(&s, "m1", 0, T + 5).await.unwrap();
    let got: Vec<(&str, f32)> = read.iter().map(|v| (v.qa_id.as_str(), v.vector[0])).collect();
    assert_eq!(got, [("a", 1.0), ("b", 2.0)], "only this session's vectors of this model, in write order");
    assert_eq!(read[0].vector, vector("m1", 1.0).vector, "the vector comes back bit for bit");
    assert!(read[0].version < read[1].version, "each write has its own version");
    let version_of = |v: &[recall_core::session::StoredQaVector], id: &str| {
        v.iter().find(|x| x.qa_id == id).map(|x| x.version).unwrap()
    };
    let after_a = version_of(&read, "a");
    let later = store.qa_vectors(&s, "m1", after_a, T + 5).await.unwrap();
    assert_eq!(later.iter().map(|v| v.qa_id.as_str()).collect::<Vec<_>>(), ["b"], "after a version: only newer");

    // A plain replacement (feedback, say) keeps the vector and its version...
    let mut rated = qa("a", "x");
    rated.feedback_score = Some(4);
    store.put_qa(&s, None, &rated, at(T + 6, NO_TTL)).await.unwrap();
    let kept = store.qa_vectors(&s, "m1", 0, T + 7).await.unwrap();
    assert_eq!(version_of(&kept, "a"), after_a);
    // ...a new vector replaces it, newer than everything before.
    store.put_qa_embedded(&s, None, &qa("a", "changed"), &vector("m1", 5.0), at(T + 8, NO_TTL)).await.unwrap();
    let replaced = store.qa_vectors(&s, "m1", 0, T + 9).await.unwrap();
    assert_eq!(replaced.iter().map(|v| (v.qa_id.as_str(), v.vector[0])).collect::<Vec<_>>(), [("b", 2.0), ("a", 5.0)]);
    assert_eq!(ids(&store.qa_entries(&s, None, T + 9).await.unwrap()), ["a", "plain", "b", "c"], "in place");

    // Deleting an entry deletes its vector; expiry hides it.
    store.delete_qa(&s, &["b".to_string()]).await.unwrap();
    assert_eq!(store.qa_vectors(&s, "m1", 0, T + 10).await.unwrap().len(), 1);
    let ttl = key(s.user_id, "vectors-ttl");
    store.put_qa_embedded(&ttl, None, &qa("t", "x"), &vector("m1", 1.0), at(T, Some(100))).await.unwrap();
    assert_eq!(store.qa_vectors(&ttl, "m1", 0, T + 99).await.unwrap().len(), 1);
    assert!(store.qa_vectors(&ttl, "m1", 0, T + 100).await.unwrap().is_empty(), "expired with its entry");
    assert!(store.delete_session(&other).await.unwrap());
    assert!(store.qa_vectors(&other, "m1", 0, T).await.unwrap().is_empty());
}

/// The first node set pinned on a session stays; later pins return it.
async fn pinned_node_sets(store: &dyn SessionStore) {
    let user = Uuid::new_v4();
    let s = key(user, "pinned");
    let set = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    assert_eq!(store.pin_node_set(&s, &set(&["a", "b"]), at(T, NO_TTL)).await.unwrap(), set(&["a", "b"]));
    assert_eq!(store.pin_node_set(&s, &set(&["c"]), at(T + 1, NO_TTL)).await.unwrap(), set(&["a", "b"]));
    assert_eq!(
        store.pin_node_set(&key(Uuid::new_v4(), "pinned"), &set(&["c"]), at(T, NO_TTL)).await.unwrap(),
        set(&["c"]),
        "another user's session of the same name is another session"
    );
    // A session pinned before its first entry is an ordinary session after it.
    store.put_qa(&s, None, &qa("q", "x"), at(T + 2, NO_TTL)).await.unwrap();
    assert_eq!(ids(&store.qa_entries(&s, None, T + 3).await.unwrap()), ["q"]);
    assert_eq!(store.pin_node_set(&s, &set(&["d"]), at(T + 4, NO_TTL)).await.unwrap(), set(&["a", "b"]));
    assert!(store.delete_session(&s).await.unwrap());
    assert_eq!(store.pin_node_set(&s, &set(&["d"]), at(T + 5, NO_TTL)).await.unwrap(), set(&["d"]), "a new session");
}

async fn listing_and_deletes(store: &dyn SessionStore) {
    let user = Uuid::new_v4();
    let dataset = DatasetId(Uuid::new_v4());
    store.put_qa(&key(user, "older"), None, &qa("1", "x"), at(T, NO_TTL)).await.unwrap();
    store.append_trace(&key(user, "older"), &step("t"), at(T + 1, NO_TTL)).await.unwrap();
    store.put_qa(&key(user, "newer"), Some(dataset), &qa("2", "x"), at(T + 5, NO_TTL)).await.unwrap();
    store.put_qa(&key(user, "newer"), None, &qa("3", "x"), at(T + 6, NO_TTL)).await.unwrap();
    store.put_qa(&key(Uuid::new_v4(), "someone-else"), None, &qa("4", "x"), at(T + 9, NO_TTL)).await.unwrap();

    let listed = store.sessions(user, T + 10).await.unwrap();
    let summary: Vec<(&str, u64, u64, Option<DatasetId>)> =
        listed.iter().map(|i| (i.session_id.as_str(), i.qa_count, i.trace_count, i.dataset_id)).collect();
    assert_eq!(summary, [("newer", 2, 0, Some(dataset)), ("older", 1, 1, None)], "most recent first");
    assert_eq!((listed[0].created_at, listed[0].updated_at), (T + 5, T + 6));

    assert!(store.delete_session(&key(user, "older")).await.unwrap());
    assert!(!store.delete_session(&key(user, "older")).await.unwrap(), "already gone");
    assert!(store.qa_entries(&key(user, "older"), None, T).await.unwrap().is_empty());
    assert!(store.trace_steps(&key(user, "older"), None, T).await.unwrap().is_empty());
    let left: Vec<String> = store.sessions(user, T + 10).await.unwrap().into_iter().map(|i| i.session_id).collect();
    assert_eq!(left, ["newer"]);
}

async fn forgetting_a_dataset(store: &dyn SessionStore) {
    let (u1, u2) = (Uuid::new_v4(), Uuid::new_v4());
    let (gone, other) = (DatasetId(Uuid::new_v4()), DatasetId(Uuid::new_v4()));
    let default = format!("default_session_{gone}");
    store.put_qa(&key(u1, "chat"), Some(gone), &qa("from-gone", "x"), at(T, NO_TTL)).await.unwrap();
    store.put_qa(&key(u1, "chat"), Some(other), &qa("from-other", "x"), at(T + 1, NO_TTL)).await.unwrap();
    store.put_qa(&key(u2, "chat"), Some(gone), &qa("u2-from-gone", "x"), at(T, NO_TTL)).await.unwrap();
    // A replacement without a dataset (feedback on the entry) keeps the one recorded.
    store.put_qa(&key(u2, "chat"), None, &qa("u2-from-gone", "rated"), at(T + 1, NO_TTL)).await.unwrap();
    store.put_qa(&key(u1, &default), None, &qa("default", "x"), at(T, NO_TTL)).await.unwrap();
    store.append_trace(&key(u2, &default), &step("t"), at(T, NO_TTL)).await.unwrap();

    let mut of_gone: Vec<(Uuid, String)> =
        store.dataset_qa(gone, T).await.unwrap().into_iter().map(|(k, e)| (k.user_id, e.qa_id)).collect();
    of_gone.sort();
    let mut want = vec![(u1, "from-gone".to_string()), (u2, "u2-from-gone".to_string())];
    want.sort();
    assert_eq!(of_gone, want);

    assert!(store.forget_dataset(gone, std::slice::from_ref(&default)).await.unwrap() >= 4);
    assert_eq!(ids(&store.qa_entries(&key(u1, "chat"), None, T).await.unwrap()), ["from-other"]);
    assert!(store.qa_entries(&key(u2, "chat"), None, T).await.unwrap().is_empty());
    assert!(store.qa_entries(&key(u1, &default), None, T).await.unwrap().is_empty());
    assert!(store.trace_steps(&key(u2, &default), None, T).await.unwrap().is_empty());
    assert!(store.dataset_qa(gone, T).await.unwrap().is_empty());
    let listed: Vec<String> = store.sessions(u1, T).await.unwrap().into_iter().map(|i| i.session_id).collect();
    assert_eq!(listed, ["chat"], "the default session is gone from the list");
}

/// A session's version changes with every write and delete in it (readers
/// that keep what they read rely on it), and never with a read.
async fn versions_track_every_change(store: &dyn SessionStore) {
    let s = key(Uuid::new_v4(), "versioned");
    let dataset = DatasetId(Uuid::new_v4());
    assert_eq!(store.session_version(&s, T).await.unwrap(), None, "no session yet");
    let mut seen = Vec::new();
    let mut changed = |v: Option<recall_core::session::SessionVersion>, what: &str| {
        let v = v.unwrap_or_else(|| panic!("a version after {what}"));
        assert!(!seen.contains(&v.version), "{what} changes the version");
        seen.push(v.version);
        v
    };
    store.put_qa(&s, Some(dataset), &qa("a", "x"), at(T, Some(1_000))).await.unwrap();
    let v = changed(store.session_version(&s, T).await.unwrap(), "a QA write");
    assert_eq!(v.updated_at, T);
    store.qa_entries(&s, None, T).await.unwrap();
    assert_eq!(store.session_version(&s, T).await.unwrap(), Some(v), "reads change nothing");
    store.put_qa(&s, None, &qa("a", "replaced"), at(T + 1, Some(1_000))).await.unwrap();
    changed(store.session_version(&s, T).await.unwrap(), "a replacement");
    store.append_trace(&s, &step("t"), at(T + 2, Some(1_000))).await.unwrap();
    changed(store.session_version(&s, T).await.unwrap(), "a trace");
    let record = ContextRecord { id: "g".into(), kind: record_kind::CONTEXT.into(), payload: json!({}) };
    store.put_record(&s, &record, at(T + 3, Some(1_000))).await.unwrap();
    changed(store.session_version(&s, T).await.unwrap(), "a record");
    store.put_qa(&s, None, &qa("b", "x"), at(T + 4, Some(1_000))).await.unwrap();
    changed(store.session_version(&s, T).await.unwrap(), "a second QA");
    store.delete_qa(&s, &["b".into()]).await.unwrap();
    changed(store.session_version(&s, T).await.unwrap(), "a delete");
    store.forget_dataset(dataset, &[]).await.unwrap();
    let v = changed(store.session_version(&s, T).await.unwrap(), "forgetting the dataset of a row");
    assert_eq!(v.updated_at, T + 4);
    assert_eq!(store.session_version(&s, T + 1_004).await.unwrap(), None, "an expired session has none");
    store.delete_session(&s).await.unwrap();
    assert_eq!(store.session_version(&s, T).await.unwrap(), None);
}

/// Several tasks appending to one session at once lose nothing, and each
/// task's entries keep its order.
async fn concurrent_writers(store: Arc<dyn SessionStore>) {
    let s = key(Uuid::new_v4(), "busy");
    let (tasks, each) = (8, 25);
    let handles: Vec<_> = (0..tasks)
        .map(|t| {
            let (store, s) = (store.clone(), s.clone());
            tokio::spawn(async move {
                for i in 0..each {
                    let now = T + i64::from(t * 100 + i);
                    store.put_qa(&s, None, &qa(&format!("{t}-{i}"), "x"), at(now, Some(3_600_000))).await.unwrap();
                    store.append_trace(&s, &step(&format!("{t}-{i}")), at(now, Some(3_600_000))).await.unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap();
    }
    let entries = store.qa_entries(&s, None, T).await.unwrap();
    assert_eq!(entries.len(), (tasks * each) as usize, "no write lost");
    assert_eq!(store.trace_steps(&s, None, T).await.unwrap().len(), (tasks * each) as usize);
    for t in 0..tasks {
        let mine: Vec<u32> = entries
            .iter()
            .filter_map(|e| e.qa_id.strip_prefix(&format!("{t}-")).and_then(|i| i.parse().ok()))
            .collect();
        assert_eq!(mine, (0..each).collect::<Vec<_>>(), "task {t}'s entries in its order");
    }
}
