#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The HTTP server over real sockets: Cognee's routes, statuses and bodies,
//! authentication in each posture, two users' isolation, streaming, and
//! bad input (docs/http.md).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use std::sync::Arc;

use recall_core::ports::LlmClient;
use recall_engine::{Engine, EngineConfig};
use recall_memory::MemorySessionStore;
use recall_server::{AppState, AuthPosture, ServerConfig};
use recall_sessions::{SessionConfig, Sessions};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};
use tokio::sync::oneshot;

const PASSWORD: &str = "correct horse battery";

/// A server on an ephemeral port over a fresh offline engine.
struct Server {
    addr: SocketAddr,
    engine: Engine,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Raw copies of what was remembered (cognify reads them back).
    _raw: tempfile::TempDir,
}

impl Server {
    async fn start(configure: impl FnOnce(&mut ServerConfig)) -> Server {
        Self::start_with(None, configure).await
    }

    /// A server whose engine answers with this LLM.
    async fn start_with(llm: Option<Arc<dyn LlmClient>>, configure: impl FnOnce(&mut ServerConfig)) -> Server {
        let raw = tempfile::tempdir().unwrap();
        let config =
            EngineConfig { chunk_size: 40, raw_data_dir: Some(raw.path().to_path_buf()), ..Default::default() };
        // Session memory on, as the composition crate sets it up by default.
        let sessions = Sessions::new(Arc::new(MemorySessionStore::new()), SessionConfig::default());
        let engine = common::offline_builder(config, 64).llm(llm).sessions(Arc::new(sessions)).build().unwrap();
        let mut config = ServerConfig::new();
        config.default_user_password = Some(PASSWORD.into());
        configure(&mut config);
        let state = AppState::prepare(common::app(&engine), config, common::me(&engine).await).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(recall_server::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        Server { addr, engine, stop: Some(stop), done, _raw: raw }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A key for a user (created on first use).
    async fn key_for(&self, email: &str) -> String {
        let user = self.engine.relational().users.ensure_user(email).await.unwrap();
        common::accounts(&self.engine).create_api_key(&user, None).await.unwrap().key
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(10), self.done).await.unwrap().unwrap().unwrap();
    }
}

async fn json_of(response: reqwest::Response) -> (StatusCode, Value) {
    let status = response.status();
    let content_type = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    assert_eq!(content_type.as_deref(), Some("application/json"), "{status} {text}");
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
}

fn posture_off(config: &mut ServerConfig) {
    config.posture = AuthPosture::resolve(Some(false), None);
}

/// Remembers texts through the form route as the Python SDK sends them.
async fn remember_texts(client: &Client, server: &Server, key: &str, dataset: &str, texts: &[&str]) -> Value {
    let mut form = reqwest::multipart::Form::new().text("datasetName", dataset.to_string());
    for (i, text) in texts.iter().enumerate() {
        let part = reqwest::multipart::Part::bytes(text.as_bytes().to_vec())
            .file_name(format!("/home/client/private/text_{i}.txt"))
            .mime_str("text/plain")
            .unwrap();
        form = form.part("data", part);
    }
    let response =
        client.post(server.url("/api/v1/remember")).header("X-Api-Key", key).multipart(form).send().await.unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn health_root_and_unknown_routes() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let (status, body) = json_of(client.get(server.url("/health")).send().await.unwrap()).await;
    assert_eq!((status, &body["status"], &body["health"]), (StatusCode::OK, &json!("ready"), &json!("healthy")));
    let (status, body) = json_of(client.get(server.url("/health/detailed")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    for component in ["relational_db", "vector_db", "graph_db", "embedding_service"] {
        assert_eq!(body["components"][component]["status"], json!("healthy"), "{body}");
    }
    let (_, body) = json_of(client.get(server.url("/")).send().await.unwrap()).await;
    assert_eq!(body, json!({"message": "Hello, World, I am alive!"}));
    let (status, body) = json_of(client.get(server.url("/nope")).send().await.unwrap()).await;
    assert_eq!((status, body), (StatusCode::NOT_FOUND, json!({"detail": "Not Found"})));
    let response = client.delete(server.url("/api/v1/recall")).send().await.unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!((status, body), (StatusCode::METHOD_NOT_ALLOWED, json!({"detail": "Method Not Allowed"})));
    let response = client.get(server.url("/health")).send().await.unwrap();
    assert!(response.headers().get("x-request-id").is_some(), "every answer carries a request id");
    server.stop().await;
}

#[tokio::test]
async fn authentication_in_the_default_posture() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let datasets = server.url("/api/v1/datasets");

    // No credential, a wrong key, a malformed key: 401 with the posture text.
    for key in [None, Some("0".repeat(64)), Some("not-a-key".to_string())] {
        let mut request = client.get(&datasets);
        if let Some(key) = key {
            request = request.header("X-Api-Key", key);
        }
        let (status, body) = json_of(request.send().await.unwrap()).await;
        assert_eq!(status, 401);
        assert!(
            body["detail"]
                .as_str()
                .unwrap()
                .starts_with("Authentication required (auth posture: default (no env vars set))."),
            "{body}"
        );
    }

    // Login with the default user's password: a bearer token and a cookie.
    let login = client
        .post(server.url("/api/v1/auth/login"))
        .form(&[("username", common::DEFAULT_USER), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    let cookie = login.headers().get("set-cookie").unwrap().to_str().unwrap().to_string();
    assert!(cookie.starts_with("auth_token=") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"));
    let (status, body) = json_of(login).await;
    assert_eq!((status, &body["token_type"]), (StatusCode::OK, &json!("bearer")));
    let token = body["access_token"].as_str().unwrap().to_string();
    let (status, me) =
        json_of(client.get(server.url("/api/v1/auth/me")).bearer_auth(&token).send().await.unwrap()).await;
    assert_eq!((status, me), (StatusCode::OK, json!({"email": common::DEFAULT_USER})));
    let cookie_pair = cookie.split(';').next().unwrap().to_string();
    let (status, _) = json_of(client.get(&datasets).header("Cookie", cookie_pair).send().await.unwrap()).await;
    assert_eq!(status, 200, "the cookie authenticates too");

    // Bad logins.
    for (user, password) in [(common::DEFAULT_USER, "wrong password"), ("nobody@example.com", PASSWORD)] {
        let response = client
            .post(server.url("/api/v1/auth/login"))
            .form(&[("username", user), ("password", password)])
            .send()
            .await
            .unwrap();
        assert_eq!(json_of(response).await, (StatusCode::BAD_REQUEST, json!({"detail": "LOGIN_BAD_CREDENTIALS"})));
    }
    let response = client.post(server.url("/api/v1/auth/login")).form(&[("username", "x")]).send().await.unwrap();
    assert_eq!(json_of(response).await, (StatusCode::BAD_REQUEST, json!({"detail": "LOGIN_BAD_CREDENTIALS"})));

    // Mint a key with the token; it works; listing shows its label only; revoking ends it.
    let (status, created) = json_of(
        client
            .post(server.url("/api/v1/auth/api-keys"))
            .bearer_auth(&token)
            .json(&json!({"name": "ci"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let key = created["key"].as_str().unwrap().to_string();
    assert_eq!(key.len(), 64);
    assert_eq!(created["label"], json!(format!("{}****", &key[..8])));
    let (status, listed) = json_of(client.get(&datasets).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!((status, listed), (StatusCode::OK, json!([])));
    let (_, keys) =
        json_of(client.get(server.url("/api/v1/auth/api-keys")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(keys, json!([{"key": "************", "label": created["label"], "name": "ci", "id": created["id"]}]));
    let revoke = server.url(&format!("/api/v1/auth/api-keys/{}", created["id"].as_str().unwrap()));
    let (status, body) = json_of(client.delete(&revoke).bearer_auth(&token).send().await.unwrap()).await;
    assert_eq!((status, body), (StatusCode::OK, Value::Null));
    let (status, _) = json_of(client.get(&datasets).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(status, 401, "a revoked key stops working at once");
    let (status, _) = json_of(client.delete(&revoke).bearer_auth(&token).send().await.unwrap()).await;
    assert_eq!(status, 404);
    let (status, body) =
        json_of(client.delete(server.url("/api/v1/auth/api-keys/xyz")).bearer_auth(&token).send().await.unwrap()).await;
    assert_eq!((status, &body["detail"][0]["type"]), (StatusCode::BAD_REQUEST, &json!("uuid_parsing")));

    // A tampered token, and a token whose password has changed since: 401.
    let tampered = format!("{}x", &token[..token.len() - 1]);
    let (status, _) = json_of(client.get(&datasets).bearer_auth(&tampered).send().await.unwrap()).await;
    assert_eq!(status, 401);
    let default_user = server.engine.relational().users.find_user(common::DEFAULT_USER).await.unwrap().unwrap();
    common::accounts(&server.engine).set_password(&default_user, "another good password").await.unwrap();
    let (status, _) = json_of(client.get(&datasets).bearer_auth(&token).send().await.unwrap()).await;
    assert_eq!(status, 401, "a new password ends older sessions");
    server.stop().await;
}

#[tokio::test]
async fn expired_tokens_registration_and_the_open_posture() {
    let server = Server::start(|c| c.tokens.lifetime = Duration::from_secs(1)).await;
    let client = Client::new();
    let (status, user) = json_of(
        client
            .post(server.url("/api/v1/auth/register"))
            .json(&json!({"email": "new@example.com", "password": "long enough", "is_superuser": true}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &user["email"], &user["is_superuser"]),
        (StatusCode::CREATED, &json!("new@example.com"), &json!(false))
    );
    let again = client
        .post(server.url("/api/v1/auth/register"))
        .json(&json!({"email": "new@example.com", "password": "long enough"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(again).await, (StatusCode::BAD_REQUEST, json!({"detail": "REGISTER_USER_ALREADY_EXISTS"})));
    let short = client
        .post(server.url("/api/v1/auth/register"))
        .json(&json!({"email": "b@example.com", "password": "x"}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(short).await;
    assert_eq!((status, &body["detail"]["code"]), (StatusCode::BAD_REQUEST, &json!("REGISTER_INVALID_PASSWORD")));

    let login = client
        .post(server.url("/api/v1/auth/login"))
        .form(&[("username", "new@example.com"), ("password", "long enough")])
        .send()
        .await
        .unwrap();
    let token = json_of(login).await.1["access_token"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, _) =
        json_of(client.get(server.url("/api/v1/auth/me")).bearer_auth(&token).send().await.unwrap()).await;
    assert_eq!(status, 401, "an expired token is refused");
    server.stop().await;

    // Authentication off: every request acts for the default user, and a bad key is ignored.
    let open = Server::start(posture_off).await;
    let (status, me) =
        json_of(client.get(open.url("/api/v1/auth/me")).header("X-Api-Key", "f".repeat(64)).send().await.unwrap())
            .await;
    assert_eq!((status, me), (StatusCode::OK, json!({"email": common::DEFAULT_USER})));
    open.stop().await;
}

#[tokio::test]
async fn remember_then_recall_search_and_the_dataset_routes() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    let body = remember_texts(
        &client,
        &server,
        &key,
        "science",
        &["Marie Curie discovered polonium and radium in Paris.", "The Rhine flows through Basel and Cologne."],
    )
    .await;
    assert_eq!(
        (&body["status"], &body["dataset_name"], &body["items_processed"]),
        (&json!("completed"), &json!("science"), &json!(2))
    );
    let dataset_id = body["dataset_id"].as_str().unwrap().to_string();

    // The urlencoded form the SDK sends when there is no file.
    let response = client
        .post(server.url("/api/v1/remember"))
        .header("X-Api-Key", &key)
        .form(&[
            ("datasetName", "science"),
            ("raw_data", "Ada Lovelace wrote the first program."),
            ("self_improvement", "true"),
        ])
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!((status, &body["items_processed"]), (StatusCode::OK, &json!(1)), "{body}");

    // Recall, JSON: the chunk that answers.
    let recall = client
        .post(server.url("/api/v1/recall"))
        .header("X-Api-Key", &key)
        .header("Accept", "*/*")
        .json(&json!({"query": "Who discovered polonium?", "searchType": "CHUNKS", "datasets": ["science"], "topK": 1}))
        .send()
        .await
        .unwrap();
    let (status, results) = json_of(recall).await;
    assert_eq!(status, 200, "{results}");
    assert_eq!(results.as_array().unwrap().len(), 1);
    assert!(results[0]["text"].as_str().unwrap().contains("polonium"), "{results}");
    assert_eq!(results[0]["dataset_id"], json!(dataset_id));

    // Search: camelCase keys, the legacy shape (one object per dataset).
    let search = client
        .post(server.url("/api/v1/search"))
        .header("X-Api-Key", &key)
        .json(&json!({"query": "Rhine", "searchType": "CHUNKS_LEXICAL", "datasetIds": [dataset_id], "topK": 1}))
        .send()
        .await
        .unwrap();
    let (status, results) = json_of(search).await;
    assert_eq!(status, 200, "{results}");
    assert_eq!(results[0]["dataset_name"], json!("science"));
    assert!(results[0]["search_result"].to_string().contains("Rhine"), "{results}");

    // History: camelCase, oldest first, shared by both routes.
    let (_, history) =
        json_of(client.get(server.url("/api/v1/recall")).header("X-Api-Key", &key).send().await.unwrap()).await;
    let (_, same) =
        json_of(client.get(server.url("/api/v1/search")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(history, same);
    assert_eq!(history[0]["user"], json!("user"));
    assert!(history[0]["createdAt"].as_str().unwrap().ends_with('Z'));

    // Datasets: listed, paged data (base names only), graph, count, status.
    let (_, listed) =
        json_of(client.get(server.url("/api/v1/datasets")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(listed[0]["name"], json!("science"));
    assert!(listed[0]["createdAt"].is_string() && listed[0]["ownerId"].is_string());
    let data_url = server.url(&format!("/api/v1/datasets/{dataset_id}/data"));
    let (_, page) =
        json_of(client.get(format!("{data_url}?limit=2&offset=0")).header("X-Api-Key", &key).send().await.unwrap())
            .await;
    assert_eq!(page.as_array().unwrap().len(), 2);
    assert_eq!(page[0]["name"], json!("text_0"), "the client's directories are dropped");
    assert_eq!((&page[0]["extension"], &page[0]["mimeType"]), (&json!("txt"), &json!("text/plain")));
    let (_, rest) =
        json_of(client.get(format!("{data_url}?limit=2&offset=2")).header("X-Api-Key", &key).send().await.unwrap())
            .await;
    assert_eq!(rest.as_array().unwrap().len(), 1);
    let (status, body) =
        json_of(client.get(format!("{data_url}?limit=0")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!((status, &body["detail"][0]["loc"]), (StatusCode::BAD_REQUEST, &json!(["query", "limit"])));
    let (_, count) =
        json_of(client.get(format!("{data_url}/count")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(count, json!({"count": 3}));
    let graph_url = server.url(&format!("/api/v1/datasets/{dataset_id}/graph"));
    let (_, graph) = json_of(client.get(graph_url).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert!(
        graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n["label"].as_str().is_some_and(|l| l.eq_ignore_ascii_case("marie curie"))),
        "{graph}"
    );
    let (_, status) =
        json_of(client.get(server.url("/api/v1/datasets/status")).header("X-Api-Key", &key).send().await.unwrap())
            .await;
    assert_eq!(status, json!({dataset_id.clone(): "DATASET_PROCESSING_COMPLETED"}));

    // Forget: a bad combination is 422; the dataset goes.
    let forget = server.url("/api/v1/forget");
    let (status, body) = json_of(
        client.post(&forget).header("X-Api-Key", &key).json(&json!({"memory_only": false})).send().await.unwrap(),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = json_of(
        client.post(&forget).header("X-Api-Key", &key).json(&json!({"dataset": "science"})).send().await.unwrap(),
    )
    .await;
    assert_eq!((status, body), (StatusCode::OK, json!({"dataset_id": dataset_id, "status": "success"})));
    let (_, listed) =
        json_of(client.get(server.url("/api/v1/datasets")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(listed, json!([]));
    server.stop().await;
}

#[tokio::test]
async fn bad_input_gets_a_clear_4xx_and_writes_nothing() {
    let server = Server::start(|c| c.body_limit = 64 * 1024).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    let recall = server.url("/api/v1/recall");
    let post = |body: String| {
        client.post(&recall).header("X-Api-Key", &key).header("content-type", "application/json").body(body)
    };

    let (status, body) = json_of(post("{}".into()).send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::BAD_REQUEST,
            json!({"detail": [{"type": "missing", "loc": ["body", "query"], "msg": "Field required", "input": {}}], "body": {}})
        )
    );
    let (status, body) = json_of(post("{\"query\": ".into()).send().await.unwrap()).await;
    assert_eq!((status, &body["detail"][0]["type"]), (StatusCode::BAD_REQUEST, &json!("json_invalid")));
    let (status, body) =
        json_of(post(r#"{"query": "q", "search_type": "TELEPATHY"}"#.into()).send().await.unwrap()).await;
    assert_eq!(
        (status, &body["detail"][0]["loc"]),
        (StatusCode::BAD_REQUEST, &json!(["body", "search_type"])),
        "{body}"
    );
    let (status, body) = json_of(post(r#"{"query": "q", "top_k": "many"}"#.into()).send().await.unwrap()).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = json_of(post(r#"{"query": "q", "scope": ["nowhere"]}"#.into()).send().await.unwrap()).await;
    assert_eq!(status, 422);
    assert!(body["error"].as_str().unwrap().starts_with("Invalid recall request. If a scope was given"), "{body}");
    let (status, body) =
        json_of(post(json!({"query": "q", "datasets": ["missing"]}).to_string()).send().await.unwrap()).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["detail"].as_str().unwrap().ends_with("[DatasetNotFoundError]"), "{body}");
    let long = json!({"query": "why ".repeat(10_000)}).to_string();
    let (status, body) = json_of(post(long).send().await.unwrap()).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("too long"));
    let huge = json!({"query": "x".repeat(100 * 1024)}).to_string();
    let (status, _) = json_of(post(huge).send().await.unwrap()).await;
    assert_eq!(status, 413, "over the body limit");

    // Remember: no dataset, no items, a non-text upload, an unknown content type, bad UTF-8 in a field.
    let remember = server.url("/api/v1/remember");
    let form = |pairs: &[(&str, &str)]| {
        let owned: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        client.post(&remember).header("X-Api-Key", &key).form(&owned)
    };
    let (status, body) = json_of(form(&[("raw_data", "hello")]).send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, json!({"detail": "Either datasetId or datasetName must be provided."}))
    );
    let (status, body) = json_of(form(&[("datasetName", "d")]).send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, json!({"detail": "Provide at least one file in 'data' or one entry in 'raw_data'."}))
    );
    let (status, _) =
        json_of(form(&[("datasetName", "d"), ("raw_data", "x"), ("content_type", "video")]).send().await.unwrap())
            .await;
    assert_eq!(status, 400);
    let (status, _) =
        json_of(form(&[("datasetName", "d"), ("raw_data", "x"), ("run_in_background", "maybe")]).send().await.unwrap())
            .await;
    assert_eq!(status, 400);
    let bad_utf8 = client
        .post(&remember)
        .header("X-Api-Key", &key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("datasetName=%FF%FE&raw_data=x")
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(bad_utf8).await.0, 400);
    let binary = reqwest::multipart::Form::new()
        .text("datasetName", "d")
        .part("data", reqwest::multipart::Part::bytes(vec![0xff, 0xd8, 0xff, 0x00]).file_name("../../photo.jpg"));
    let (status, body) =
        json_of(client.post(&remember).header("X-Api-Key", &key).multipart(binary).send().await.unwrap()).await;
    assert_eq!(status, 415, "{body}");
    assert!(body["detail"].as_str().unwrap().starts_with("photo.jpg:"), "the name is reduced to its base name: {body}");

    let (_, listed) =
        json_of(client.get(server.url("/api/v1/datasets")).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(listed, json!([]), "no rejected request wrote anything");
    server.stop().await;
}

#[tokio::test]
async fn two_users_are_isolated_until_a_grant() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let alice = server.key_for("alice@example.com").await;
    let bob = server.key_for("bob@example.com").await;
    let body =
        remember_texts(&client, &server, &alice, "diary", &["Alice keeps her spare key under the blue flowerpot."])
            .await;
    let dataset_id = body["dataset_id"].as_str().unwrap().to_string();

    let get = |key: &str, path: &str| client.get(server.url(path)).header("X-Api-Key", key.to_string());
    let (_, listed) = json_of(get(&bob, "/api/v1/datasets").send().await.unwrap()).await;
    assert_eq!(listed, json!([]));
    let denied =
        "Request owner does not have necessary permission: [read] for all datasets requested. [PermissionDeniedError]";
    for path in [format!("/api/v1/datasets/{dataset_id}/graph"), format!("/api/v1/datasets/{dataset_id}/data")] {
        assert_eq!(
            json_of(get(&bob, &path).send().await.unwrap()).await,
            (StatusCode::FORBIDDEN, json!({"detail": denied}))
        );
    }
    let recall = |key: &str| {
        client
            .post(server.url("/api/v1/recall"))
            .header("X-Api-Key", key.to_string())
            .json(&json!({"query": "Where is the spare key?", "searchType": "CHUNKS", "datasetIds": [dataset_id]}))
    };
    assert_eq!(json_of(recall(&bob).send().await.unwrap()).await, (StatusCode::FORBIDDEN, json!({"detail": denied})));
    let (_, history) = json_of(get(&bob, "/api/v1/recall").send().await.unwrap()).await;
    assert_eq!(history, json!([]));
    let unscoped = client
        .post(server.url("/api/v1/recall"))
        .header("X-Api-Key", &bob)
        .json(&json!({"query": "Where is the spare key?", "searchType": "CHUNKS"}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(unscoped).await;
    // Bob can read nothing: his memory is empty, never Alice's.
    assert_eq!((status, &body[0]["status"]), (StatusCode::OK, &json!("memory_warming_up")), "{body}");
    assert!(!body.to_string().contains("flowerpot"));

    // Bob cannot grant himself; Alice grants read.
    let bob_id = server.engine.relational().users.find_user("bob@example.com").await.unwrap().unwrap().id;
    let grant = server.url(&format!("/api/v1/permissions/datasets/{bob_id}?permission_name=read"));
    let (status, _) =
        json_of(client.post(&grant).header("X-Api-Key", &bob).json(&json!([dataset_id])).send().await.unwrap()).await;
    assert_eq!(status, 403);
    let bad = server.url(&format!("/api/v1/permissions/datasets/{bob_id}?permission_name=own"));
    let (status, body) =
        json_of(client.post(&bad).header("X-Api-Key", &alice).json(&json!([dataset_id])).send().await.unwrap()).await;
    assert_eq!(
        (status, body),
        (
            StatusCode::FORBIDDEN,
            json!({"detail": "own not found or not in allowed permission types [PermissionNotFoundError]"})
        )
    );
    let (status, body) =
        json_of(client.post(&grant).header("X-Api-Key", &alice).json(&json!([dataset_id])).send().await.unwrap()).await;
    assert_eq!((status, body), (StatusCode::OK, json!({"message": "Permission assigned to principal"})));
    let (status, results) = json_of(recall(&bob).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert!(results[0]["text"].as_str().unwrap().contains("flowerpot"));
    let (status, _) = json_of(
        client
            .delete(server.url(&format!("/api/v1/datasets/{dataset_id}")))
            .header("X-Api-Key", &bob)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 403, "read is not delete");
    let (status, _) =
        json_of(client.delete(&grant).header("X-Api-Key", &alice).json(&json!([dataset_id])).send().await.unwrap())
            .await;
    assert_eq!(status, 200);
    assert_eq!(json_of(recall(&bob).send().await.unwrap()).await.0, 403, "the revoked grant ends access");
    server.stop().await;
}

/// `skill_run` entries are recorded beside their skill in the dataset's
/// graph: named when the skill is known, replaced by run id, refused when
/// out of range, and only where the caller may write.
#[tokio::test]
async fn skill_runs_are_recorded_beside_their_skill() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let alice_key = server.key_for("alice@example.com").await;
    let bob_key = server.key_for("bob@example.com").await;
    let alice = server.engine.relational().users.ensure_user("alice@example.com").await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let skill_dir = dir.path().join("rotate");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(
        skill_dir.join("SKILL.md"),
        "---\nname: Key rotation\ndescription: Rotate API keys safely.\n---\n# Key rotation\n1. Mint a new key.\n2. Revoke the old one.\n",
    )
    .unwrap();
    let (ops, added) = server.engine.add_skills(&alice, "ops", &[skill_dir]).await.unwrap();
    let skill_id = added[0].id.clone();
    let post = |key: &str, body: Value| {
        client.post(server.url("/api/v1/remember/entry")).header("X-Api-Key", key.to_string()).json(&body).send()
    };
    let run = |score: Value| {
        json!({"entry": {"type": "skill_run", "selected_skill_id": skill_id, "run_id": "run-1",
                         "task_text": "rotate the staging key", "success_score": score, "latency_ms": 1200},
               "dataset_name": "ops", "session_id": "agent-1"})
    };
    let (status, stored) = json_of(post(&alice_key, run(json!(0.8))).await.unwrap()).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        (&stored["status"], &stored["entry_type"], &stored["entry_id"], &stored["items_processed"]),
        (&json!("completed"), &json!("skill_run"), &json!("run-1"), &json!(1))
    );
    assert_eq!(
        stored["items"][0],
        json!({"kind": "skill_run", "run_id": "run-1", "selected_skill_id": skill_id,
               "selected_skill_name": "Key rotation", "success_score": 0.8})
    );
    // The same run id again replaces the run.
    let (status, _) = json_of(post(&alice_key, run(json!(0.2))).await.unwrap()).await;
    assert_eq!(status, 200);
    let runs = server.engine.skill_runs(&alice, "ops").await.unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!((&runs[0]["success_score"], &runs[0]["session_id"]), (&json!(0.2), &json!("agent-1")));
    assert_eq!(runs[0]["task_text"], "rotate the staging key");

    // Out of range, or without a skill: refused, nothing recorded.
    let (status, body) = json_of(post(&alice_key, run(json!(1.5))).await.unwrap()).await;
    assert_eq!((status, body), (StatusCode::BAD_REQUEST, json!({"error": "Invalid remember request."})));
    let (status, body) = json_of(
        post(&alice_key, json!({"entry": {"type": "skill_run", "task_text": "x"}, "dataset_name": "ops"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "entry", "skill_run", "selected_skill_id"]));
    assert_eq!(server.engine.skill_runs(&alice, "ops").await.unwrap().len(), 1);
    let mut elsewhere = run(json!(-0.5));
    elsewhere["dataset_name"] = json!("fresh");
    let (status, _) = json_of(post(&alice_key, elsewhere).await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let names: Vec<String> =
        server.engine.access().datasets(&alice).await.unwrap().into_iter().map(|d| d.dataset.name).collect();
    assert!(!names.contains(&"fresh".to_string()), "a refused run creates no dataset: {names:?}");
    // Another user may not write into alice's dataset.
    let mut intruder = run(json!(0.5));
    intruder["dataset_id"] = json!(ops.id);
    let (status, _) = json_of(post(&bob_key, intruder).await.unwrap()).await;
    assert!(matches!(status.as_u16(), 403 | 404), "{status}");
    assert_eq!(server.engine.skill_runs(&alice, "ops").await.unwrap().len(), 1);
    server.stop().await;
}

#[tokio::test]
async fn session_entries_session_remember_and_the_sessions_routes() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let alice = server.key_for("alice@example.com").await;
    let bob = server.key_for("bob@example.com").await;
    let post = |key: &str, path: &str, body: Value| {
        client.post(server.url(path)).header("X-Api-Key", key.to_string()).json(&body).send()
    };
    let get = |key: &str, path: &str| client.get(server.url(path)).header("X-Api-Key", key.to_string()).send();

    // A typed QA entry, feedback on it, a trace step.
    let qa = json!({"type": "qa", "question": "Where do bees sleep?", "answer": "In the hive, clustered."});
    let (status, stored) =
        json_of(post(&alice, "/api/v1/remember/entry", json!({"entry": qa, "session_id": "chat"})).await.unwrap())
            .await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        (&stored["status"], &stored["entry_type"], &stored["dataset_name"]),
        (&json!("session_stored"), &json!("qa"), &json!("main_dataset"))
    );
    assert_eq!(stored["session_ids"], json!(["chat"]));
    let qa_id = stored["entry_id"].as_str().unwrap().to_string();
    let feedback = json!({"type": "feedback", "qa_id": qa_id, "feedback_score": 5, "feedback_text": "right"});
    let (_, rated) = json_of(
        post(&alice, "/api/v1/remember/entry", json!({"entry": feedback, "session_id": "chat"})).await.unwrap(),
    )
    .await;
    assert_eq!((&rated["status"], &rated["entry_id"]), (&json!("session_stored"), &json!(qa_id)));
    let unknown = json!({"type": "feedback", "qa_id": "nope", "feedback_score": 2});
    let (status, errored) =
        json_of(post(&alice, "/api/v1/remember/entry", json!({"entry": unknown, "session_id": "chat"})).await.unwrap())
            .await;
    assert_eq!(
        (status, &errored["status"]),
        (StatusCode::OK, &json!("errored")),
        "a store failure is reported in a 200"
    );
    assert!(errored["error"].as_str().unwrap().contains("nope"));
    let trace =
        json!({"type": "trace", "origin_function": "hive_lookup", "status": "error", "error_message": "hive offline"});
    let (_, stored) =
        json_of(post(&alice, "/api/v1/remember/entry", json!({"entry": trace, "session_id": "chat"})).await.unwrap())
            .await;
    assert_eq!(stored["entry_type"], "trace");

    // The first node set pins the session; another one is a conflict, a bare string a validation error.
    let pinned = |node_set: Value| json!({"entry": {"type": "qa", "question": "q", "answer": "a", "node_set": node_set}, "session_id": "pinned"});
    let carol = server.key_for("carol@example.com").await;
    let (status, _) = json_of(post(&carol, "/api/v1/remember/entry", pinned(json!(["b", "a"]))).await.unwrap()).await;
    assert_eq!(status, 200);
    let (status, conflict) = json_of(post(&carol, "/api/v1/remember/entry", pinned(json!(["c"]))).await.unwrap()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{conflict}");
    assert_eq!(
        conflict["detail"],
        "A session's node_set cannot change once pinned (pinned: [\"a\", \"b\"], requested: [\"c\"]); \
         start a new session [SessionNodeSetConflictError]"
    );
    let (status, _) = json_of(post(&carol, "/api/v1/remember/entry", pinned(json!("a"))).await.unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a bare string is not a node set");

    // Bad entries.
    let invalid = json!({"error": "Invalid remember request."});
    let no_session = json!({"entry": {"type": "qa", "question": "q", "answer": "a"}});
    assert_eq!(
        json_of(post(&alice, "/api/v1/remember/entry", no_session).await.unwrap()).await,
        (StatusCode::BAD_REQUEST, invalid.clone())
    );
    let bad_score = json!({"entry": {"type": "feedback", "qa_id": qa_id, "feedback_score": 9}, "session_id": "chat"});
    assert_eq!(
        json_of(post(&alice, "/api/v1/remember/entry", bad_score).await.unwrap()).await,
        (StatusCode::BAD_REQUEST, invalid)
    );
    let (status, body) = json_of(
        post(&alice, "/api/v1/remember/entry", json!({"entry": {"question": "q"}, "session_id": "chat"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, &body["detail"][0]["type"]), (StatusCode::BAD_REQUEST, &json!("union_tag_not_found")));
    let (status, body) = json_of(
        post(&alice, "/api/v1/remember/entry", json!({"entry": {"type": "qa", "answer": "a"}, "session_id": "chat"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &body["detail"][0]["loc"]),
        (StatusCode::BAD_REQUEST, &json!(["body", "entry", "qa", "question"])),
        "{body}"
    );
    let (status, _) = json_of(
        post(
            &alice,
            "/api/v1/remember/entry",
            json!({"entry": {"type": "qa", "question": "q", "answer": "a"}, "session_id": "x".repeat(300)}),
        )
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "an oversized session id");

    // remember with a session id stores the text as one turn, at once.
    let form = reqwest::multipart::Form::new()
        .text("datasetName", "bees")
        .text("session_id", "chat")
        .text("raw_data", "Drones do not sting.");
    let response =
        client.post(server.url("/api/v1/remember")).header("X-Api-Key", &alice).multipart(form).send().await.unwrap();
    let (status, body) = json_of(response).await;
    assert_eq!(
        (status, &body["status"], &body["session_ids"]),
        (StatusCode::OK, &json!("session_stored"), &json!(["chat"])),
        "{body}"
    );

    // The session lane reads it back, only for its owner.
    let lane = |key: &str, query: &str| {
        post(key, "/api/v1/recall", json!({"query": query, "session_id": "chat", "scope": ["session"]}))
    };
    let (status, hits) = json_of(lane(&alice, "do drones sting").await.unwrap()).await;
    assert_eq!(status, 200, "{hits}");
    assert_eq!((&hits[0]["source"], &hits[0]["answer"]), (&json!("session"), &json!("Drones do not sting.")));
    let (_, hits) = json_of(lane(&alice, "where do bees sleep").await.unwrap()).await;
    assert_eq!((&hits[0]["qa_id"], &hits[0]["feedback_score"]), (&json!(qa_id), &json!(5)));
    let (_, traces) = json_of(
        post(&alice, "/api/v1/recall", json!({"query": "hive offline", "session_id": "chat", "scope": ["trace"]}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(traces[0]["origin_function"], "hive_lookup");
    assert_eq!(
        json_of(lane(&bob, "do drones sting").await.unwrap()).await,
        (StatusCode::OK, json!([])),
        "bob's chat is his own"
    );

    // The sessions router.
    let (status, listed) = json_of(get(&alice, "/api/v1/sessions").await.unwrap()).await;
    assert_eq!((status, &listed["total"], &listed["has_more"]), (StatusCode::OK, &json!(1), &json!(false)), "{listed}");
    assert_eq!(listed["sessions"][0]["session_id"], "chat");
    let (status, detail) = json_of(get(&alice, "/api/v1/sessions/chat").await.unwrap()).await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(
        (&detail["label"], &detail["msg_count"], &detail["tool_calls"]),
        (&json!("Where do bees sleep?"), &json!(2), &json!(1))
    );
    assert_eq!(detail["qas"].as_array().unwrap().len(), 2);
    let missing = json!({"detail": "session not found"});
    assert_eq!(
        json_of(get(&alice, "/api/v1/sessions/other").await.unwrap()).await,
        (StatusCode::NOT_FOUND, missing.clone())
    );
    assert_eq!(json_of(get(&bob, "/api/v1/sessions/chat").await.unwrap()).await, (StatusCode::NOT_FOUND, missing));
    let (_, listed) = json_of(get(&bob, "/api/v1/sessions").await.unwrap()).await;
    assert_eq!(listed["total"], 0);
    let (status, body) = json_of(get(&alice, "/api/v1/sessions?range=1y").await.unwrap()).await;
    assert_eq!((status, &body["detail"][0]["loc"]), (StatusCode::BAD_REQUEST, &json!(["query", "range"])));
    // A blocking remember improves afterwards (self_improvement defaults to true).
    let built = remember_texts(&client, &server, &alice, "hive", &["Worker bees build wax combs."]).await;
    assert_eq!(built["improve"]["stages"][0]["stage"], "feedback_weights", "{built}");
    // improve applies the rating (a typed entry with no graph elements moves nothing).
    let (status, improved) =
        json_of(post(&alice, "/api/v1/improve", json!({"datasetName": "main_dataset"})).await.unwrap()).await;
    assert_eq!(
        (status, &improved["status"], &improved["stages"][0]["stage"]),
        (StatusCode::OK, &json!("completed"), &json!("feedback_weights")),
        "{improved}"
    );
    assert_eq!(
        json_of(post(&alice, "/api/v1/improve", json!({})).await.unwrap()).await,
        (StatusCode::BAD_REQUEST, json!({"detail": "Either datasetId or datasetName must be provided."}))
    );
    let (status, body) = json_of(
        post(&alice, "/api/v1/improve", json!({"dataset_name": "main_dataset", "feedback_alpha": 2})).await.unwrap(),
    )
    .await;
    assert_eq!((status, &body["detail"][0]["loc"]), (StatusCode::BAD_REQUEST, &json!(["body", "feedback_alpha"])));
    let (status, _) =
        json_of(post(&bob, "/api/v1/improve", json!({"dataset_id": stored["dataset_id"]})).await.unwrap()).await;
    assert_eq!(status, 403, "bob may not write alice's dataset");
    let (_, paged) = json_of(get(&alice, "/api/v1/sessions?limit=1&offset=1&range=all").await.unwrap()).await;
    assert_eq!((&paged["total"], &paged["sessions"]), (&json!(1), &json!([])));
    server.stop().await;
}

#[tokio::test]
async fn update_rebuilds_a_document_in_place() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let alice = server.key_for("alice@example.com").await;
    let bob = server.key_for("bob@example.com").await;
    let body = remember_texts(&client, &server, &alice, "hive", &["The hive has one queen and many drones."]).await;
    let dataset_id = body["dataset_id"].as_str().unwrap().to_string();
    let data_url = server.url(&format!("/api/v1/datasets/{dataset_id}/data"));
    let (_, items) = json_of(client.get(&data_url).header("X-Api-Key", &alice).send().await.unwrap()).await;
    let data_id = items[0]["id"].as_str().unwrap().to_string();

    let patch = |key: &str, query: String, text: &str| {
        let part = reqwest::multipart::Part::bytes(text.as_bytes().to_vec())
            .file_name("hive.txt")
            .mime_str("text/plain")
            .unwrap();
        client
            .patch(server.url(&format!("/api/v1/update?{query}")))
            .header("X-Api-Key", key.to_string())
            .multipart(reqwest::multipart::Form::new().part("data", part))
            .send()
    };
    let query = format!("data_id={data_id}&dataset_id={dataset_id}");
    let (status, updated) =
        json_of(patch(&alice, query.clone(), "The hive now has two queens and no drones.").await.unwrap()).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        (&updated["status"], &updated["data_id"], &updated["total_chunks"]),
        (&json!("full_rebuild"), &json!(data_id), &Value::Null)
    );
    assert_eq!(updated["fallback"]["reason"], "disabled");
    let (_, items) = json_of(client.get(&data_url).header("X-Api-Key", &alice).send().await.unwrap()).await;
    assert_eq!((items.as_array().unwrap().len(), &items[0]["id"]), (1, &json!(data_id)), "the document keeps its id");
    let recall = json!({"query": "How many queens?", "searchType": "CHUNKS", "datasetIds": [dataset_id]});
    let (_, found) = json_of(
        client.post(server.url("/api/v1/recall")).header("X-Api-Key", &alice).json(&recall).send().await.unwrap(),
    )
    .await;
    let text = found.to_string();
    assert!(text.contains("two queens") && !text.contains("one queen"), "only the new version is found: {text}");
    let (_, again) =
        json_of(patch(&alice, query.clone(), "The hive now has two queens and no drones.").await.unwrap()).await;
    assert_eq!(again["status"], "unchanged");

    let (status, body) = json_of(patch(&alice, format!("dataset_id={dataset_id}"), "x").await.unwrap()).await;
    assert_eq!((status, &body["detail"][0]["loc"]), (StatusCode::BAD_REQUEST, &json!(["query", "data_id"])));
    let unknown = format!("data_id={}&dataset_id={dataset_id}", uuid::Uuid::new_v4());
    let (status, body) = json_of(patch(&alice, unknown, "x").await.unwrap()).await;
    assert_eq!(status, 404);
    assert!(body["detail"].as_str().unwrap().ends_with("[UpdateTargetNotFoundError]"), "{body}");
    assert_eq!(json_of(patch(&bob, query, "x").await.unwrap()).await.0, 403);
    server.stop().await;
}

/// The event-stream frames of a body: `(event, data)`.
fn frames(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let event = block.lines().find_map(|l| l.strip_prefix("event: "))?;
            let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
            Some((event.to_string(), serde_json::from_str(data).unwrap()))
        })
        .collect()
}

#[tokio::test]
async fn streaming_recall_and_concurrent_requests() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    remember_texts(&client, &server, &key, "notes", &["The sourdough starter is fed every morning with rye flour."])
        .await;
    let recall = server.url("/api/v1/recall");

    let response = client
        .post(&recall)
        .header("X-Api-Key", &key)
        .header("Accept", "application/json;q=0.5, text/event-stream")
        .json(&json!({"query": "How is the starter fed?", "searchType": "CHUNKS", "datasets": ["notes"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let frames = frames(&response.text().await.unwrap());
    assert_eq!(frames.first().unwrap(), &("stage".to_string(), json!({"stage": "retrieving"})));
    let (last, data) = frames.last().unwrap();
    assert_eq!(last, "final");
    assert!(data["results"][0]["text"].as_str().unwrap().contains("rye flour"), "{data}");

    // An error before any event is a real status, not a frame inside a 200.
    let early = client
        .post(&recall)
        .header("X-Api-Key", &key)
        .json(&json!({"query": "q", "datasets": ["absent"], "stream": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(early).await.0, 404);
    // A tie goes to JSON.
    let tie = client
        .post(&recall)
        .header("X-Api-Key", &key)
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"query": "starter", "searchType": "CHUNKS"}))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(tie).await.0, 200);

    // Sixteen recalls at once all answer.
    let calls = (0..16).map(|i| {
        client
            .post(&recall)
            .header("X-Api-Key", &key)
            .json(&json!({"query": format!("starter {i}"), "searchType": "CHUNKS", "topK": 1}))
            .send()
    });
    for response in futures::future::join_all(calls).await {
        assert_eq!(response.unwrap().status(), 200);
    }
    server.stop().await;
}

#[tokio::test]
async fn add_then_cognify_and_a_background_remember() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    let added = client
        .post(server.url("/api/v1/add"))
        .header("X-Api-Key", &key)
        .form(&[("datasetName", "garden"), ("raw_data", "Tomatoes need six hours of sun a day.")])
        .send()
        .await
        .unwrap();
    let (status, run) = json_of(added).await;
    assert_eq!(
        (status, &run["status"], &run["dataset_name"]),
        (StatusCode::OK, &json!("PipelineRunCompleted"), &json!("garden"))
    );
    assert_eq!(run["data_ingestion_info"].as_array().unwrap().len(), 1);
    let dataset_id = run["dataset_id"].as_str().unwrap().to_string();
    let status_url = server
        .url(&format!("/api/v1/datasets/status?dataset={dataset_id}&pipeline=add_pipeline&pipeline=cognify_pipeline"));
    let (_, statuses) = json_of(client.get(&status_url).header("X-Api-Key", &key).send().await.unwrap()).await;
    assert_eq!(
        statuses,
        json!({dataset_id.clone(): {"add_pipeline": "DATASET_PROCESSING_COMPLETED"}}),
        "added, not built"
    );

    let recall = |query: &str| {
        client
            .post(server.url("/api/v1/recall"))
            .header("X-Api-Key", &key)
            .json(&json!({"query": query, "searchType": "CHUNKS", "datasets": ["garden"]}))
            .send()
    };
    let (_, results) = json_of(recall("How much sun do tomatoes need?").await.unwrap()).await;
    assert!(!results.to_string().contains("six hours"), "nothing is searchable before cognify: {results}");

    // The SDK sends dataset ids inside `datasets`: an id is read as an id.
    let cognify =
        client.post(server.url("/api/v1/cognify")).header("X-Api-Key", &key).json(&json!({"datasets": [dataset_id]}));
    let (status, runs) = json_of(cognify.send().await.unwrap()).await;
    assert_eq!((status, &runs[&dataset_id]["status"]), (StatusCode::OK, &json!("PipelineRunCompleted")), "{runs}");
    let (_, results) = json_of(recall("How much sun do tomatoes need?").await.unwrap()).await;
    assert!(results[0]["text"].as_str().unwrap().contains("six hours"), "{results}");
    let none = client.post(server.url("/api/v1/cognify")).header("X-Api-Key", &key).json(&json!({}));
    assert_eq!(
        json_of(none.send().await.unwrap()).await,
        (StatusCode::BAD_REQUEST, json!({"error": "No datasets or dataset_ids provided", "detail": null}))
    );

    // A background remember answers at once; its status is followed until built.
    let background = client
        .post(server.url("/api/v1/remember"))
        .header("X-Api-Key", &key)
        .form(&[("datasetName", "garden"), ("raw_data", "Basil hates the cold."), ("run_in_background", "true")])
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(background).await;
    assert_eq!((status, &body["status"], &body["pipeline_run_id"]), (StatusCode::OK, &json!("running"), &Value::Null));
    let started = std::time::Instant::now();
    loop {
        let (_, results) = json_of(recall("Which herb hates the cold?").await.unwrap()).await;
        if results.to_string().contains("Basil") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the background remember never finished");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    server.stop().await;
}

/// Debian's Chromium, when installed (`.ci/run` installs it).
fn chromium() -> Option<String> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .find(|p| std::path::Path::new(p).exists())
        .map(|p| p.to_string())
}

/// Runs headless Chromium on a page: the DOM after its scripts ran.
fn headless(browser: &str, url: &str, extra: &[&str]) -> String {
    let output = std::process::Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"])
        .args(["--window-size=1200,800", "--virtual-time-budget=20000"])
        .args(extra)
        .arg(url)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).to_string()
}

#[tokio::test]
async fn the_graph_page_draws_the_dataset_in_a_headless_browser() {
    let server = Server::start(posture_off).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    let body = remember_texts(
        &client,
        &server,
        &key,
        "science",
        &["Marie Curie discovered polonium in Paris.", "Pierre Curie worked with Marie Curie in Paris."],
    )
    .await;
    let dataset_id = body["dataset_id"].as_str().unwrap().to_string();
    let (status, body) = json_of(client.get(server.url("/api/v1/visualize")).send().await.unwrap()).await;
    assert_eq!((status, &body["detail"][0]["loc"]), (StatusCode::BAD_REQUEST, &json!(["query", "dataset_id"])));
    // Bad ids in the query are located in the query.
    for bad in ["dataset_id=nope".to_string(), format!("dataset_id={dataset_id}&seed_node_ids=nope")] {
        let (status, body) =
            json_of(client.get(server.url(&format!("/api/v1/visualize?{bad}"))).send().await.unwrap()).await;
        assert_eq!((status, body["detail"][0]["loc"][0].as_str()), (StatusCode::BAD_REQUEST, Some("query")), "{body}");
    }
    let url = server.url(&format!("/api/v1/visualize?dataset_id={dataset_id}"));
    let page = client.get(&url).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let html = page.text().await.unwrap();
    assert!(!html.contains("https://") && !html.contains("http://"), "the page loads nothing from elsewhere");

    let Some(browser) = chromium() else {
        eprintln!("SKIPPED: the graph page in a browser (no chromium; .ci/run installs it)");
        server.stop().await;
        return;
    };
    let (browser_url, browser_name) = (url.clone(), browser.clone());
    let dom =
        tokio::task::spawn_blocking(move || headless(&browser_name, &browser_url, &["--dump-dom"])).await.unwrap();
    assert!(dom.contains(r#"data-layout="done""#), "the layout ran to the end: {}", &dom[..dom.len().min(400)]);
    for label in ["marie curie", "pierre curie", "paris"] {
        assert!(dom.to_lowercase().contains(&format!(r#"<option value="{label}">"#)), "{label} is on the page");
    }
    assert!(dom.contains(" nodes · "), "the counts are shown");
    let shot = std::env::temp_dir().join(format!("recall-graph-{}.png", uuid::Uuid::new_v4()));
    let flag = format!("--screenshot={}", shot.display());
    let (shot_url, shot_browser) = (url.clone(), browser.clone());
    tokio::task::spawn_blocking(move || headless(&shot_browser, &shot_url, &[&flag])).await.unwrap();
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // A drawn graph has far more detail than a blank page (a few kB).
    assert!(png.len() > 20_000, "the screenshot shows a drawing ({} bytes, {})", png.len(), shot.display());

    // A graph of 5 000 nodes lays out and draws in the browser.
    let nodes: Vec<recall_core::Node> = (0..5000)
        .map(|i| {
            let properties = serde_json::from_value(json!({"name": format!("node {i}")})).unwrap();
            recall_core::Node {
                id: uuid::Uuid::from_u128(i as u128 + 1),
                node_type: format!("Type{}", i % 7),
                properties,
            }
        })
        .collect();
    let edges: Vec<recall_core::Edge> = (1..5000u128)
        .flat_map(|i| [(i + 1, i / 2 + 1), (i + 1, (i * 7919) % 5000 + 1)])
        .filter(|(s, t)| s != t)
        .map(|(s, t)| recall_core::Edge::new(uuid::Uuid::from_u128(s), "links", uuid::Uuid::from_u128(t)))
        .collect();
    let big = std::env::temp_dir().join(format!("recall-graph-{}.html", uuid::Uuid::new_v4()));
    std::fs::write(&big, recall_server::graph_page("large", &recall_core::Subgraph { nodes, edges })).unwrap();
    let big_url = format!("file://{}", big.display());
    let started = std::time::Instant::now();
    let dom = tokio::task::spawn_blocking(move || headless(&browser, &big_url, &["--dump-dom"])).await.unwrap();
    assert!(dom.contains("5000 nodes · "), "all 5 000 nodes are on the page");
    assert!(dom.contains(r#"data-layout="done""#), "the layout of 5 000 nodes finished");
    eprintln!("5 000-node page laid out in {:.1} s (headless, debug test machine)", started.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(&big);
    server.stop().await;
}

#[tokio::test]
async fn the_openapi_document_lists_every_route() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let (status, doc) = json_of(client.get(server.url("/openapi.json")).send().await.unwrap()).await;
    assert_eq!(status, 200);
    let expected = [
        ("get", "/"),
        ("get", "/health"),
        ("get", "/health/detailed"),
        ("post", "/api/v1/recall"),
        ("get", "/api/v1/recall"),
        ("post", "/api/v1/search"),
        ("get", "/api/v1/search"),
        ("post", "/api/v1/remember"),
        ("post", "/api/v1/remember/entry"),
        ("get", "/api/v1/sessions"),
        ("get", "/api/v1/sessions/{session_id}"),
        ("post", "/api/v1/forget"),
        ("post", "/api/v1/add"),
        ("post", "/api/v1/cognify"),
        ("post", "/api/v1/improve"),
        ("patch", "/api/v1/update"),
        ("get", "/api/v1/datasets"),
        ("post", "/api/v1/datasets"),
        ("delete", "/api/v1/datasets"),
        ("get", "/api/v1/datasets/status"),
        ("delete", "/api/v1/datasets/{dataset_id}"),
        ("get", "/api/v1/datasets/{dataset_id}/data"),
        ("get", "/api/v1/datasets/{dataset_id}/data/count"),
        ("get", "/api/v1/datasets/{dataset_id}/graph"),
        ("post", "/api/v1/permissions/datasets/{principal_id}"),
        ("delete", "/api/v1/permissions/datasets/{principal_id}"),
        ("get", "/api/v1/visualize"),
        ("post", "/api/v1/auth/login"),
        ("post", "/api/v1/auth/logout"),
        ("get", "/api/v1/auth/me"),
        ("post", "/api/v1/auth/register"),
        ("post", "/api/v1/auth/api-keys"),
        ("get", "/api/v1/auth/api-keys"),
        ("delete", "/api/v1/auth/api-keys/{api_key_id}"),
    ];
    let paths = doc["paths"].as_object().unwrap();
    for (method, path) in expected {
        assert!(paths.get(path).and_then(|p| p.get(method)).is_some(), "{method} {path} is in the document");
    }
    let listed: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(listed, expected.len(), "and nothing else: {:?}", paths.keys().collect::<Vec<_>>());
    assert!(doc["components"]["securitySchemes"]["ApiKeyAuth"].is_object());
    assert!(doc["components"]["schemas"]["DatasetDto"].is_object(), "schemas come from the handlers' types");
    let docs = client.get(server.url("/docs/")).send().await.unwrap();
    assert_eq!(docs.status(), 200);
    assert!(docs.text().await.unwrap().contains("swagger"), "the interactive docs page");
    server.stop().await;
}

#[tokio::test]
async fn answer_tokens_stream_as_delta_frames() {
    use common::fake_llm::{fake_llm, Seen, TOKENS};
    let seen = Arc::new(Seen::default());
    let chat = recall_openai::OpenAiChat::new(recall_openai::OpenAiConfig::new(
        fake_llm(seen.clone()).await,
        "gpt-test",
        Some("sk".into()),
    ))
    .unwrap();
    let server = Server::start_with(Some(Arc::new(chat)), |c| c.answer_streaming = true).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    remember_texts(&client, &server, &key, "bees", &["Honeybees share directions with the waggle dance."]).await;
    let response = client
        .post(server.url("/api/v1/recall"))
        .header("X-Api-Key", &key)
        .header("Accept", "text/event-stream")
        .json(&json!({"query": "How do bees share directions?", "searchType": "RAG_COMPLETION", "datasets": ["bees"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let frames = frames(&response.text().await.unwrap());
    let names: Vec<&str> = frames.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["stage", "stage", "delta", "delta", "delta", "answer_done", "final"], "{frames:?}");
    assert_eq!(frames[1].1, json!({"stage": "generating"}));
    let streamed: String =
        frames.iter().filter(|(e, _)| e == "delta").map(|(_, d)| d["text"].as_str().unwrap()).collect();
    assert_eq!(streamed, TOKENS.concat());
    assert!(frames[6].1["results"][0]["text"].as_str().unwrap().starts_with(&TOKENS.concat()), "{:?}", frames[6]);
    assert_eq!(
        seen.streamed.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the answer came through the streaming call"
    );
    server.stop().await;
}

#[tokio::test]
async fn agentic_completion_over_search_runs_its_loop_on_one_dataset() {
    use common::fake_llm::{scripted_llm, Script};
    let steps = [
        json!({"tool_call": {"tool_name": "memory_search", "arguments": {"query": "waggle dance"}}}).to_string(),
        json!({"final_answer": "They dance."}).to_string(),
    ];
    let script = Script::new(steps, "{}").only_for("AgentStep");
    let chat = recall_openai::OpenAiChat::new(recall_openai::OpenAiConfig::new(
        scripted_llm(script.clone()).await,
        "gpt-test",
        Some("sk".into()),
    ))
    .unwrap();
    let server = Server::start_with(Some(Arc::new(chat)), |_| {}).await;
    let client = Client::new();
    let key = server.key_for(common::DEFAULT_USER).await;
    remember_texts(&client, &server, &key, "bees", &["Honeybees share directions with the waggle dance."]).await;
    remember_texts(&client, &server, &key, "ants", &["Ants follow pheromone trails."]).await;
    let search = |body: Value| client.post(server.url("/api/v1/search")).header("X-Api-Key", &key).json(&body).send();

    let body = json!({"query": "How do bees share directions?", "searchType": "AGENTIC_COMPLETION",
                      "datasets": ["bees"], "maxIter": 3, "tools": ["memory_search"]});
    let (status, results) = json_of(search(body).await.unwrap()).await;
    assert_eq!(status, 200, "{results}");
    assert_eq!(results[0]["dataset_name"], "bees");
    // References are on by default over HTTP: the answer, then its Evidence block.
    let answer = results[0]["search_result"][0].as_str().unwrap();
    assert!(answer.starts_with("They dance.\n\nEvidence:\n- chunk 1 of document text_0.txt"), "{answer}");
    let step_prompts: Vec<String> = script
        .requests()
        .iter()
        .filter(|r| r["response_format"]["json_schema"]["name"] == "AgentStep")
        .map(|r| r["messages"].to_string())
        .collect();
    assert_eq!(step_prompts.len(), 2);
    assert!(step_prompts[1].contains("# Tool call 1: memory_search"), "{}", step_prompts[1]);

    // One dataset, no more.
    let body = json!({"query": "q", "searchType": "AGENTIC_COMPLETION", "datasets": ["bees", "ants"]});
    let (status, error) = json_of(search(body).await.unwrap()).await;
    assert_eq!(status, 422, "{error}");
    assert!(error.to_string().contains("Agentic skill search requires exactly one explicit dataset."), "{error}");
    // max_iter below 1.
    let body = json!({"query": "q", "searchType": "AGENTIC_COMPLETION", "datasets": ["bees"], "max_iter": 0});
    let (status, error) = json_of(search(body).await.unwrap()).await;
    assert_eq!(status, 422, "{error}");
    assert!(error.to_string().contains("max_iter must be a positive integer."), "{error}");
    server.stop().await;
}

/// One MCP message over the streamable HTTP transport: the status, the
/// session id the server gave, and the JSON-RPC answer (from an SSE
/// `data:` frame or a JSON body; `None` for an accepted notification).
async fn mcp_post(
    client: &Client,
    server: &Server,
    key: Option<&str>,
    session: Option<&str>,
    message: Value,
) -> (StatusCode, Option<String>, Option<Value>) {
    let mut request = client
        .post(server.url("/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .json(&message);
    if let Some(key) = key {
        request = request.header("X-Api-Key", key);
    }
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_string());
    let text = response.text().await.unwrap();
    let answer = serde_json::from_str::<Value>(&text).ok().or_else(|| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
    });
    (status, session, answer)
}

#[tokio::test]
async fn mcp_over_http_acts_for_the_authenticated_caller() {
    let server = Server::start(|_| {}).await;
    let client = Client::new();
    let ann = server.key_for("ann@example.com").await;
    let bob = server.key_for("bob@example.com").await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "Web Agent", "version": "1"}}});

    // The same authentication as the REST API.
    let (status, _, _) = mcp_post(&client, &server, None, None, init.clone()).await;
    assert_eq!(status, 401);

    let mut sessions = Vec::new();
    for key in [&ann, &bob] {
        let (status, session, answer) = mcp_post(&client, &server, Some(key), None, init.clone()).await;
        assert_eq!(status, 200, "{answer:?}");
        assert_eq!(answer.unwrap()["result"]["serverInfo"]["name"], "Recall");
        let session = session.expect("a session id");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, _) = mcp_post(&client, &server, Some(key), Some(&session), initialized).await;
        assert!(status.is_success(), "{status}");
        sessions.push(session);
    }
    let call = |id: u64, tool: &str, arguments: Value| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let fact = "The night ferry leaves the harbour at eleven.";
    let (_, _, stored) =
        mcp_post(&client, &server, Some(&ann), Some(&sessions[0]), call(2, "remember", json!({"data": fact}))).await;
    let stored = stored.unwrap();
    assert_eq!(
        stored["result"]["content"][0]["text"],
        "Stored permanently in knowledge graph (dataset=web_agent_memory, status=completed).",
        "{stored}"
    );
    let recall = call(3, "recall", json!({"query": "When does the ferry leave?", "search_type": "CHUNKS"}));
    let (_, _, found) = mcp_post(&client, &server, Some(&ann), Some(&sessions[0]), recall.clone()).await;
    let text = found.unwrap()["result"]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(text.contains("The night ferry leaves the harbour at eleven."), "{text}");
    // Another user sees nothing of it.
    let (_, _, other) = mcp_post(&client, &server, Some(&bob), Some(&sessions[1]), recall).await;
    let other = other.unwrap();
    assert!(!other.to_string().contains("night ferry"), "{other}");
    let (_, _, listed) =
        mcp_post(&client, &server, Some(&bob), Some(&sessions[1]), call(4, "list_datasets", json!({}))).await;
    assert_eq!(listed.unwrap()["result"]["structuredContent"]["datasets"], json!([]));
    server.stop().await;
}
