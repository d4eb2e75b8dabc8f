#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Property tests over every parser of user input (docs/reliability.md,
//! "Hostile input"): arbitrary text and JSON never panic, every rejection
//! is a typed error, and what is accepted keeps its invariants. The HTTP
//! part sends generated bodies to a real server and checks that each
//! answer is a typed JSON error or a success, never a dropped connection,
//! and that a rejected write leaves nothing behind.
//!
//! Bounded for CI (`PROPTEST_CASES`, 256 by default per property); a longer
//! run: `PROPTEST_CASES=20000 cargo test --workspace --test fuzz`.

mod common;

use std::sync::Arc;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use recall_core::session::validate_session_id;
use recall_memory::MemorySessionStore;
use recall_server::{AppState, ServerConfig};
use recall_sessions::{SessionConfig, Sessions};
use serde_json::{json, Map, Value};

/// Text with the characters that break parsers: markup, quotes, control
/// characters, combining marks, right-to-left text, CJK, emoji, newlines.
fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ \\t\\n\\r.,;:!?'\"`#*_~<>{}\\[\\]()|\\\\/-]{0,40}",
        "(---\\n|# |```|[a-z]{1,8}: |\\?|\u{0301}|\u{202e}|\u{0000}|语|🦀|\\.\\.\\.| ){0,60}",
        "[A-Za-z ]{0,30}(\\?|\\.)?( (when|where|who|why|how|list|compare|summarize|rules|skill)){0,6}",
    ]
}

