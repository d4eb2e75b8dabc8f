#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The `recall` binary, run as a user would: exit codes, stdout, stderr.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::recall;

use serde_json::Value;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn samples() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples").display().to_string()
}

#[test]
fn remember_recall_graph_and_forget_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // Before anything is remembered: a precondition error, and nothing is created.
    let o = recall(d, &["recall", "anything"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Error [RecallPreconditionError] (HTTP 422): Recall prerequisites not met"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("recall.db").exists());
    let o = recall(d, &["datasets"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("No datasets yet"));

    // An unsupported file is refused before storage is opened.
    let pdf = d.join("x.pdf");
    std::fs::write(&pdf, b"%PDF").unwrap();
    let o = recall(d, &["remember", "--dataset", "docs", pdf.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("[UnsupportedFileTypeError] (HTTP 415)"), "{}", stderr(&o));
    assert!(!d.join("recall.db").exists());

    let o = recall(d, &["remember", "--dataset", "docs", &samples()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Remembered 4 item(s) in dataset 'docs'"), "{}", stdout(&o));
    // The command closed its databases: SQLite checkpointed the WAL and removed it.
    for leftover in ["recall.db-wal", "recall.db-shm", "recall.activity.db-wal", "recall.activity.db-shm"] {
        assert!(!d.join(leftover).exists(), "{leftover} left behind");
    }
    let o = recall(d, &["remember", "--dataset", "docs", &samples()]);
    assert!(
        stdout(&o).contains("Remembered 0 item(s)") && stdout(&o).contains("4 already remembered"),
        "{}",
        stdout(&o)
    );

    let o = recall(d, &["recall", "How do I keep a sourdough starter alive?", "--top-k", "2", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let results = results.as_array().unwrap();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["source"], "graph");
    assert_eq!(results[0]["search_type"], "CHUNKS");
    assert_eq!(results[0]["metadata"]["document_name"], "sourdough.txt");
    assert!(results[0]["score"].as_f64().unwrap() <= results[1]["score"].as_f64().unwrap());

    let o = recall(d, &["recall", "bees", "--top-k", "0"]);
    assert!(
        stderr(&o).contains("Error [QueryValidationError] (HTTP 422): top_k must be a positive integer."),
        "{}",
        stderr(&o)
    );
    let o = recall(d, &["recall", "bees", "--dataset", "nope", "--dataset", "docs"]);
    assert!(stderr(&o).contains("[DatasetNotFoundError] (HTTP 404): Dataset(s) not found: 'nope'."), "{}", stderr(&o));
    let o = recall(d, &["recall", "bees", "--type", "SPLINES"]);
    assert!(stderr(&o).contains("Unknown search type 'SPLINES'"), "{}", stderr(&o));

    let o = recall(d, &["graph", "--dataset", "docs"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let graph: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let nodes = graph["nodes"].as_array().unwrap();
    let types: std::collections::BTreeSet<&str> = nodes.iter().map(|n| n["type"].as_str().unwrap()).collect();
    for t in ["TextDocument", "DocumentChunk", "Entity", "EntityType", "TextSummary", "GlobalContextSummary"] {
        assert!(types.contains(t), "graph has {t} nodes: {types:?}");
    }
    assert!(nodes.iter().any(|n| n["type"] == "Entity" && n["name"] == "jupiter"));
    let edge = &graph["edges"].as_array().unwrap()[0];
    for key in ["source", "target", "relationship_name", "edge_text"] {
        assert!(edge.get(key).is_some(), "edges carry {key}");
    }
    let o = recall(d, &["graph", "--dataset", "docs", "--format", "dot"]);
    assert!(stdout(&o).starts_with("digraph recall {"));
    assert!(stdout(&o).contains("-> "));

    let o = recall(d, &["cognify", "--dataset", "docs"]);
    assert!(stdout(&o).contains("0 item(s) built (0 chunk(s)), 4 already built"), "{}", stdout(&o));

    let o = recall(d, &["forget", "--dataset", "docs", "--document", "sourdough.txt"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Forgot document 'sourdough.txt'"));
    let o = recall(d, &["recall", "sourdough starter", "--json"]);
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(results.as_array().unwrap().iter().all(|r| r["metadata"]["document_name"] != "sourdough.txt"));

    let o = recall(d, &["forget", "--dataset", "docs"]);
    assert!(o.status.success());
    let o = recall(d, &["datasets", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&o)).unwrap(), serde_json::json!([]));
    let o = recall(d, &["forget", "--dataset", "docs"]);
    assert!(stderr(&o).contains("[DatasetNotFoundError] (HTTP 404)"));
}

#[test]
fn users_share_datasets_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let as_user = |email: &str, args: &[&str]| {
        let mut all = vec!["--user", email];
        all.extend_from_slice(args);
        recall(d, &all)
    };
    let o = as_user("alice@example.com", &["remember", "--dataset", "notes", "--text", "The vault code is 4711."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = as_user("bob@example.com", &["remember", "--dataset", "notes", "--text", "Tulips grow by the bakery."]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Each sees their own "notes" only.
    let o = as_user("bob@example.com", &["recall", "vault code tulips", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Tulips") && !stdout(&o).contains("vault"), "{}", stdout(&o));
    let o = as_user("alice@example.com", &["datasets", "--json"]);
    let listing: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let alice_notes = listing[0]["id"].as_str().unwrap().to_string();
    assert_eq!(listing.as_array().unwrap().len(), 1);
    assert_eq!(listing[0]["owner_email"], "alice@example.com");
    assert_eq!(listing[0]["permissions"], serde_json::json!(["read", "write", "delete", "share"]));

    // By id, bob is refused until alice shares.
    let o = as_user("bob@example.com", &["recall", "vault", "--dataset-id", &alice_notes]);
    assert!(
        stderr(&o).contains("Error [PermissionDeniedError] (HTTP 403): Request owner does not have necessary permission: [read] for all datasets requested."),
        "{}",
        stderr(&o)
    );
    let o = as_user(
        "bob@example.com",
        &["share", "--dataset-id", &alice_notes, "--with", "bob@example.com", "--permission", "read"],
    );
    assert!(stderr(&o).contains("[share] for all datasets requested."), "{}", stderr(&o));
    let o = as_user(
        "alice@example.com",
        &["share", "--dataset", "notes", "--with", "bob@example.com", "--permission", "admin"],
    );
    assert!(
        stderr(&o)
            .contains("Error [PermissionNotFoundError] (HTTP 403): admin not found or not in allowed permission types"),
        "{}",
        stderr(&o)
    );
    let o = as_user(
        "alice@example.com",
        &["share", "--dataset", "notes", "--with", "nobody@example.com", "--permission", "read"],
    );
    assert!(stderr(&o).contains("User 'nobody@example.com' not found."), "{}", stderr(&o));
    let o = as_user(
        "alice@example.com",
        &["share", "--dataset", "notes", "--with", "bob@example.com", "--permission", "read"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Granted read on dataset 'notes'"), "{}", stdout(&o));

    let o = as_user("bob@example.com", &["recall", "vault", "--dataset-id", &alice_notes, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("vault"), "{}", stdout(&o));
    let o = as_user("bob@example.com", &["datasets"]);
    assert!(stdout(&o).contains("(shared by alice@example.com; read)"), "{}", stdout(&o));
    assert!(stdout(&o).contains("(owned; read, write, delete, share)"), "{}", stdout(&o));
    // Read is not delete.
    let o = as_user("bob@example.com", &["forget", "--dataset-id", &alice_notes]);
    assert!(stderr(&o).contains("[delete] for all datasets requested."), "{}", stderr(&o));

    let o = as_user(
        "alice@example.com",
        &["unshare", "--dataset", "notes", "--with", "bob@example.com", "--permission", "read"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = as_user("bob@example.com", &["recall", "vault", "--dataset-id", &alice_notes]);
    assert!(stderr(&o).contains("[PermissionDeniedError] (HTTP 403)"), "{}", stderr(&o));

    // A malformed --user is refused before anything is written.
    let o = as_user("not an email", &["remember", "--dataset", "x", "--text", "hi"]);
    assert!(stderr(&o).contains("Invalid user email 'not an email'"), "{}", stderr(&o));
    // RECALL_USER is the default for --user.
    let o = Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(d)
        .args(["datasets", "--json"])
        .env("RECALL_USER", "alice@example.com")
        .output()
        .unwrap();
    let listing: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(listing[0]["id"], alice_notes.as_str());
}

#[test]
fn every_search_option_is_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = recall(d, &["remember", "--dataset", "docs", &samples()]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Lexical search finds the exact term.
    let o = recall(d, &["recall", "borrow checker", "--type", "CHUNKS_LEXICAL", "--top-k", "1", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(results[0]["metadata"]["document_name"], "rust-ownership.md", "{results}");
    assert_eq!(results[0]["score"], Value::Null);

    // only_context on a completion type needs no LLM: the prompt pair comes back.
    let o = recall(
        d,
        &[
            "search",
            "What does the borrow checker enforce?",
            "--only-context",
            "--system-prompt",
            "Be terse.",
            "--verbose",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // Legacy search: Cognee's backwards-compatible shape, one object per dataset.
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(results.as_array().unwrap().len(), 1);
    assert!(results[0]["dataset_id"].is_string() && results[0]["dataset_name"].is_string());
    assert_eq!(results[0]["system_prompt_result"], "Be terse.", "{results}");
    assert!(results[0]["user_prompt_result"].as_str().unwrap().contains("borrow checker"), "{results}");
    assert!(results[0]["objects_result"].as_array().is_some_and(|o| !o.is_empty()), "{results}");
    assert!(results[0]["user_prompt_result"].as_str().unwrap().contains("Connections:"));
    // Not verbose: the prompt is the dataset's search_result.
    let o = recall(d, &["search", "What does the borrow checker enforce?", "--only-context"]);
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(results[0]["search_result"].as_str().unwrap().contains("Connections:"), "{results}");
    // search() checks the node-set operator; recall does not.
    let o = recall(d, &["search", "q", "--node-name-filter-operator", "XOR"]);
    assert!(stderr(&o).contains("Invalid node_name_filter_operator: 'XOR'."), "{}", stderr(&o));

    // retriever_specific_config and node filters parse; bad values are typed errors.
    let o = recall(
        d,
        &["recall", "starter", "--type", "HYBRID_COMPLETION", "--only-context", "--config", "chunks_top_k=2", "--json"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let text = serde_json::from_str::<Value>(&stdout(&o)).unwrap()[0]["text"].as_str().unwrap().to_string();
    assert!(text.contains("## Relevant passages"), "{text}");
    let o = recall(
        d,
        &["recall", "starter", "--type", "HYBRID_COMPLETION", "--only-context", "--config", "chunks_top_k=lots"],
    );
    assert!(stderr(&o).contains("[InvalidRetrieverConfig] (HTTP 422)"), "{}", stderr(&o));
    let o = recall(d, &["recall", "starter", "--type", "HYBRID_COMPLETION", "--wide-search-top-k", "5"]);
    assert!(
        stderr(&o).contains("[InvalidHybridSearchConfig] (HTTP 422): wide_search_top_k requires query_type=SearchType.GRAPH_COMPLETION."),
        "{}",
        stderr(&o)
    );
    let schema = d.join("schema.json");
    std::fs::write(&schema, "{not json").unwrap();
    let o = recall(d, &["recall", "x", "--type", "RAG_COMPLETION", "--response-schema", schema.to_str().unwrap()]);
    assert!(stderr(&o).contains("[CogneeValidationError] (HTTP 422): response_schema: "), "{}", stderr(&o));
    std::fs::write(&schema, r#"{"type": "object", "properties": {"a": {"allOf": []}}}"#).unwrap();
    let o = recall(d, &["recall", "x", "--type", "RAG_COMPLETION", "--response-schema", schema.to_str().unwrap()]);
    assert!(
        stderr(&o)
            .contains("[CogneeValidationError] (HTTP 422): response_schema: unsupported JSON Schema keyword: allOf"),
        "{}",
        stderr(&o)
    );
    let o = recall(d, &["recall", "MATCH (n) RETURN n", "--type", "CYPHER"]);
    assert!(stderr(&o).contains("[SearchTypeDisabledError] (HTTP 403)"), "{}", stderr(&o));

    // Every graph search above that ran was recorded.
    let o = recall(d, &["history", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let questions: Vec<&str> =
        rows.as_array().unwrap().iter().filter(|r| r["user"] == "user").map(|r| r["text"].as_str().unwrap()).collect();
    let asked = "What does the borrow checker enforce?";
    assert_eq!(questions, vec!["borrow checker", asked, asked, "starter"]);
    assert!(d.join("recall.activity.db").exists(), "history is kept beside the store, in its own file");
}

#[test]
fn route_explains_the_automatic_choice() {
    let dir = tempfile::tempdir().unwrap();
    for (query, search_type, rule) in [
        ("\"waggle dance\"", "CHUNKS_LEXICAL", "quoted_phrase"),
        ("What happened in 1843?", "TEMPORAL", "time_scoped_question"),
        ("How do bees share directions?", "HYBRID_COMPLETION", "default"),
    ] {
        let o = recall(dir.path(), &["route", query]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["search_type"], search_type, "{query}");
        assert_eq!(v["rule"], rule, "{query}");
    }
    let o = recall(dir.path(), &["skill-gate", "How do I rotate the API key?"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"fired": true, "score": 5.0, "matched": ["E1_how_do_i", "E7_ops_verb"], "fragments": ["How do I", "rotate"]})
    );
    let o = recall(dir.path(), &["skill-gate", "不同环境怎么部署"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["fired"], false);
    assert!(!dir.path().join("recall.db").exists(), "route and skill-gate open no storage");
}

#[test]
fn skills_are_added_listed_and_offered_with_an_explanation() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("data");
    let skill_dir = dir.path().join("skills").join("rotate");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: Rotate API keys\ndescription: Rotate keys without downtime.\n---\n1. Create the new key.\n2. Revoke the old one.\n",
    )
    .unwrap();
    let o = recall(&d, &["remember", "--dataset", "ops", "--text", "API keys expire every 90 days."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = recall(&d, &["skills", "add", "--dataset", "ops", dir.path().join("skills").to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let added: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(added["skills"][0]["name"], "Rotate API keys");

    let o = recall(&d, &["skills", "list", "--dataset", "ops", "--full", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(listed[0]["description"], "Rotate keys without downtime.");
    assert!(listed[0]["procedure"].as_str().unwrap().contains("Revoke the old one."));

    let o = recall(&d, &["recall", "How do I rotate the API keys?", "--dataset", "ops", "--json", "--explain"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let results = v["results"].as_array().unwrap();
    let last = results.last().unwrap();
    assert_eq!(last["source"], "skills", "{v}");
    assert_eq!(last["text"], "Rotate API keys: Rotate keys without downtime.");
    assert!(last["skill"].get("procedure").is_none());
    assert_eq!(v["explain"]["lanes"], serde_json::json!(["graph"]));
    assert_eq!(v["explain"]["search_type"], "CHUNKS");
    assert_eq!(v["explain"]["chosen_by"], "no_llm");
    assert_eq!(v["explain"]["skill_gate"], true);
    assert_eq!(v["explain"]["dataset_routing"]["outcome"], "not_applicable");
    let stages: Vec<&str> =
        v["explain"]["timings_ms"].as_array().unwrap().iter().map(|t| t["stage"].as_str().unwrap()).collect();
    for stage in ["resolve_datasets", "warmup_probe", "search", "lane:graph", "skill_gate"] {
        assert!(stages.contains(&stage), "{stage} in {stages:?}");
    }
    // The human form names the decisions too.
    let o = recall(&d, &["recall", "API keys", "--explain"]);
    let text = stdout(&o);
    assert!(text.contains("explain:") && text.contains("search type: CHUNKS (chosen by no_llm)"), "{text}");
}

/// `recall` with standard input and extra environment.
fn recall_with(data_dir: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_remove("RECALL_USER")
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn users_and_api_keys_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Few rounds: the default 600 000 are slow in a debug build.
    let env = [("API_KEY_HASH_ITERATIONS", "1000"), ("MAX_USER_API_KEYS", "2")];
    let run = |args: &[&str], stdin: &str| recall_with(d, args, stdin, &env);

    let o = run(&["user", "create", "ann@example.com", "--password-stdin", "--json"], "correct horse\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let created: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(created["email"], "ann@example.com");
    let o = run(&["user", "create", "ann@example.com"], "");
    assert!(stderr(&o).contains("User 'ann@example.com' already exists."), "{}", stderr(&o));
    let o = run(&["user", "create", "not-an-email"], "");
    assert!(stderr(&o).contains("[InvalidInputError] (HTTP 400)"), "{}", stderr(&o));
    let o = run(&["--user", "ann@example.com", "user", "password"], "short\n");
    assert!(stderr(&o).contains("at least 8 characters"), "{}", stderr(&o));

    // A key is printed once; the store keeps its hash only.
    let o = run(&["--user", "ann@example.com", "api-key", "create", "--name", "ci", "--json"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let key: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let secret = key["key"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 64);
    assert_eq!(key["label"], format!("{}****", &secret[..8]));
    assert_eq!(key["name"], "ci");
    let db = std::fs::read(d.join("recall.db")).unwrap();
    assert!(!db.windows(secret.len()).any(|w| w == secret.as_bytes()), "the key itself is never stored");

    let o = run(&["--user", "ann@example.com", "api-key", "create"], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["--user", "ann@example.com", "api-key", "create"], "");
    assert!(stderr(&o).contains("You have reached the maximum number of API keys."), "{}", stderr(&o));

    let o = run(&["--user", "ann@example.com", "api-key", "list", "--json"], "");
    let keys: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(keys.as_array().unwrap().len(), 2);
    assert!(!stdout(&o).contains(&secret), "a list never shows a key");
    // Another user neither sees nor revokes ann's keys.
    let o = run(&["--user", "bob@example.com", "api-key", "list"], "");
    assert!(stdout(&o).contains("No API keys."), "{}", stdout(&o));
    let id = key["id"].as_str().unwrap();
    let o = run(&["--user", "bob@example.com", "api-key", "revoke", id], "");
    assert!(stderr(&o).contains("[NotFoundError] (HTTP 404)"), "{}", stderr(&o));
    let o = run(&["--user", "ann@example.com", "api-key", "revoke", id], "");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["--user", "ann@example.com", "api-key", "list", "--json"], "");
    assert!(!stdout(&o).contains(id), "{}", stdout(&o));
}

/// A store built with the hashing embedder, then opened with the default
/// (local) model: recall names both models and how to repair it, and
/// `recall reembed` repairs it.
#[test]
fn a_model_change_is_caught_and_reembed_repairs_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let hashing = [("EMBEDDING_PROVIDER", "hashing")];
    let out = recall_with(d, &["remember", "--dataset", "notes", &samples()], "", &hashing);
    assert!(out.status.success(), "{}", stderr(&out));

    let out = recall(d, &["recall", "Which insect dances?", "--type", "CHUNKS"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("[EmbeddingModelMismatchError] (HTTP 409)"), "{err}");
    assert!(err.contains("'recall-hashing-v1-384'") && err.contains("'pocket-encoder/"), "both models named: {err}");
    assert!(err.contains("Both produce 384-dimensional vectors"), "{err}");
    assert!(err.contains("recall reembed --dataset"), "the remediation: {err}");

    let out = recall(d, &["reembed", "--dataset", "notes", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let outcome: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let collections = outcome["collections"].as_array().unwrap();
    assert!(collections.iter().any(|c| c["name"] == "DocumentChunk_text" && c["status"] == "reembedded"), "{outcome}");

    let out =
        recall(d, &["recall", "Which insect dances to share where flowers are?", "--type", "CHUNKS", "--top-k", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).to_lowercase().contains("bee"), "{}", stdout(&out));
    // Nothing left to do the second time.
    let out = recall(d, &["reembed", "--dataset", "notes"]);
    assert!(stdout(&out).contains("already on"), "{}", stdout(&out));
    // The old model now meets the same error the other way round.
    let out = recall_with(d, &["recall", "bees", "--type", "CHUNKS"], "", &hashing);
    assert!(stderr(&out).contains("EmbeddingModelMismatchError"), "{}", stderr(&out));
}

#[test]
fn the_tools_lane_reads_its_settings_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = recall(d, &["remember", "--dataset", "docs", "--text", "Ann lives in Oslo."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run = |env: &[(&str, String)]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_recall"));
        c.arg("--data-dir").arg(d).args(["recall", "Who lives in Oslo?", "--scope", "tools", "--json"]);
        c.env_remove("LLM_API_KEY").env_remove("TOOL_CALLS_ENABLED").env_remove("TOOL_SQL_CONNECTIONS");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // Off by default.
    let o = run(&[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("[ToolCallsDisabledError] (HTTP 422)"), "{}", stderr(&o));
    // On, over a configured SQLite file (here Recall's own, named on purpose): without an
    // LLM no SQL can be written, and the entry says so.
    let dsn = format!("sqlite://{}", d.join("recall.db").display());
    let o = run(&[("TOOL_CALLS_ENABLED", "true".into()), ("TOOL_SQL_CONNECTIONS", format!(r#"{{"own": "{dsn}"}}"#))]);
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(results[0]["source"], "tools", "{results}");
    assert_eq!(results[0]["success"], false);
    assert!(
        results[0]["text"].as_str().unwrap().starts_with("[own] text-to-SQL failed: SQL generation failed:"),
        "{results}"
    );
    assert_eq!(results[0]["structured"]["attempts"], 3);
    // A bad setting is refused at start.
    let o = run(&[("TOOL_CALLS_ENABLED", "true".into()), ("TOOL_SQL_CONNECTIONS", "[1]".into())]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("TOOL_SQL_CONNECTIONS must be a JSON object"), "{}", stderr(&o));
}

/// A chat server for one test: `AgentStep` calls get the steps in turn,
/// every other call `{}`; its base URL.
fn agent_llm(steps: Vec<String>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let steps = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::from(steps)));
            let app = axum::Router::new().route(
                "/v1/chat/completions",
                axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                    let steps = steps.clone();
                    async move {
                        let step = body["response_format"]["json_schema"]["name"] == "AgentStep";
                        let reply = if step { steps.lock().unwrap().pop_front() } else { None };
                        let content = reply.unwrap_or_else(|| "{}".to_string());
                        axum::Json(
                            serde_json::json!({"choices": [{"message": {"role": "assistant", "content": content}}]}),
                        )
                    }
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

#[test]
fn agentic_completion_answers_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = recall(d, &["remember", "--dataset", "ops", "--text", "Backups run every night at two."]);
    assert!(o.status.success(), "{}", stderr(&o));
    let endpoint = agent_llm(vec![
        serde_json::json!({"tool_call": {"tool_name": "memory_search", "arguments": {"query": "backups"}}}).to_string(),
        serde_json::json!({"final_answer": "Every night at two."}).to_string(),
    ]);
    let o = Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(d)
        .args(["search", "When do backups run?", "-t", "AGENTIC_COMPLETION", "-d", "ops", "--max-iter", "3"])
        .env("LLM_API_KEY", "sk-test")
        .env("LLM_ENDPOINT", &endpoint)
        // A key alone would switch the embedder to the endpoint's; keep the built-in one.
        .env("EMBEDDING_PROVIDER", "local")
        .env_remove("RECALL_USER")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let results: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(results[0]["dataset_name"], "ops", "{results}");
    assert_eq!(results[0]["search_result"], serde_json::json!(["Every night at two."]));
}

#[test]
fn doctor_names_the_adapters_and_checks_each_one() {
    let dir = tempfile::tempdir().unwrap();
    let ok = recall(dir.path(), &["doctor"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let out = stdout(&ok);
    assert!(out.contains("relational: Sqlite") && out.contains("llm:        none"), "{out}");
    for line in ["ok    relational", "ok    vector: lancedb", "ok    graph: sql-graph"] {
        assert!(out.lines().any(|l| l == line), "{line:?} missing: {out}");
    }

    // A graph store it cannot build fails the command, saying why.
    let bad = Command::new(env!("CARGO_BIN_EXE_recall"))
        .arg("--data-dir")
        .arg(dir.path())
        .arg("doctor")
        .env("RECALL_GRAPH_URL", "ftp://graph.invalid")
        .env_remove("LLM_API_KEY")
        .output()
        .unwrap();
    assert!(!bad.status.success(), "{}", stdout(&bad));
    assert!(stderr(&bad).contains("Unsupported graph_url 'ftp://graph.invalid'"), "{}", stderr(&bad));
}
