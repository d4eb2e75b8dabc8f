#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The shared conformance suites against the SQL adapter on a real SQLite file
//! (and on Postgres when `RECALL_TEST_POSTGRES_URL` is set — see issue 6).

mod common;

use std::sync::Arc;

use recall_conformance::{graph_store_conformance, relational_store_conformance};
use recall_sql::{SqlDatabase, SqlGraphStore, SqlRelationalStore};

async fn sqlite(dir: &tempfile::TempDir) -> SqlDatabase {
    let url = format!("sqlite://{}", dir.path().join("recall.db").display());
    SqlDatabase::connect(&url).await.expect("sqlite opens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_graph_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    graph_store_conformance(Arc::new(SqlGraphStore::new(sqlite(&dir).await)), 50_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_relational_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    relational_store_conformance(Arc::new(SqlRelationalStore::new(sqlite(&dir).await))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_session_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    recall_conformance::session_store_conformance(Arc::new(recall_sql::SqlSessionStore::new(sqlite(&dir).await))).await;
}

#[tokio::test]
async fn connect_existing_does_not_create_a_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("absent.db").display());
    assert!(SqlDatabase::connect_existing(&url).await.expect("no error").is_none());
    assert!(!dir.path().join("absent.db").exists());
}

#[tokio::test]
async fn migrations_are_recorded_once() {
    use recall_sql::Migrator;
    use sea_orm::{ConnectionTrait, Statement};
    use sea_orm_migration::MigratorTrait;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    SqlDatabase::connect(&url).await.unwrap();
    let db = SqlDatabase::connect(&url).await.unwrap();
    let row = db
        .connection()
        .query_one_raw(Statement::from_string(db.backend(), "SELECT COUNT(*) AS n FROM seaql_migrations"))
        .await
        .unwrap()
        .unwrap();
    let n: i64 = row.try_get("", "n").unwrap();
    let all = i64::try_from(Migrator::migrations().len()).unwrap();
    assert_eq!((n, all), (12, 12), "each migration is applied once and recorded");
    // Migration 10 widened two indexes in place of their prefixes; 11 added
    // the dataset indexes exports read in rowid order.
    let rows = db
        .connection()
        .query_all_raw(Statement::from_string(
            db.backend(),
            "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'graph_%' ORDER BY name",
        ))
        .await
        .unwrap();
    let names: Vec<String> = rows.iter().map(|r| r.try_get("", "name").unwrap()).collect();
    assert!(names.contains(&"graph_edges_target_relationship".to_string()), "{names:?}");
    assert!(names.contains(&"graph_nodes_type_name".to_string()), "{names:?}");
    assert!(!names.contains(&"graph_edges_target".to_string()), "{names:?}");
    assert!(!names.contains(&"graph_nodes_type".to_string()), "{names:?}");
    assert!(names.contains(&"graph_nodes_dataset".to_string()), "{names:?}");
    assert!(names.contains(&"graph_edges_dataset".to_string()), "{names:?}");
}

#[tokio::test]
async fn sqlite_edges_from_before_the_provenance_column_upgrade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("old-edges.db").display());
    common::edges_from_before_the_provenance_column_upgrade(&url).await;
}

#[tokio::test]
async fn sqlite_edges_from_before_the_type_key_upgrade() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("unkeyed-edges.db").display());
    common::edges_from_before_the_type_key_upgrade(&url).await;
}

#[tokio::test]
async fn a_database_from_before_search_history_upgrades() {
    use recall_core::ports::SearchHistoryStore;
    use sea_orm::{ConnectionTrait, Statement};
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("old.db").display());
    {
        // Roll the file back to what the first release wrote: migration 1 only.
        let db = SqlDatabase::connect(&url).await.unwrap();
        for sql in
            ["DROP TABLE queries", "DROP TABLE results", "DELETE FROM seaql_migrations WHERE version <> 'schema'"]
        {
            db.connection().execute_raw(Statement::from_string(db.backend(), sql)).await.unwrap();
        }
    }
    let db = SqlDatabase::connect(&url).await.unwrap();
    let store = SqlRelationalStore::new(db);
    let user = uuid::Uuid::new_v4();
    let record = recall_core::SearchRecord {
        user_id: user,
        query_text: "q".into(),
        query_type: "CHUNKS".into(),
        answers: vec![(None, "a".into())],
    };
    store.record_search(&record).await.unwrap();
    assert_eq!(store.search_history(user).await.unwrap().len(), 2);
}