/// Arbitrary JSON, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        hostile_text().prop_map(Value::from),
        prop_oneof![
            Just("object"),
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("array"),
            Just("boolean"),
            Just("null")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let keys = prop_oneof![
            "[a-z_]{1,12}",
            Just("type".to_string()),
            Just("properties".to_string()),
            Just("items".to_string()),
            Just("required".to_string()),
            Just("enum".to_string()),
            Just("$ref".to_string()),
            Just("anyOf".to_string()),
            Just("additionalProperties".to_string()),
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A schema-shaped object: `type: object` with generated properties, so the
/// compiler's deeper paths are reached, not only its first check.
fn schema_like() -> impl Strategy<Value = Value> {
    (prop::collection::btree_map("[a-z_]{1,8}", json_value(), 0..5), json_value()).prop_map(|(props, required)| {
        json!({"type": "object", "properties": props.into_iter().collect::<Map<_, _>>(), "required": required})
    })
}

proptest! {
    #![proptest_config(Config { failure_persistence: None, ..Config::default() })]

    #[test]
    fn the_router_routes_any_text(query in hostile_text()) {
        let decision = recall_routing::route_query(&query);
        prop_assert!(!decision.rule.is_empty());
    }

    #[test]
    fn the_skill_gate_judges_any_text(query in hostile_text()) {
        let _ = recall_skills::should_search_skills(&query);
    }

    #[test]
    fn skill_files_parse_or_are_refused(body in hostile_text(), front in json_value()) {
        // As written, and behind a front-matter block made of arbitrary YAML-ish text.
        let front = format!("---\n{}\n---\n{body}", serde_json::to_string(&front).unwrap());
        for text in [body.as_str(), front.as_str()] {
            match recall_skills::skill::parse_skill(text, "SKILL.md", "skills/x", "d") {
                Ok(skill) => prop_assert!(!skill.name.trim().is_empty()),
                Err(e) => prop_assert_eq!((e.name(), e.http_status()), ("InvalidInputError", 400), "{}", e),
            }
        }
    }

    #[test]
    fn response_schemas_compile_or_are_refused(schema in prop_oneof![json_value(), schema_like()], value in json_value()) {
        match recall_retrievers::schema::compile(&schema) {
            Ok(model) => {
                // Whatever an LLM answers is validated or refused, never a panic.
                let _ = model.validate(&value);
            }
            Err(e) => prop_assert_eq!((e.name(), e.http_status()), ("CogneeValidationError", 422), "{}", e),
        }
    }

    #[test]
    fn chunks_keep_every_character_within_the_budget(text in hostile_text(), max_words in 1usize..40) {
        let chunks = recall_engine::chunk_text(&text, max_words);
        // Nothing lost, nothing invented, in order: only whitespace may change.
        let visible = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        let joined: String = chunks.iter().map(|c| c.text.as_str()).collect();
        prop_assert_eq!(visible(&joined), visible(&text));
        for (i, c) in chunks.iter().enumerate() {
            prop_assert_eq!(c.chunk_index, i);
            prop_assert!(c.chunk_size >= 1 && c.chunk_size <= max_words, "{} words > {}", c.chunk_size, max_words);
            prop_assert!(!c.text.trim().is_empty());
        }
    }

    #[test]
    fn session_ids_are_accepted_or_refused_by_name(id in prop_oneof![hostile_text(), "[a-z]{250,300}"]) {
        match validate_session_id(&id) {
            Ok(()) => prop_assert!(!id.trim().is_empty() && id.len() <= 256),
            Err(e) => prop_assert_eq!(e.name(), "SessionParameterValidationError"),
        }
    }

    #[test]
    fn generated_sql_is_one_read_only_select_or_refused(sql in sql_like(), max_rows in 1usize..500) {
        use recall_engine::query::tools_lane::{ensure_limit, validate_select};
        match validate_select(&sql) {
            Ok(clean) => {
                let words = words_outside_literals(&clean);
                prop_assert!(matches!(words.first().map(String::as_str), Some("select" | "with")), "{}", clean);
                for forbidden in ["insert", "update", "delete", "drop", "alter", "create", "set", "pragma", "attach"] {
                    prop_assert!(!words.iter().any(|w| w == forbidden), "{} in {}", forbidden, clean);
                }
                let limited = ensure_limit(&clean, max_rows);
                let limits: Vec<usize> = limited
                    .to_lowercase()
                    .split("limit")
                    .skip(1)
                    .filter_map(|rest| {
                        let digits: String = rest.trim_start().chars().take_while(char::is_ascii_digit).collect();
                        digits.parse().ok()
                    })
                    .collect();
                prop_assert!(!limits.is_empty() && limits.iter().all(|n| *n <= max_rows), "{}", limited);
            }
            Err(reason) => prop_assert!(!reason.is_empty()),
        }
    }

    #[test]
    fn tool_connections_parse_or_are_refused(value in json_value(), dsn in hostile_text()) {
        for text in [value.to_string(), json!({"db": dsn}).to_string()] {
            match recall_core::tools::parse_connections(&text) {
                Ok(connections) => {
                    for c in connections {
                        prop_assert!(matches!(c.provider.as_str(), "postgres" | "sqlite"));
                        prop_assert!(!c.name.trim().is_empty());
                    }
                }
                Err(e) => prop_assert_eq!((e.name(), e.http_status()), ("InvalidInputError", 400), "{}", e),
            }
        }
    }

    #[test]
    fn agent_steps_parse_or_say_why(reply in json_value()) {
        if let Err(reason) = recall_retrievers::agentic::AgentStep::parse(reply) {
            prop_assert!(!reason.is_empty());
        }
    }

    #[test]
    fn any_client_name_gives_a_dataset_name(name in hostile_text()) {
        let dataset = recall_mcp::agent_dataset(&name);
        prop_assert!(dataset.ends_with("_memory") && dataset.len() > "_memory".len(), "{}", dataset);
        prop_assert!(dataset.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'), "{}", dataset);
    }

    #[test]
    fn recall_requests_deserialize_or_are_refused(body in json_value()) {
        // The wire model of POST /api/v1/recall: a typed error, never a panic.
        let _ = serde_json::from_value::<recall_api::RecallBody>(body);
    }
}

/// Text that looks like SQL a model might write, good and bad.
fn sql_like() -> impl Strategy<Value = String> {
    prop_oneof![
        hostile_text(),
        r"(```sql\n)?(SELECT|select|WITH x AS \(SELECT 1\)|DELETE|update|drop table)( [a-z_]{1,8}| \*| ,| FROM t| WHERE a = '[^']{0,6}'| LIMIT [0-9]{1,4}| limit 0| ;| --[a-z ]{0,6}\n| /\*[a-z; ]{0,6}\*/| SET| updated_at| \(SELECT b FROM u LIMIT 900\)){0,8}(;)?(\n```)?",
    ]
}

/// The lower-cased words of SQL outside its single-quoted literals.
fn words_outside_literals(sql: &str) -> Vec<String> {
    let mut outside = String::new();
    let mut quoted = false;
    for c in sql.chars() {
        if c == '\'' {
            quoted = !quoted;
            outside.push(' ');
        } else if !quoted {
            outside.push(c);
        }
    }
    outside
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// How many cases the HTTP properties send (the server is shared).
fn http_cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}

/// Generated bodies for one route: mostly objects with the route's own field
/// names holding arbitrary values, some arbitrary JSON, some raw bytes.
fn bodies(fields: &'static [&'static str], seed: u64) -> Vec<Vec<u8>> {
    let object = prop::collection::btree_map(prop::sample::select(fields), json_value(), 0..fields.len())
        .prop_map(|m| serde_json::to_vec(&m.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>()));
    let strategy = prop_oneof![
        6 => object.prop_map(|b| b.unwrap()),
        2 => json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
    ];
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        proptest::test_runner::TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed_bytes(seed)),
    );
    (0..http_cases()).map(|_| strategy.new_tree(&mut runner).unwrap().current()).collect()
}

