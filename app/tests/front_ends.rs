#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! One use case, three front ends (docs/application.md): the same remember,
//! recall, search and forget through the `recall` command line, the HTTP
//! server (`recall serve`, over a real socket) and the MCP tools (`recall
//! mcp`, over its standard input and output), each on a store of its own.
//! Each front end only parses and renders, so the three stores end up the
//! same and the three answers carry the same evidence.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::mcp::{text_of, Client};
use common::recall;
use serde_json::{json, Value};

const FACT: &str = "The lighthouse keeper winds the clock every evening at six. \
The keeper's cat sleeps on the warm lamp room floor.";
const QUESTION: &str = "When does the keeper wind the clock?";

fn cli_json(dir: &Path, args: &[&str]) -> Value {
    let out = recall(dir, args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// What a store holds for `dataset`, without the ids that differ between
/// stores (a data item's id includes its owner's): the nodes by type and
/// name, and the relations by their endpoints' names.
/// Nodes as (type, name); relations as (source, relationship, target).
type Stored = (Vec<(String, String)>, Vec<(String, String, String)>);

fn stored(dir: &Path, dataset: &str) -> Stored {
    let graph = cli_json(dir, &["graph", "--dataset", dataset, "--format", "json"]);
    let names: BTreeMap<String, (String, String)> = graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let label = n["name"].as_str().or(n["text"].as_str()).unwrap_or_default().to_string();
            (n["id"].as_str().unwrap().to_string(), (n["type"].as_str().unwrap().to_string(), label))
        })
        .collect();
    let mut nodes: Vec<(String, String)> = names.values().cloned().collect();
    nodes.sort();
    let name = |id: &Value| names.get(id.as_str().unwrap()).map(|(t, n)| format!("{t}:{n}")).unwrap_or_default();
    let mut edges: Vec<(String, String, String)> = graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (name(&e["source"]), e["relationship_name"].as_str().unwrap().to_string(), name(&e["target"])))
        .collect();
    edges.sort();
    (nodes, edges)
}

