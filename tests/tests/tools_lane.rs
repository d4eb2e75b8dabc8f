#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The recall "tools" lane end to end (docs/tools-lane.md): text-to-SQL over
//! a real SQLite file (and Postgres when RECALL_TEST_POSTGRES_URL is set)
//! with the SQL written by a scripted OpenAI-compatible server over real
//! HTTP — a refused write asked for again, the LIMIT clamped, the rows as a
//! tools entry — the gate, on_empty, unknown connections, and the driver
//! refusing writes on its own.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::fake_llm::{scripted_llm, Script};
use common::{me, offline_builder};
use recall_core::tools::{parse_connections, SqlConnector, ToolSettings};
use recall_core::RecallResponse;
use recall_engine::{Engine, EngineConfig, RecallRequest, RememberInput};
use recall_openai::{OpenAiChat, OpenAiConfig};
use recall_sql::SqlToolConnector;
use serde_json::json;

async fn shop_db(dir: &std::path::Path) -> String {
    let path = dir.join("shop.db");
    let pool = sea_orm::sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=rwc", path.display())).await.unwrap();
    for sql in [
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT)",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), total REAL)",
        "INSERT INTO customers (name, city) VALUES ('Ann', 'Oslo'), ('Bob', 'Rome'), ('Cem', NULL)",
        "INSERT INTO orders (customer_id, total) VALUES (1, 12.5), (2, 3.0)",
    ] {
        sea_orm::sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;
    format!("sqlite:///{}", path.display().to_string().trim_start_matches('/'))
}

fn settings(dsn: &str, enabled: bool) -> ToolSettings {
    let connections =
        parse_connections(&json!({"shop": {"connection_string": dsn, "max_rows": 2}}).to_string()).unwrap();
    ToolSettings { enabled, connections, ..ToolSettings::default() }
}

async fn engine(script: Arc<Script>, tools: ToolSettings) -> Engine {
    let chat = OpenAiChat::new(OpenAiConfig::new(scripted_llm(script).await, "gpt-test", Some("sk".into()))).unwrap();
    offline_builder(EngineConfig { tools, ..Default::default() }, 64)
        .llm(Some(Arc::new(chat)))
        .sql_connector(Arc::new(SqlToolConnector { statement_timeout: Duration::from_secs(5) }))
        .build()
        .unwrap()
}

fn tools_request(query: &str) -> RecallRequest {
    RecallRequest::new(query).scope(["tools"])
}

#[tokio::test]
async fn a_question_becomes_one_read_only_select_and_a_tools_entry() {
    let dir = tempfile::tempdir().unwrap();
    let dsn = shop_db(dir.path()).await;
    let script = Script::new(
        ["```sql\nDELETE FROM customers;\n```", "SELECT name, city FROM customers ORDER BY name LIMIT 500;"],
        "unused",
    );
    let engine = engine(script.clone(), settings(&dsn, true)).await;
    let results = engine.recall(&me(&engine).await, &tools_request("Where do our customers live?")).await.unwrap();
    let [RecallResponse::Tools(entry)] = results.as_slice() else { panic!("{results:?}") };
    assert!(entry.success, "{entry:?}");
    assert_eq!(entry.tool_name, "text_to_sql");
    assert_eq!(entry.question, "Where do our customers live?");
    assert_eq!(
        entry.text,
        "[shop] SELECT name, city FROM customers ORDER BY name LIMIT 2 → 2 row(s)\nname | city\nAnn | Oslo\nBob | Rome"
    );
    let structured = entry.structured.clone().unwrap();
    assert_eq!(structured["attempts"], 2, "the refused DELETE cost one attempt");
    assert_eq!(structured["dialect"], "sqlite");
    assert_eq!(structured["rows"], json!([{"name": "Ann", "city": "Oslo"}, {"name": "Bob", "city": "Rome"}]));

    // The model saw the schema, and the second attempt saw why the first was refused.
    let first = script.system_prompt(0);
    assert!(first.contains("TABLE customers\n  id INTEGER\n  name TEXT\n  city TEXT\n  PRIMARY KEY (id)"), "{first}");
    assert!(first.contains("FOREIGN KEY (customer_id) REFERENCES customers (id)"), "{first}");
    assert!(first.contains("No attempts yet"));
    let second = script.system_prompt(1);
    assert!(second.contains("Only SELECT statements are allowed; got a statement starting with 'DELETE'."), "{second}");
    assert_eq!(script.user_prompt(1), "Where do our customers live?");

    // Nothing was deleted.
    let pool = sea_orm::sqlx::SqlitePool::connect(&format!("sqlite://{}", dir.path().join("shop.db").display()))
        .await
        .unwrap();
    let n: i64 = sea_orm::sqlx::query_scalar("SELECT COUNT(*) FROM customers").fetch_one(&pool).await.unwrap();
    assert_eq!(n, 3);
}

