#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Dataset access end to end, on the embedded default (SQLite) and on
//! Postgres: two users with same-named datasets never see each other's data
//! through recall, search, history, graph export or forget; grants open
//! exactly what they name; the 403/404 texts are Cognee's (docs/access.md).

use std::path::Path;

use recall::{build_engine, OpenMode, Settings};
use recall_core::{DatasetId, Permission, RecallError, RecallResponse, SearchType, User};
use recall_engine::{Engine, RecallRequest, RememberInput, SearchRequest};

const ALICE_TEXT: &str = "The vault under the old mill opens with the code four seven one one.";
const BOB_TEXT: &str = "Tulips and daffodils grow in the garden behind the bakery.";
const ALL_DENIED: &str = "Request owner does not have necessary permission: [read] for all datasets requested.";

async fn user(engine: &Engine, email: &str) -> User {
    engine.relational().users.ensure_user(email).await.unwrap()
}

fn chunks(question: &str) -> RecallRequest {
    RecallRequest::new(question).query_type(SearchType::Chunks).top_k(10)
}

/// Every text a recall returned, joined.
fn texts(results: &[RecallResponse]) -> String {
    results.iter().map(RecallResponse::text).collect::<Vec<_>>().join("\n")
}

fn assert_denied(err: RecallError, permission: Permission) {
    assert_eq!(err.name(), "PermissionDeniedError", "{err}");
    assert_eq!(err.http_status(), 403);
    assert_eq!(
        err.to_string(),
        format!("Request owner does not have necessary permission: [{permission}] for all datasets requested.")
    );
}