fn dataset_names(dir: &Path) -> Vec<String> {
    let listed = cli_json(dir, &["datasets", "--json"]);
    let mut names: Vec<String> =
        listed.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

struct Http {
    server: std::process::Child,
    base: String,
    key: String,
    client: reqwest::Client,
}

impl Http {
    async fn start(dir: &Path) -> Http {
        let key = cli_json(dir, &["api-key", "create", "--json"])["key"].as_str().unwrap().to_string();
        let (server, base) = common::serve(dir).await;
        Http { server, base, key, client: reqwest::Client::new() }
    }

    async fn post_json(&self, path: &str, body: Value) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header("X-Api-Key", &self.key)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.json().await.unwrap()
    }

    async fn get_json(&self, path: &str) -> Value {
        let response =
            self.client.get(format!("{}{path}", self.base)).header("X-Api-Key", &self.key).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.json().await.unwrap()
    }

    async fn post_form(&self, path: &str, form: &[(&str, &str)]) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header("X-Api-Key", &self.key)
            .form(form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.json().await.unwrap()
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

fn mcp(dir: &Path) -> Client {
    let mut client = Client::start(dir);
    let init = client.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "parity", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "Recall", "{init}");
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    client
}

#[tokio::test]
async fn remember_recall_search_and_forget_agree_across_the_cli_http_and_mcp() {
    let (cli_dir, http_dir, mcp_dir) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (cli, http_store, mcp_store) = (cli_dir.path(), http_dir.path(), mcp_dir.path());
    let http = Http::start(http_store).await;
    let mut agent = mcp(mcp_store);

    // remember: the same text into "notes", then improve (the default everywhere).
    let out = recall(cli, &["remember", "--dataset", "notes", "--text", FACT]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).trim().is_empty(), "no improve warning");
    let answer = http.post_form("/api/v1/remember", &[("datasetName", "notes"), ("raw_data", FACT)]).await;
    assert_eq!(answer["status"], "completed", "{answer}");
    assert_eq!(answer["improve"]["status"], "completed", "HTTP reports the improve: {answer}");
    let stored_by_mcp = agent.call("remember", json!({"data": FACT, "dataset_name": "notes"}));
    assert_eq!(text_of(&stored_by_mcp), "Stored permanently in knowledge graph (dataset=notes, status=completed).");

    // The same stored state.
    let by_cli = stored(cli, "notes");
    assert!(!by_cli.0.is_empty() && !by_cli.1.is_empty(), "{by_cli:?}");
    assert_eq!(stored(http_store, "notes"), by_cli, "HTTP stored what the CLI stored");
    assert_eq!(stored(mcp_store, "notes"), by_cli, "MCP stored what the CLI stored");
    for dir in [cli, http_store, mcp_store] {
        assert_eq!(dataset_names(dir), ["notes"]);
    }
    // The listings agree: HTTP's and the MCP tool's match the CLI's.
    let http_list = http.get_json("/api/v1/datasets").await;
    assert_eq!(http_list.as_array().map(Vec::len), Some(1), "{http_list}");
    assert_eq!(http_list[0]["name"], "notes", "{http_list}");
    let listed_by_mcp = agent.call("list_datasets", json!({}));
    let listed_by_mcp = &listed_by_mcp["result"]["structuredContent"]["datasets"];
    assert_eq!(listed_by_mcp[0]["name"], "notes", "{listed_by_mcp}");
    assert_eq!(listed_by_mcp[0]["owned"], true, "{listed_by_mcp}");

    // improve: the same stages from the CLI and HTTP.
    let by_cli = cli_json(cli, &["improve", "--dataset", "notes", "--json"]);
    let by_http = http.post_json("/api/v1/improve", json!({"dataset_name": "notes"})).await;
    let stages = |v: &Value| -> Vec<(String, String)> {
        v["stages"].as_array().unwrap().iter().map(|s| (s["stage"].to_string(), s["status"].to_string())).collect()
    };
    assert_eq!(stages(&by_cli), stages(&by_http), "{by_cli} {by_http}");
    assert_eq!((by_cli["status"].clone(), by_http["status"].clone()), (json!("completed"), json!("completed")));

    // recall: the same evidence first.
    let cli_results = cli_json(cli, &["recall", QUESTION, "--type", "CHUNKS", "--top-k", "1", "--json"]);
    let evidence = cli_results[0]["text"].as_str().unwrap().to_string();
    assert!(evidence.contains("winds the clock"), "{cli_results}");
    let http_results =
        http.post_json("/api/v1/recall", json!({"query": QUESTION, "searchType": "CHUNKS", "topK": 1})).await;
    assert_eq!(http_results[0]["text"], json!(evidence), "{http_results}");
    let agent_results = agent.call("recall", json!({"query": QUESTION, "search_type": "CHUNKS", "top_k": 1}));
    assert!(text_of(&agent_results).contains(&format!("[graph] {evidence}")), "{agent_results}");

    // search (legacy): the same result shape and the same hit.
    let cli_search = cli_json(cli, &["search", QUESTION, "--type", "CHUNKS", "--top-k", "1"]);
    let http_search =
        http.post_json("/api/v1/search", json!({"query": QUESTION, "searchType": "CHUNKS", "topK": 1})).await;
    let agent_search = agent.call("search", json!({"query": QUESTION, "search_type": "CHUNKS", "top_k": 1}));
    let agent_search = agent_search["result"]["structuredContent"]["results"].clone();
    for (front_end, results) in [("CLI", &cli_search), ("HTTP", &http_search), ("MCP", &agent_search)] {
        assert_eq!(results.as_array().map(Vec::len), Some(1), "{front_end}: one result per dataset: {results}");
        assert_eq!(results[0]["dataset_name"], "notes", "{front_end}: {results}");
        assert_eq!(results[0]["search_result"][0]["text"], json!(evidence), "{front_end}: {results}");
    }

    // forget: the dataset goes, from every store alike.
    let out = recall(cli, &["forget", "--dataset", "notes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let gone = http.post_json("/api/v1/forget", json!({"dataset": "notes"})).await;
    assert_eq!(gone["status"], "success", "{gone}");
    let forgot = agent.call("forget", json!({"dataset": "notes"}));
    assert_eq!(text_of(&forgot), "Dataset 'notes' deleted (status=success).");
    for dir in [cli, http_store, mcp_store] {
        assert!(dataset_names(dir).is_empty(), "{}", dir.display());
    }
}

#[tokio::test]
async fn self_improvement_can_be_switched_off_from_every_front_end() {
    let (cli_dir, http_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = recall(cli_dir.path(), &["remember", "--dataset", "notes", "--no-self-improvement", "--text", FACT]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let http = Http::start(http_dir.path()).await;
    let answer = http
        .post_form("/api/v1/remember", &[("datasetName", "notes"), ("raw_data", FACT), ("self_improvement", "false")])
        .await;
    assert_eq!(answer["status"], "completed", "{answer}");
    assert!(answer.get("improve").is_none(), "no improve ran: {answer}");
    let mcp_dir = tempfile::tempdir().unwrap();
    let mut agent = mcp(mcp_dir.path());
    let stored = agent.call("remember", json!({"data": FACT, "dataset_name": "notes", "self_improvement": false}));
    assert_eq!(stored["result"]["isError"], false, "{stored}");
}

#[tokio::test]
async fn cognify_creates_a_named_dataset_from_the_cli_and_http_alike() {
    let (cli_dir, http_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (cli, http_store) = (cli_dir.path(), http_dir.path());
    // Storage exists in both (the CLI's cognify needs a store to open).
    assert!(recall(cli, &["remember", "--dataset", "notes", "--text", FACT]).status.success());
    let http = Http::start(http_store).await;
    http.post_form("/api/v1/remember", &[("datasetName", "notes"), ("raw_data", FACT)]).await;

    let out = recall(cli, &["cognify", "--dataset", "fresh"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Cognified dataset 'fresh': 0 item(s) built"));
    let runs = http.post_json("/api/v1/cognify", json!({"datasets": ["fresh"]})).await;
    let run = runs.as_object().unwrap().values().next().unwrap().clone();
    assert_eq!((run["status"].clone(), run["dataset_name"].clone()), (json!("PipelineRunCompleted"), json!("fresh")));
    for dir in [cli, http_store] {
        assert_eq!(dataset_names(dir), ["fresh", "notes"], "{}", dir.display());
    }
}

/// The session turn a remember stored, and its rating, as the CLI shows it.
fn rated_turn(dir: &Path, session: &str) -> (String, Value) {
    let turns = cli_json(dir, &["session", "show", session, "--json"]);
    assert_eq!(turns.as_array().map(Vec::len), Some(1), "{turns}");
    (turns[0]["answer"].as_str().unwrap().to_string(), turns[0]["feedback_score"].clone())
}

#[tokio::test]
async fn a_session_turn_is_stored_and_rated_alike_from_every_front_end() {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let [cli, http_store, mcp_store] = [dirs[0].path(), dirs[1].path(), dirs[2].path()];
    let note = "Call me Sam; I prefer short answers.";

    // Stored as one turn of session "chat", in each front end's words.
    let out = recall(cli, &["remember", "--dataset", "notes", "--session-id", "chat", "--text", note]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let http = Http::start(http_store).await;
    let answer = http
        .post_form("/api/v1/remember", &[("datasetName", "notes"), ("session_id", "chat"), ("raw_data", note)])
        .await;
    assert_eq!(answer["status"], "session_stored", "{answer}");
    let mut agent = mcp(mcp_store);
    let kept = agent.call("remember", json!({"data": note, "dataset_name": "notes", "session_id": "chat"}));
    assert_eq!(text_of(&kept), "Stored in session cache (session_id=chat, status=session_stored).");
    for dir in [cli, http_store, mcp_store] {
        assert_eq!(rated_turn(dir, "chat"), (note.to_string(), Value::Null), "{}", dir.display());
        assert!(stored(dir, "notes").0.is_empty(), "a session remember builds nothing: {}", dir.display());
    }

    // Rated 5: by the CLI, over HTTP (a feedback entry) and by the MCP tool.
    let qa_id =
        |dir: &Path| cli_json(dir, &["session", "show", "chat", "--json"])[0]["qa_id"].as_str().unwrap().to_string();
    let id = qa_id(cli);
    assert!(recall(cli, &["session", "feedback", "chat", &id, "--score", "5"]).status.success());
    let rated = http
        .post_json(
            "/api/v1/remember/entry",
            json!({"session_id": "chat", "dataset_name": "notes",
                   "entry": {"type": "feedback", "qa_id": qa_id(http_store), "feedback_score": 5}}),
        )
        .await;
    assert_eq!(rated["status"], "session_stored", "{rated}");
    let rated_by_mcp =
        agent.call("session_feedback", json!({"session_id": "chat", "qa_id": qa_id(mcp_store), "score": 5}));
    assert_eq!(rated_by_mcp["result"]["isError"], false, "{rated_by_mcp}");
    for dir in [cli, http_store, mcp_store] {
        assert_eq!(rated_turn(dir, "chat"), (note.to_string(), json!(5)), "{}", dir.display());
    }
}

#[tokio::test]
async fn the_history_is_the_same_from_the_cli_and_http() {
    let (cli_dir, http_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (cli, http_store) = (cli_dir.path(), http_dir.path());
    assert!(recall(cli, &["remember", "--dataset", "notes", "--text", FACT]).status.success());
    cli_json(cli, &["recall", QUESTION, "--type", "CHUNKS", "--top-k", "1", "--json"]);
    let http = Http::start(http_store).await;
    http.post_form("/api/v1/remember", &[("datasetName", "notes"), ("raw_data", FACT)]).await;
    http.post_json("/api/v1/recall", json!({"query": QUESTION, "searchType": "CHUNKS", "topK": 1})).await;

    let by_cli = cli_json(cli, &["history", "--json"]);
    let by_http = http.get_json("/api/v1/recall").await;
    // The question row alike; the answer row holds the same evidence (its
    // JSON also carries ids, which differ between two stores).
    for history in [&by_cli, &by_http] {
        let rows = history.as_array().unwrap();
        assert_eq!(rows.len(), 2, "a question and its answer: {history}");
        assert_eq!((rows[0]["user"].clone(), rows[0]["text"].clone()), (json!("user"), json!(QUESTION)));
        assert_eq!(rows[1]["user"], "system", "{history}");
        assert!(rows[1]["text"].as_str().unwrap().contains("winds the clock every evening"), "{history}");
    }
}