fn seed_bytes(seed: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_answers_every_generated_body_with_json() {
    let raw = tempfile::tempdir().unwrap();
    let config = recall_engine::EngineConfig {
        chunk_size: 40,
        raw_data_dir: Some(raw.path().to_path_buf()),
        ..Default::default()
    };
    let sessions = Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig::default());
    let engine = common::offline_builder(config, 64).sessions(Arc::new(sessions)).build().unwrap();
    let me = common::me(&engine).await;
    let key = common::accounts(&engine).create_api_key(&me, None).await.unwrap().key;
    engine
        .remember(
            &me,
            recall_core::DatasetRef::Name("fuzz".into()),
            &[recall_engine::RememberInput::text("Bees dance to share where flowers are.")],
        )
        .await
        .unwrap();
    let state = AppState::prepare(common::app(&engine), ServerConfig::new(), me.clone()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(recall_server::serve(listener, state, std::future::pending()));
    let client = reqwest::Client::new();

    const RECALL: &[&str] = &[
        "query",
        "search_type",
        "query_type",
        "datasets",
        "dataset_ids",
        "top_k",
        "only_context",
        "scope",
        "session_id",
        "node_name",
        "system_prompt",
        "response_schema",
        "retriever_specific_config",
        "include_references",
        "context_profile",
        "stream",
    ];
    const ENTRY: &[&str] = &["entry", "session_id", "dataset_name", "dataset_id"];
    let routes: [(&str, &[&str], u64); 4] = [
        ("/api/v1/recall", RECALL, 1),
        ("/api/v1/search", RECALL, 2),
        ("/api/v1/remember/entry", ENTRY, 3),
        ("/api/v1/improve", &["dataset_name", "dataset_id", "session_ids", "feedback_alpha"], 4),
    ];
    let sessions_before = engine.session_memory().unwrap().list_sessions(&me).await.unwrap().len();
    let mut stored = 0;
    for (path, fields, seed) in routes {
        for body in bodies(fields, seed) {
            let response = client
                .post(format!("http://{addr}{path}"))
                .header("X-Api-Key", &key)
                .header("Content-Type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap_or_else(|e| panic!("{path}: the connection failed on {}: {e}", String::from_utf8_lossy(&body)));
            let status = response.status();
            let content_type = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_string());
            let text = response.text().await.unwrap();
            let shown = String::from_utf8_lossy(&body);
            if content_type.as_deref() == Some("text/event-stream") {
                assert!(status.is_success(), "{path} {status}: {shown}");
                continue;
            }
            assert_eq!(content_type.as_deref(), Some("application/json"), "{path} {status}: {shown} -> {text}");
            let answer: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
            assert!(
                status.is_success() || status.is_client_error() || answer.get("error").is_some(),
                "{path} {status}: {shown} -> {text}"
            );
            if path == "/api/v1/remember/entry" && answer["status"] == "session_stored" {
                stored += 1;
            }
        }
    }
    // A rejected entry writes nothing: every session there is came from a stored one.
    let sessions_after = engine.session_memory().unwrap().list_sessions(&me).await.unwrap().len();
    assert!(sessions_after <= sessions_before + stored, "{sessions_before} + {stored} < {sessions_after}");
    let health = client.get(format!("http://{addr}/health")).send().await.unwrap();
    assert!(health.status().is_success(), "the server is still up");
}

/// The top-level keys of the compiled-in defaults.
fn config_keys() -> Vec<String> {
    let defaults = include_str!("../../config/default.toml");
    defaults
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.starts_with('#') && l.contains('='))
        .filter_map(|l| l.split('=').next().map(|k| k.trim().to_string()))
        .collect()
}

