#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! `recall mcp` driven over its standard input and output by a JSON-RPC
//! script, as an MCP client would (docs/mcp.md): initialize, tools/list,
//! remember with progress notifications, recall returning the remembered
//! fact, tool errors as flagged results, bad arguments and garbage frames
//! as JSON-RPC errors, forget, and a clean exit when the client leaves.

mod common;

use common::mcp::{text_of, Client};
use serde_json::json;

#[test]
fn an_mcp_client_remembers_recalls_and_forgets_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = Client::start(dir.path());

    let init = client.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "Test Agent (via script 1.0)", "version": "1.0"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "Recall", "{init}");
    assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");
    client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let listed = client.request("tools/list", json!({}));
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in ["remember", "recall", "forget", "cognify_status", "code_search", "search", "list_datasets"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }

    // remember, with a progress token: the agent-scoped dataset, and progress on the way.
    let fact = "The lighthouse keeper winds the clock every evening at six.";
    let stored = client.request(
        "tools/call",
        json!({"name": "remember", "arguments": {"data": fact}, "_meta": {"progressToken": "p1"}}),
    );
    assert_eq!(
        text_of(&stored),
        "Stored permanently in knowledge graph (dataset=test_agent_memory, status=completed)."
    );
    assert_eq!(stored["result"]["isError"], false);
    assert!(
        client
            .notifications
            .iter()
            .any(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == "p1"),
        "{:?}",
        client.notifications
    );

    // recall finds it.
    let found = client
        .call("recall", json!({"query": "When does the keeper wind the clock?", "search_type": "chunks", "datasets": "test_agent_memory"}));
    let text = text_of(&found);
    assert!(text.starts_with("1 memory found (1 from test_agent_memory)"), "{text}");
    assert!(text.contains("[graph] The lighthouse keeper winds the clock"), "{text}");
    assert_eq!(found["result"]["_meta"]["cognee/memory"], json!({"count": 1, "state": "found"}));

    // A failure is a flagged result with cognee-mcp's text and the typed error.
    let missing = client.call("recall", json!({"query": "clock", "datasets": "nope"}));
    assert_eq!(missing["result"]["isError"], true, "{missing}");
    assert!(text_of(&missing).starts_with("Error: Recall failed: "), "{missing}");
    assert_eq!(missing["result"]["structuredContent"]["error"], "DatasetNotFoundError");
    assert_eq!(missing["result"]["structuredContent"]["status"], 404);
    let bad_k = client.call("recall", json!({"query": "clock", "top_k": 0}));
    assert_eq!(text_of(&bad_k), "Error: top_k must be at least 1.");
    let code = client.call("code_search", json!({"operation": "explore"}));
    assert_eq!(code["result"]["isError"], true);

    // Arguments of the wrong type, an unknown tool and a garbage frame are JSON-RPC errors; the server goes on.
    let wrong = client.call("recall", json!({"query": 5}));
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    assert!(wrong["error"]["message"].as_str().unwrap().contains("recall: invalid arguments"), "{wrong}");
    let unknown = client.call("drop_everything", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    client.send_raw("{this is not json");
    let status = client.call("cognify_status", json!({}));
    let status_text = text_of(&status);
    assert!(status_text.contains("'DATASET_PROCESSING_COMPLETED'"), "{status_text}");

    let datasets = client.call("list_datasets", json!({}));
    assert_eq!(datasets["result"]["structuredContent"]["datasets"][0]["name"], "test_agent_memory");

    // forget, then nothing is found.
    let forgotten = client.call("forget", json!({"dataset": "test_agent_memory"}));
    assert_eq!(text_of(&forgotten), "Dataset 'test_agent_memory' deleted (status=success).");
    let none = client.call("forget", json!({}));
    assert!(text_of(&none).starts_with("Error: Specify 'dataset' name"), "{none}");

    drop(client.stdin);
    let exit = client.child.wait().unwrap();
    assert!(exit.success(), "the server exits cleanly when the client leaves: {exit}");
}