#[tokio::test]
async fn every_attempt_failing_is_an_unsuccessful_entry_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let dsn = shop_db(dir.path()).await;
    let script = Script::new(["SELECT nope FROM customers"], "DROP TABLE customers");
    let engine = engine(script.clone(), settings(&dsn, true)).await;
    let results = engine.recall(&me(&engine).await, &tools_request("Drop it")).await.unwrap();
    let [RecallResponse::Tools(entry)] = results.as_slice() else { panic!("{results:?}") };
    assert!(!entry.success);
    assert_eq!(
        entry.text,
        "[shop] text-to-SQL failed: Only SELECT statements are allowed; got a statement starting with 'DROP'."
    );
    let structured = entry.structured.clone().unwrap();
    assert_eq!(
        (structured["attempts"].clone(), structured["sql"].clone()),
        (json!(3), json!("SELECT nope FROM customers LIMIT 2"))
    );
    assert!(script.system_prompt(1).contains("SQL execution failed") || script.system_prompt(1).contains("failed"));
}

#[tokio::test]
async fn the_gate_on_empty_and_unknown_connections() {
    let dir = tempfile::tempdir().unwrap();
    let dsn = shop_db(dir.path()).await;
    let script = Script::new(Vec::<String>::new(), "SELECT name FROM customers");

    // Off by default: a typed 422.
    let off = engine(script.clone(), settings(&dsn, false)).await;
    let err = off.recall(&me(&off).await, &tools_request("customers")).await.unwrap_err();
    assert_eq!((err.name(), err.http_status()), ("ToolCallsDisabledError", 422));
    // on_empty after a lane that found something: skipped, so never refused.
    off.remember(&me(&off).await, "notes", &[RememberInput::text("Ann lives in Oslo.")]).await.unwrap();
    let mut after_graph =
        RecallRequest::new("Ann Oslo").scope(["graph", "tools"]).query_type(recall_core::SearchType::Chunks);
    after_graph.tools_trigger = "on_empty".into();
    let results = off.recall(&me(&off).await, &after_graph).await.unwrap();
    assert!(!results.is_empty() && results.iter().all(|r| r.source() == "graph"), "{results:?}");
    assert!(script.requests().is_empty(), "no SQL was asked for");

    // A connection nobody configured fails the recall.
    let on = engine(script.clone(), settings(&dsn, true)).await;
    let mut unknown = tools_request("customers");
    unknown.tool_connections = Some(vec!["crm".into()]);
    let err = on.recall(&me(&on).await, &unknown).await.unwrap_err();
    assert_eq!(err.name(), "ToolConnectionNotFoundError");
    assert_eq!(err.to_string(), "No authorized tool connection named 'crm' for this user.");
}

/// A statement of the test's own set-up on Postgres.
async fn pg_exec(pool: &sea_orm::sqlx::PgPool, sql: String) {
    sea_orm::sqlx::query(sea_orm::sqlx::AssertSqlSafe(sql)).execute(pool).await.unwrap();
}

#[tokio::test]
async fn the_driver_refuses_writes_whatever_the_guard_lets_through() {
    let dir = tempfile::tempdir().unwrap();
    let dsn = shop_db(dir.path()).await;
    let connector = SqlToolConnector { statement_timeout: Duration::from_secs(5) };
    let shop = settings(&dsn, true).connections.remove(0);
    let db = connector.open(&shop).await.unwrap();
    let err = db.select("UPDATE customers SET city = 'Paris'", 10, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("readonly") || err.to_string().contains("read-only"), "{err}");
    let rows = db
        .select("SELECT COUNT(*) AS n FROM customers WHERE city = 'Paris'", 10, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(rows.rows, vec![vec![json!(0)]]);

    let Ok(url) = std::env::var("RECALL_TEST_POSTGRES_URL") else {
        eprintln!("RECALL_TEST_POSTGRES_URL unset: the Postgres half is skipped");
        return;
    };
    let table = format!("tools_lane_{}", uuid::Uuid::new_v4().simple());
    let pool = sea_orm::sqlx::PgPool::connect(&url).await.unwrap();
    pg_exec(&pool, format!("CREATE TABLE {table} (id INT PRIMARY KEY, name TEXT, seen DATE)")).await;
    pg_exec(&pool, format!("INSERT INTO {table} VALUES (1, 'Ann', '2026-12-03')")).await;
    let pg = parse_connections(&json!({"pg": url}).to_string()).unwrap().remove(0);
    let db = connector.open(&pg).await.unwrap();
    assert_eq!(db.dialect(), "postgresql");
    let schema = db.schema(Some(std::slice::from_ref(&table)), 50).await.unwrap();
    assert_eq!(schema[0].primary_key, ["id"]);
    let rows = db.select(&format!("SELECT name, seen, id FROM {table}"), 10, Duration::from_secs(5)).await.unwrap();
    assert_eq!(rows.columns, ["name", "seen", "id"], "column order is kept");
    assert_eq!(rows.rows, vec![vec![json!("Ann"), json!("2026-12-03"), json!(1)]]);
    // A SELECT that writes (a sequence step) is refused by the session itself.
    pg_exec(&pool, format!("CREATE SEQUENCE {table}_seq")).await;
    let err = db.select(&format!("SELECT nextval('{table}_seq')"), 10, Duration::from_secs(5)).await.unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    pg_exec(&pool, format!("DROP SEQUENCE {table}_seq")).await;
    pg_exec(&pool, format!("DROP TABLE {table}")).await;
}