/// The whole scenario, on one engine.
async fn two_users_with_same_named_datasets(engine: &Engine) {
    let alice = user(engine, "alice@example.com").await;
    let bob = user(engine, "bob@example.com").await;
    let a = engine.remember(&alice, "notes", &[RememberInput::text(ALICE_TEXT)]).await.unwrap();
    let b = engine.remember(&bob, "notes", &[RememberInput::text(BOB_TEXT)]).await.unwrap();
    assert_ne!(a.dataset_id, b.dataset_id, "same name, two datasets");

    // recall: unscoped, by name, by id.
    let mine = texts(&engine.recall(&alice, &chunks("vault code garden tulips")).await.unwrap());
    assert!(mine.contains("vault") && !mine.contains("Tulips"), "{mine}");
    let theirs = texts(&engine.recall(&bob, &chunks("vault code garden tulips").datasets(["notes"])).await.unwrap());
    assert!(theirs.contains("Tulips") && !theirs.contains("vault"), "{theirs}");
    let mut by_id = chunks("vault");
    by_id.dataset_ids = Some(vec![a.dataset_id]);
    assert_denied(engine.recall(&bob, &by_id).await.unwrap_err(), Permission::Read);
    // An unknown id reads exactly like a forbidden one.
    let mut unknown = chunks("vault");
    unknown.dataset_ids = Some(vec![DatasetId(uuid::Uuid::new_v4())]);
    assert_eq!(engine.recall(&bob, &unknown).await.unwrap_err().to_string(), ALL_DENIED);
    // A name that only another user has is a 404 naming it.
    let err = engine.recall(&bob, &chunks("vault").datasets(["vault-notes"])).await.unwrap_err();
    assert_eq!(err.name(), "DatasetNotFoundError");
    assert!(err.to_string().starts_with("Dataset(s) not found: 'vault-notes'."), "{err}");

    // legacy search.
    let mut search = SearchRequest::new("vault").query_type(SearchType::Chunks);
    search.dataset_ids = Some(vec![a.dataset_id]);
    assert_denied(engine.search(&bob, &search).await.unwrap_err(), Permission::Read);
    let payloads = engine.search(&bob, &SearchRequest::new("vault code").query_type(SearchType::Chunks)).await.unwrap();
    let found = serde_json::to_string(&recall_api::search_results(&payloads, false, true)).unwrap();
    assert!(found.contains("Tulips") && !found.contains("vault"), "{found}");

    // history is per user.
    let history = engine.search_history(&alice).await.unwrap();
    assert!(!history.is_empty());
    assert!(history.iter().all(|r| !r.text.contains("Tulips")), "{history:?}");
    let bobs = engine.search_history(&bob).await.unwrap();
    assert!(bobs.iter().all(|r| !r.text.contains("vault under")), "{bobs:?}");

    // graph export: by name the caller's own, by id only with read.
    let (ds, graph) = engine.dataset_graph(&bob, "notes").await.unwrap();
    assert_eq!(ds.id, b.dataset_id);
    let graph_json = serde_json::to_string(&graph).unwrap();
    assert!(graph_json.contains("Tulips") && !graph_json.contains("vault"));
    assert_denied(engine.dataset_graph(&bob, a.dataset_id).await.unwrap_err(), Permission::Read);

    // forget: another user's dataset is out of reach, by id (403) and by name (404).
    assert_denied(engine.forget_dataset(&bob, a.dataset_id).await.unwrap_err(), Permission::Delete);
    let err = engine.forget_document(&bob, "vault-notes", "x").await.unwrap_err();
    assert_eq!(err.to_string(), "Dataset 'vault-notes' not found or not accessible.");
    assert_eq!((err.name(), err.http_status()), ("DatasetNotFoundError", 404));

    // Writes and shares on another user's dataset need their permission.
    let more = [RememberInput::text("Bob was here.")];
    assert_denied(engine.remember(&bob, a.dataset_id, &more).await.unwrap_err(), Permission::Write);
    assert_denied(
        engine.access().share(&bob, a.dataset_id, &bob, Permission::Read).await.unwrap_err(),
        Permission::Share,
    );

    // A read grant: ids reach the shared dataset, unscoped recall covers
    // owned + shared, names still resolve among owned datasets only.
    engine.access().share(&alice, "notes", &bob, Permission::Read).await.unwrap();
    let shared = texts(&engine.recall(&bob, &by_id).await.unwrap());
    assert!(shared.contains("vault"), "{shared}");
    let both = texts(&engine.recall(&bob, &chunks("vault code garden tulips")).await.unwrap());
    assert!(both.contains("vault") && both.contains("Tulips"), "{both}");
    let own = texts(&engine.recall(&bob, &chunks("vault code garden tulips").datasets(["notes"])).await.unwrap());
    assert!(!own.contains("vault"), "a name never reaches a shared dataset: {own}");
    let listing = engine.access().datasets(&bob).await.unwrap();
    let from_alice = listing.iter().find(|d| d.dataset.id == a.dataset_id).expect("listed");
    assert_eq!((from_alice.owned, from_alice.owner_email.as_deref()), (false, Some("alice@example.com")));
    assert_eq!(from_alice.permissions, vec![Permission::Read]);
    assert!(listing.iter().any(|d| d.owned && d.dataset.id == b.dataset_id && d.permissions == Permission::ALL));
    // Read is not write, delete or share.
    assert_denied(engine.remember(&bob, a.dataset_id, &more).await.unwrap_err(), Permission::Write);
    assert_denied(engine.forget_dataset(&bob, a.dataset_id).await.unwrap_err(), Permission::Delete);
    // Alice's view is unchanged by what she shared.
    let mine = texts(&engine.recall(&alice, &chunks("vault code garden tulips")).await.unwrap());
    assert!(!mine.contains("Tulips"), "{mine}");

    // A write grant: bob adds to alice's dataset; it stays hers.
    engine.access().share(&alice, a.dataset_id, &bob, Permission::Write).await.unwrap();
    let added = engine.remember(&bob, a.dataset_id, &more).await.unwrap();
    assert_eq!(added.dataset_id, a.dataset_id);
    let hers = texts(&engine.recall(&alice, &chunks("Bob was here")).await.unwrap());
    assert!(hers.contains("Bob was here"), "{hers}");
    let owner = engine.access().datasets(&alice).await.unwrap();
    assert!(owner.iter().any(|d| d.dataset.id == a.dataset_id && d.owned));

    // Owners keep their permissions; revoking takes the grant away.
    let err = engine.access().unshare(&alice, "notes", &alice, Permission::Read).await.unwrap_err();
    assert_eq!(err.name(), "InvalidInputError");
    engine.access().unshare(&alice, "notes", &bob, Permission::Read).await.unwrap();
    assert_denied(engine.recall(&bob, &by_id).await.unwrap_err(), Permission::Read);

    // A caller who can read nothing: the warm-up marker while the guard is
    // on, 403 "for any dataset" past it.
    let carol = user(engine, "carol@example.com").await;
    let marker = engine.recall(&carol, &RecallRequest::new("vault")).await.unwrap();
    assert!(matches!(marker.as_slice(), [RecallResponse::System(m)] if m.status == "memory_warming_up"));
    let err = engine.recall(&carol, &chunks("vault").only_context(true)).await.unwrap_err();
    assert_eq!(err.to_string(), "Request owner does not have permission: [read] for any dataset.");
    assert_eq!(err.http_status(), 403);
    let err = engine.search(&carol, &SearchRequest::new("vault")).await.unwrap_err();
    assert_eq!(err.to_string(), "Request owner does not have permission: [read] for any dataset.");

    // Bob forgets his own "notes": alice's, with bob's addition, stays.
    engine.forget_dataset(&bob, "notes").await.unwrap();
    assert!(engine.access().datasets(&bob).await.unwrap().iter().all(|d| d.dataset.id != b.dataset_id));
    let hers = texts(&engine.recall(&alice, &chunks("vault code")).await.unwrap());
    assert!(hers.contains("vault"), "{hers}");
}

fn settings(dir: &Path) -> Settings {
    let mut settings = Settings::embedded(dir).unwrap();
    // Word hashing: which datasets an unscoped, two-topic question is routed
    // to must not hang on a model's sense of meaning here.
    settings.embedding_provider = "hashing".into();
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_are_isolated_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = build_engine(&settings(dir.path()), OpenMode::Create).await.unwrap();
    two_users_with_same_named_datasets(&engine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_users_are_isolated_on_postgres() {
    let Some((url, name)) = recall_conformance::postgres::throwaway_database("access").await else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(dir.path());
    settings.db_url = url.into();
    {
        let (engine, active) = build_engine(&settings, OpenMode::Create).await.unwrap();
        assert!(active.relational.starts_with("Postgres"), "{}", active.relational);
        two_users_with_same_named_datasets(&engine).await;
    }
    recall_conformance::postgres::drop_database(&name).await;
}