/// Every pooled SQLite connection runs in WAL with synchronous=NORMAL (1) and
/// reads through a memory map; the settings hold on connections opened
/// concurrently, not only on the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_connections_use_wal_normal_sync_and_mmap() {
    use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sqlite(&dir).await;
    let conn = db.connection();
    // Hold several transactions open at once, so the pool opens several connections.
    let mut txns = Vec::new();
    for _ in 0..3 {
        txns.push(conn.begin().await.unwrap());
    }
    for txn in &txns {
        let pragma = |name: &str| Statement::from_string(db.backend(), format!("PRAGMA {name}"));
        let mode: String =
            txn.query_one_raw(pragma("journal_mode")).await.unwrap().unwrap().try_get_by_index(0).unwrap();
        assert_eq!(mode.to_lowercase(), "wal");
        let sync: i64 = txn.query_one_raw(pragma("synchronous")).await.unwrap().unwrap().try_get_by_index(0).unwrap();
        assert_eq!(sync, 1, "synchronous=NORMAL");
        let mmap: i64 = txn.query_one_raw(pragma("mmap_size")).await.unwrap().unwrap().try_get_by_index(0).unwrap();
        assert_eq!(mmap, 1 << 30);
    }
}

/// An SQLite store keeps search history and session memory in a sibling
/// `.activity.db` file. Opening it moves the rows an earlier version wrote
/// to the main file, once: a second open copies nothing again, and rows left
/// in the main file after the move (a crash between the two steps) are
/// deleted, not copied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_and_sessions_move_to_the_activity_file_once() {
    use recall_core::ports::SearchHistoryStore;
    use sea_orm::{ConnectionTrait, Statement};
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("recall.db").display());
    let main = SqlDatabase::connect(&url).await.unwrap();
    let user = uuid::Uuid::new_v4();
    let record = |text: &str| recall_core::SearchRecord {
        user_id: user,
        query_text: text.into(),
        query_type: "CHUNKS".into(),
        answers: vec![(None, format!("answer to {text}"))],
    };
    let old = SqlRelationalStore::new(main.clone());
    old.record_search(&record("first")).await.unwrap();
    let session_row = format!(
        "INSERT INTO session_records (session_id, user_id, created_at, updated_at, version) VALUES ('s1', '{user}', 1, 1, 3)"
    );
    let count = |db: &SqlDatabase, sql: &str| {
        let (db, sql) = (db.clone(), sql.to_string());
        async move {
            let row = db.connection().query_one_raw(Statement::from_string(db.backend(), sql)).await.unwrap().unwrap();
            row.try_get_by_index::<i64>(0).unwrap()
        }
    };
    main.connection().execute_raw(Statement::from_string(main.backend(), session_row.clone())).await.unwrap();

    let activity = SqlDatabase::connect_activity(&url).await.unwrap().expect("an SQLite file has an activity file");
    assert!(dir.path().join("recall.activity.db").exists());
    let moved = SqlRelationalStore::new(activity.clone());
    let texts: Vec<String> = moved.search_history(user).await.unwrap().into_iter().map(|r| r.text).collect();
    assert_eq!(texts, ["first", "answer to first"], "the history moved");
    assert_eq!(count(&activity, "SELECT COUNT(*) FROM session_records WHERE version = 3").await, 1, "sessions moved");
    assert!(old.search_history(user).await.unwrap().is_empty(), "nothing is left in the main file");
    assert_eq!(count(&main, "SELECT COUNT(*) FROM session_records").await, 0);

    // New writes land in the activity file only.
    moved.record_search(&record("second")).await.unwrap();
    assert_eq!(count(&main, "SELECT COUNT(*) FROM queries").await, 0);

    // A leftover in the main file (as if a crash came between the move and
    // the clean-up) is deleted on the next open, not copied again.
    main.connection().execute_raw(Statement::from_string(main.backend(), session_row)).await.unwrap();
    let again = SqlDatabase::connect_activity(&url).await.unwrap().unwrap();
    assert_eq!(count(&again, "SELECT COUNT(*) FROM session_records").await, 1, "moved once");
    assert_eq!(count(&main, "SELECT COUNT(*) FROM session_records").await, 0, "the leftover is gone");
    assert_eq!(SqlRelationalStore::new(again).search_history(user).await.unwrap().len(), 4);

    assert!(SqlDatabase::connect_activity("sqlite://:memory:").await.unwrap().is_none());
}