/// A TOML value: numbers (some out of range), booleans, strings (a JSON
/// string literal is a TOML basic string).
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| format!("{f:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        hostile_text().prop_map(|s| serde_json::to_string(&s).unwrap()),
        Just("\"\"".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
    ]
}

proptest! {
    #![proptest_config(Config { failure_persistence: None, ..Config::default() })]

    /// A config file with any value for any key loads or is refused, and
    /// every setting derived from a loaded one is a value or a typed error.
    #[test]
    fn config_values_load_or_are_refused(key in prop::sample::select(config_keys()), value in toml_value()) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("recall.toml");
        std::fs::write(&file, format!("{key} = {value}\n")).unwrap();
        let settings = match recall::Settings::load(Some(&file), &recall::Overrides::default()) {
            Ok(s) => s,
            Err(e) => {
                prop_assert_eq!(e.name(), "InvalidInputError", "{}", e);
                return Ok(());
            }
        };
        let typed = |e: recall_core::RecallError| (400..500).contains(&e.http_status());
        prop_assert!(settings.embedding_choice().err().is_none_or(typed));
        prop_assert!(settings.credentials().err().is_none_or(typed));
        prop_assert!(settings.session_config().err().is_none_or(typed));
        prop_assert!(settings.dataset_routing().err().is_none_or(typed));
        prop_assert!(settings.tool_settings().err().is_none_or(typed));
        prop_assert!(settings.mcp_recall_system_prompt().err().is_none_or(typed));
        let _ = (settings.prompt_dirs(), settings.llm_available(), settings.database_url(), settings.vector_uri());
    }

    #[test]
    fn user_emails_are_accepted_or_refused(email in prop_oneof![hostile_text(), "[a-z.+]{0,70}@[a-z.]{0,70}"]) {
        if let Err(e) = recall::validate_email(&email) {
            prop_assert_eq!(e.name(), "InvalidInputError");
        }
    }
}

/// Dataset names through `remember`: a name is taken or refused with a
/// typed error, and a refused one creates no dataset.
#[test]
fn dataset_names_are_taken_or_refused_and_a_refusal_writes_nothing() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let raw = tempfile::tempdir().unwrap();
    let config = recall_engine::EngineConfig {
        chunk_size: 40,
        raw_data_dir: Some(raw.path().to_path_buf()),
        ..Default::default()
    };
    let engine = common::offline_builder(config, 16).build().unwrap();
    let me = runtime.block_on(common::me(&engine));
    let cases = http_cases().min(64);
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    runner
        .run(&hostile_text(), |name| {
            runtime.block_on(async {
                let before = engine.access().datasets(&me).await.unwrap().len();
                let input = [recall_engine::RememberInput::text("A short note.")];
                match engine.remember(&me, recall_core::DatasetRef::Name(name.clone()), &input).await {
                    Ok(outcome) => prop_assert_eq!(outcome.dataset_name, name),
                    Err(e) => {
                        prop_assert_eq!(e.name(), "InvalidInputError", "{}", e);
                        prop_assert_eq!(engine.access().datasets(&me).await.unwrap().len(), before, "nothing created");
                    }
                }
                Ok(())
            })
        })
        .unwrap();
}
