//! `recall mcp` driven over its standard input and output, as an MCP
//! client would: JSON-RPC lines in, responses and notifications out.
#![allow(dead_code)] // not every test binary uses every call

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

pub struct Client {
    pub child: Child,
    pub stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// Notifications received while waiting for responses.
    pub notifications: Vec<Value>,
}

impl Client {
    pub fn start(data_dir: &std::path::Path) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_recall"))
            .arg("--data-dir")
            .arg(data_dir)
            .arg("mcp")
            .env_remove("LLM_API_KEY")
            .env_remove("EMBEDDING_API_KEY")
            .env_remove("EMBEDDING_ENDPOINT")
            .env_remove("RECALL_USER")
            .env_remove("COGNEE_MCP_AGENT_SCOPED")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A hung server fails the test instead of hanging it.
        let pid = child.id();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(300));
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        });
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Client { child, stdin, stdout, next_id: 1, notifications: Vec::new() }
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    pub fn send_raw(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next message with this id (notifications on the way are kept).
    pub fn response(&mut self, id: &Value) -> Value {
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed its output");
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if message.get("id") == Some(id) {
                return message;
            }
            self.notifications.push(message);
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(&id)
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

pub fn text_of(response: &Value) -> String {
    response["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {response}")).to_string()
}
