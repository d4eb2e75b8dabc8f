#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Every search type end to end on a fixed corpus (the offline extractor on
//! the in-memory stack), completion types against a fake OpenAI-compatible
//! server started here (real HTTP), asserting the prompts it receives.

mod common;

use common::{me, offline_builder};

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use axum::routing::post;
use axum::{Json, Router};
use recall_core::ports::{GraphStore, RelationalPorts};
use recall_core::{DatasetId, Node, RecallError, RecallResponse, ResponseGraphEntry, SearchType};
use recall_engine::extract::{ExtractiveSummarizer, RuleBasedExtractor};
use recall_engine::{Engine, EngineBuilder, EngineConfig, RecallRequest, RememberInput};
use recall_memory::{HashingEmbedder, MemoryGraphStore, MemoryRelationalStore, MemoryVectorStore};
use recall_openai::{OpenAiChat, OpenAiConfig};
use recall_retrievers::prompts;
use recall_retrievers::{
    brute_force_triplet_search, DatasetPorts, LlmContext, Retriever, RetrieverCall, Triplet, TripletSearch,
};
use serde_json::{json, Value};

const ALPHA: &str = "Ada Lovelace worked with Charles Babbage. Charles Babbage designed the Analytical Engine.";
const BETA: &str = "The Analytical Engine inspired Alan Turing.";
const GAMMA: &str = "In 1843 Ada Lovelace published her notes on the Analytical Engine.";

type Responder = Arc<dyn Fn(&Value) -> String + Send + Sync>;

/// A fake OpenAI-compatible chat server: answers with `respond`, records every request.
struct FakeLlm {
    endpoint: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl FakeLlm {
    async fn start(respond: Responder) -> FakeLlm {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let app = Router::new().route(
            "/v1/chat/completions",
            post(move |Json(body): Json<Value>| {
                let log = log.clone();
                let respond = respond.clone();
                async move {
                    let content = respond(&body);
                    log.lock().unwrap().push(body);
                    Json(json!({"choices": [{"message": {"role": "assistant", "content": content}}]}))
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeLlm { endpoint: format!("http://{addr}/v1"), requests }
    }

    fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

fn system_of(request: &Value) -> String {
    request["messages"][0]["content"].as_str().unwrap_or_default().to_string()
}

fn user_of(request: &Value) -> String {
    request["messages"][1]["content"].as_str().unwrap_or_default().to_string()
}

async fn fixture(engine: &Engine) {
    engine
        .remember(
            &me(engine).await,
            "d",
            &[
                RememberInput::Text { text: ALPHA.into(), name: Some("alpha.txt".into()) },
                RememberInput::Text { text: BETA.into(), name: Some("beta.txt".into()) },
                RememberInput::Text { text: GAMMA.into(), name: Some("gamma.txt".into()) },
            ],
        )
        .await
        .unwrap();
}

async fn offline() -> Engine {
    let engine = offline_builder(EngineConfig::default(), 64).build().unwrap();
    fixture(&engine).await;
    engine
}

async fn with_llm(respond: Responder, config: EngineConfig) -> (Engine, FakeLlm) {
    let fake = FakeLlm::start(respond).await;
    let chat = OpenAiChat::new(OpenAiConfig::new(fake.endpoint.clone(), "gpt-test", Some("sk-test".into()))).unwrap();
    let engine = offline_builder(config, 64).llm(Some(Arc::new(chat))).build().unwrap();
    fixture(&engine).await;
    (engine, fake)
}

fn graph_items(results: Vec<RecallResponse>) -> Vec<ResponseGraphEntry> {
    results
        .into_iter()
        .map(|r| match r {
            RecallResponse::Graph(e) => e,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

async fn run(engine: &Engine, request: RecallRequest) -> Vec<ResponseGraphEntry> {
    graph_items(engine.recall(&me(engine).await, &request).await.unwrap())
}

async fn dataset_id(engine: &Engine) -> DatasetId {
    let user = engine.relational().users.find_user("default_user@example.com").await.unwrap().unwrap();
    engine.relational().datasets.permitted_datasets(&user, recall_core::Permission::Read).await.unwrap()[0].id
}

#[tokio::test]
async fn chunks_lexical_ranks_by_bm25_and_fills_with_zero_score_chunks() {
    let engine = offline().await;
    let items = run(&engine, RecallRequest::new("Alan Turing").query_type(SearchType::ChunksLexical).top_k(3)).await;
    assert_eq!(items.len(), 3, "zero-score chunks fill up to top_k");
    assert_eq!(items[0].text, BETA);
    assert!(items.iter().all(|i| i.kind == "chunk" && i.score.is_none()));
    assert_eq!(items[0].metadata["document_name"], "beta.txt");
    assert_eq!(items[0].metadata["chunk_index"], 0);
    // Only stop words: nothing.
    let none = run(&engine, RecallRequest::new("the of and").query_type(SearchType::ChunksLexical)).await;
    assert!(none.is_empty());
}

/// The BM25 index follows remember and forget (it is brought up to date
/// from the changed chunks, not rebuilt): the new chunk is found, and once
/// it is forgotten the rankings are what they were before it came.
#[tokio::test]
async fn chunks_lexical_sees_new_data_after_remember_and_forget() {
    let engine = offline().await;
    let texts = |items: Vec<ResponseGraphEntry>| items.into_iter().map(|i| i.text).collect::<Vec<_>>();
    let lexical = |q: &str, k: i64| RecallRequest::new(q).query_type(SearchType::ChunksLexical).top_k(k);
    let before = texts(run(&engine, lexical("zeppelin", 1)).await);
    assert_ne!(before[0], "A zeppelin is an airship.");
    let turing_before = texts(run(&engine, lexical("Alan Turing machine", 4)).await);
    let zeppelin = RememberInput::Text { text: "A zeppelin is an airship.".into(), name: Some("zeppelin.txt".into()) };
    engine.remember(&me(&engine).await, "d", &[zeppelin]).await.unwrap();
    let after = texts(run(&engine, lexical("zeppelin", 1)).await);
    assert_eq!(after[0], "A zeppelin is an airship.");
    engine.forget_document(&me(&engine).await, "d", "zeppelin.txt").await.unwrap();
    let forgotten = texts(run(&engine, lexical("zeppelin airship", 4)).await);
    assert!(!forgotten.iter().any(|t| t.contains("zeppelin")), "{forgotten:?}");
    assert_eq!(texts(run(&engine, lexical("Alan Turing machine", 4)).await), turing_before);
}

#[tokio::test]
async fn summaries_are_vector_hits_with_distances() {
    let engine = offline().await;
    let items = run(&engine, RecallRequest::new("Alan Turing").query_type(SearchType::Summaries).top_k(2)).await;
    assert_eq!(items.len(), 2);
    assert!(items.iter().all(|i| i.kind == "summary" && i.score.is_some()));
    assert!(items[0].score <= items[1].score);
}

#[tokio::test]
async fn graph_completion_only_context_returns_the_prompt_pair_without_an_llm_call() {
    let (engine, fake) = with_llm(Arc::new(|_| "unused".into()), EngineConfig::default()).await;
    let before = fake.requests().len();
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada Lovelace work with?")
            .query_type(SearchType::GraphCompletion)
            .only_context(true),
    )
    .await;
    assert_eq!(fake.requests().len(), before, "only_context makes no LLM call");
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item.system_prompt.as_deref(), Some(prompts::system(prompts::ANSWER_SIMPLE_QUESTION).unwrap().as_str()));
    assert!(item.text.starts_with("The question is: `Who did Ada Lovelace work with?`\n"), "{}", item.text);
    assert!(item.text.contains("`Nodes:\nNode: "), "{}", item.text);
    assert!(item.text.contains("\n\n\nConnections:\n"), "{}", item.text);
    assert!(item.text.contains("ada lovelace --[worked]--> charles babbage"), "{}", item.text);
    // At most top_k connection lines.
    let limited = run(
        &engine,
        RecallRequest::new("Who did Ada Lovelace work with?")
            .query_type(SearchType::GraphCompletion)
            .only_context(true)
            .top_k(2),
    )
    .await;
    let connections = limited[0].text.split("Connections:\n").nth(1).unwrap();
    assert_eq!(connections.trim_end_matches('`').lines().count(), 2, "{connections}");
}

/// A long-lived engine answers graph searches from its sketch cache once
/// it has loaded (from the second search at a data version on): the
/// answers stay those of the store, and a write is seen at once.
#[tokio::test]
async fn repeated_graph_recalls_answer_the_same_before_and_after_the_sketch_cache_loads() {
    let engine = offline().await;
    let ask = |q: &str| RecallRequest::new(q).query_type(SearchType::GraphCompletion).only_context(true);
    let first = run(&engine, ask("Who did Ada Lovelace work with?")).await;
    assert!(first[0].text.contains("ada lovelace --[worked]--> charles babbage"), "{}", first[0].text);
    for round in 0..6 {
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        let again = run(&engine, ask("Who did Ada Lovelace work with?")).await;
        assert_eq!(again[0].text, first[0].text, "round {round}");
    }
    engine
        .remember(
            &me(&engine).await,
            "d",
            &[RememberInput::Text {
                text: "Ada Lovelace worked with Mary Somerville.".into(),
                name: Some("delta.txt".into()),
            }],
        )
        .await
        .unwrap();
    for round in 0..4 {
        let after = run(&engine, ask("Who did Ada Lovelace work with?")).await;
        assert!(
            after[0].text.contains("ada lovelace --[worked]--> mary somerville"),
            "round {round}: {}",
            after[0].text
        );
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
    }
}

#[tokio::test]
async fn graph_completion_answers_through_the_llm_with_the_rendered_prompts() {
    let (engine, fake) = with_llm(Arc::new(|_| "Charles Babbage.".into()), EngineConfig::default()).await;
    let n = fake.requests().len();
    let items =
        run(&engine, RecallRequest::new("Who did Ada Lovelace work with?").query_type(SearchType::GraphCompletion))
            .await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].text, "Charles Babbage.");
    assert_eq!(items[0].kind, "graph_completion");
    assert!(items[0].metadata.is_empty());
    let sent = &fake.requests()[n..];
    assert_eq!(sent.len(), 1);
    assert_eq!(system_of(&sent[0]), "Answer the question using the provided context. Be as brief as possible.");
    let preview = run(
        &engine,
        RecallRequest::new("Who did Ada Lovelace work with?")
            .query_type(SearchType::GraphCompletion)
            .only_context(true),
    )
    .await;
    assert_eq!(user_of(&sent[0]), preview[0].text, "the prompt sent is the prompt previewed");
}

#[tokio::test]
async fn graph_completion_references_fill_metadata_and_the_evidence_block() {
    let (engine, _fake) = with_llm(Arc::new(|_| "Babbage.".into()), EngineConfig::default()).await;
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada Lovelace work with?")
            .query_type(SearchType::GraphCompletion)
            .include_references(true),
    )
    .await;
    let item = &items[0];
    let evidence = item.metadata["evidence"].as_array().unwrap();
    let kinds: Vec<&str> = evidence.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"graph_node") && kinds.contains(&"graph_edge") && kinds.contains(&"segment"), "{kinds:?}");
    let ranks: Vec<u64> = evidence.iter().map(|e| e["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, (0..evidence.len() as u64).collect::<Vec<_>>());
    let segment = evidence.iter().find(|e| e["kind"] == "segment").unwrap();
    assert_eq!(segment["role"], "supports_assertion");
    assert!(item.text.starts_with("Babbage.\n\nEvidence:\n- chunk 1 of document "), "{}", item.text);
    assert!(item.text.contains("(data_id: "), "{}", item.text);
}

/// Each `segment` supports its edge: a chunk endpoint by itself, an edge
/// between entities by a chunk that contains its source entity.
#[tokio::test]
async fn graph_evidence_supports_each_edge_with_its_chunk_or_a_chunk_holding_it() {
    let (engine, _fake) = with_llm(Arc::new(|_| "Babbage.".into()), EngineConfig::default()).await;
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada Lovelace work with?")
            .query_type(SearchType::GraphCompletion)
            .top_k(30)
            .only_context(true)
            .include_references(true),
    )
    .await;
    let evidence = items[0].metadata["evidence"].as_array().unwrap();
    let text = |v: &Value, key: &str| v[key].as_str().unwrap().to_string();
    let edges: std::collections::HashMap<String, (String, String)> = evidence
        .iter()
        .filter(|e| e["kind"] == "graph_edge")
        .map(|e| (text(e, "artifact_id"), (text(e, "source_node_id"), text(e, "target_node_id"))))
        .collect();
    let graph = engine.graph().get_graph(dataset_id(&engine).await).await.unwrap();
    let chunks: std::collections::HashSet<String> =
        graph.nodes.iter().filter(|n| n.node_type == "DocumentChunk").map(|n| n.id.to_string()).collect();
    let contains: std::collections::HashSet<(String, String)> = graph
        .edges
        .iter()
        .filter(|e| e.relationship_name == "contains")
        .map(|e| (e.source_node_id.to_string(), e.target_node_id.to_string()))
        .collect();
    let (mut by_chunk_end, mut between_entities) = (0, 0);
    for segment in evidence.iter().filter(|e| e["kind"] == "segment") {
        let edge = text(segment, "assertion_id");
        let (source, target) = &edges[&edge];
        let chunk = text(segment, "chunk_id");
        assert!(chunks.contains(&chunk), "a segment is a chunk: {segment}");
        if chunks.contains(source) || chunks.contains(target) {
            assert!(&chunk == source || &chunk == target, "a chunk endpoint supports its edge: {segment}");
            by_chunk_end += 1;
        } else {
            assert!(contains.contains(&(chunk.clone(), source.clone())), "the chunk holds the source: {segment}");
            between_entities += 1;
        }
    }
    assert!(by_chunk_end > 0 && between_entities > 0, "{by_chunk_end} {between_entities}");
}

#[tokio::test]
async fn rag_completion_uses_chunks_and_cites_them() {
    let (engine, fake) =
        with_llm(Arc::new(|_| "Alan Turing was inspired by the Analytical Engine.".into()), EngineConfig::default())
            .await;
    let n = fake.requests().len();
    let items = run(
        &engine,
        RecallRequest::new("Who was inspired by the Analytical Engine?")
            .query_type(SearchType::RagCompletion)
            .top_k(1)
            .include_references(true),
    )
    .await;
    let sent = &fake.requests()[n..];
    assert_eq!(sent.len(), 1);
    let user = user_of(&sent[0]);
    assert!(
        user.starts_with("The question is: `Who was inspired by the Analytical Engine?`\nAnd here is the context: `")
    );
    let item = &items[0];
    assert_eq!(item.kind, "rag_completion");
    let evidence = item.metadata["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1);
    assert_eq!(evidence[0]["kind"], "segment");
    assert_eq!(evidence[0]["role"], "used_as_context");
    let doc = evidence[0]["document_name"].as_str().unwrap();
    assert!(item.text.contains(&format!("Evidence:\n- chunk 1 of document {doc} (data_id: ")), "{}", item.text);
}

#[tokio::test]
async fn hybrid_context_has_passages_entities_and_facts() {
    let (engine, fake) = with_llm(Arc::new(|_| "ok".into()), EngineConfig::default()).await;
    let n = fake.requests().len();
    let items =
        run(&engine, RecallRequest::new("Ada Lovelace").query_type(SearchType::HybridCompletion).only_context(true))
            .await;
    assert_eq!(fake.requests().len(), n);
    let text = &items[0].text;
    assert!(text.starts_with("The question is: `Ada Lovelace`"), "{text}");
    assert!(text.contains("## Relevant passages\n"), "{text}");
    assert!(text.contains("## Relevant entities\n### ada lovelace"), "{text}");
    // Lexical and vector chunks are merged without duplicates.
    let passages = text.split("## Relevant passages\n").nth(1).unwrap().split("\n\n## ").next().unwrap();
    let list: Vec<&str> = passages.split("\n---\n").collect();
    let unique: std::collections::BTreeSet<&str> = list.iter().copied().collect();
    assert_eq!(list.len(), unique.len());
    assert!(list.len() <= 10);
}

#[tokio::test]
async fn hybrid_rejects_graph_only_knobs_and_defers_on_others() {
    let (engine, _fake) = with_llm(Arc::new(|_| "ok".into()), EngineConfig::default()).await;
    let mut request = RecallRequest::new("Ada").query_type(SearchType::HybridCompletion);
    request.options.wide_search_top_k = Some(10);
    let err = engine.recall(&me(&engine).await, &request).await.unwrap_err();
    assert_eq!(err.name(), "InvalidHybridSearchConfig");
    assert_eq!(err.to_string(), "wide_search_top_k requires query_type=SearchType.GRAPH_COMPLETION.");
    assert_eq!(err.http_status(), 422);
    let mut request = RecallRequest::new("Ada").query_type(SearchType::HybridCompletion);
    request.options.feedback_influence = 0.5;
    let items = run(&engine, request).await;
    assert_eq!(items[0].search_type, SearchType::GraphCompletion, "feedback_influence defers to GRAPH_COMPLETION");
}

#[tokio::test]
async fn structured_output_is_validated_and_returned_in_structured() {
    let schema = json!({"type": "object", "properties": {"person": {"type": "string"}}, "required": ["person"]});
    let (engine, fake) = with_llm(
        Arc::new(|body: &Value| {
            if body.get("response_format").is_some() {
                json!({"person": "Charles Babbage"}).to_string()
            } else {
                "free text".into()
            }
        }),
        EngineConfig::default(),
    )
    .await;
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada work with?")
            .query_type(SearchType::GraphCompletion)
            .response_schema(schema.clone()),
    )
    .await;
    assert_eq!(items[0].kind, "structured");
    assert_eq!(items[0].structured, Some(json!({"person": "Charles Babbage"})));
    assert_eq!(items[0].text, "{\"person\":\"Charles Babbage\"}");
    let last = fake.requests().pop().unwrap();
    assert_eq!(last["response_format"]["json_schema"]["schema"], schema);

    // An answer that does not validate is asked for twice, then refused.
    let (engine, fake) = with_llm(Arc::new(|_| json!({"person": 7}).to_string()), EngineConfig::default()).await;
    let n = fake.requests().len();
    let err = engine
        .recall(
            &me(&engine).await,
            &RecallRequest::new("Who?").query_type(SearchType::RagCompletion).response_schema(schema),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, RecallError::Provider(_)), "{err}");
    assert_eq!(fake.requests().len() - n, 2);
    // A schema outside the subset is refused before any retrieval or LLM call.
    let n = fake.requests().len();
    for (schema, suffix) in [
        (json!({"type": 5}), "root schema must have type 'object'"),
        (json!({"type": "array", "items": {"type": "string"}}), "root schema must have type 'object'"),
        (
            json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}),
            "unsupported JSON Schema keyword: allOf",
        ),
        (
            json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}),
            "unsupported JSON Schema keyword: oneOf",
        ),
        (deep_schema(13), "nesting deeper than 10 levels"),
    ] {
        for query_type in [SearchType::RagCompletion, SearchType::GraphCompletion, SearchType::Chunks] {
            let request = RecallRequest::new("Who?").query_type(query_type).response_schema(schema.clone());
            let err = engine.recall(&me(&engine).await, &request).await.unwrap_err();
            assert_eq!((err.name(), err.http_status()), ("CogneeValidationError", 422));
            assert_eq!(err.to_string(), format!("response_schema: {suffix}"));
            let mut search = recall_engine::SearchRequest::new("Who?").query_type(query_type);
            search.options.response_schema = Some(schema.clone());
            let err = engine.search(&me(&engine).await, &search).await.unwrap_err();
            assert_eq!(err.to_string(), format!("response_schema: {suffix}"));
        }
    }
    assert_eq!(fake.requests().len(), n, "a rejected schema costs no LLM call");
}

/// An object schema with `levels` objects nested below the root.
fn deep_schema(levels: usize) -> Value {
    let mut node = json!({"type": "string"});
    for _ in 0..levels {
        node = json!({"type": "object", "properties": {"p": node}});
    }
    json!({"type": "object", "properties": {"p": node}})
}

#[tokio::test]
async fn structured_answers_keep_the_models_shape_and_graph_summary_ignores_the_schema() {
    let schema = json!({
        "type": "object", "title": "Person",
        "properties": {"person": {"type": "string", "minLength": 100}, "year": {"type": "integer"}},
        "required": ["person"]
    });
    let (engine, fake) = with_llm(
        Arc::new(|body: &Value| {
            if body.get("response_format").is_some() {
                json!({"person": "Charles Babbage", "hobby": "engines"}).to_string()
            } else {
                "free text".into()
            }
        }),
        EngineConfig::default(),
    )
    .await;
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada work with?")
            .query_type(SearchType::RagCompletion)
            .response_schema(schema.clone()),
    )
    .await;
    // Value constraints are ignored; an absent optional property is null; an undeclared one is dropped.
    assert_eq!(items[0].structured, Some(json!({"person": "Charles Babbage", "year": null})));
    let last = fake.requests().pop().unwrap();
    assert_eq!(last["response_format"]["json_schema"]["name"], "Person", "the model name is the title");

    let items = run(
        &engine,
        RecallRequest::new("Who did Ada work with?")
            .query_type(SearchType::GraphSummaryCompletion)
            .response_schema(schema),
    )
    .await;
    assert_eq!(items[0].kind, "graph_completion", "{items:?}");
    assert_eq!(items[0].structured, None);
    assert_eq!(items[0].text, "free text");
}

#[tokio::test]
async fn cot_runs_validation_and_follow_up_rounds() {
    let (engine, fake) = with_llm(
        Arc::new(|body: &Value| {
            let system = system_of(body);
            if system.starts_with("You are a careful reviewer") {
                "The context lacks dates.".into()
            } else if system.starts_with("You ask exactly one") {
                "What did Babbage design?".into()
            } else {
                "Babbage.".into()
            }
        }),
        EngineConfig::default(),
    )
    .await;
    let n = fake.requests().len();
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada work with?")
            .query_type(SearchType::GraphCompletionCot)
            .config("max_iter", json!(2)),
    )
    .await;
    assert_eq!(items[0].text, "Babbage.");
    let sent = &fake.requests()[n..];
    // initial answer, then per round validation + follow-up (+ an answer except in the last), then the final answer
    assert_eq!(sent.len(), 1 + 2 + 1 + 2 + 1, "{}", sent.len());
    let validation = sent.iter().find(|r| system_of(r).starts_with("You are a careful reviewer")).unwrap();
    assert!(user_of(validation)
        .starts_with("<QUESTION>\nWho did Ada work with?\n</QUESTION>\n\n<ANSWER>\nBabbage.\n</ANSWER>"));
}

#[tokio::test]
async fn context_extension_stops_when_no_new_triplets_arrive() {
    let (engine, fake) =
        with_llm(Arc::new(|_| "Charles Babbage designed the Analytical Engine.".into()), EngineConfig::default()).await;
    let n = fake.requests().len();
    let items = run(
        &engine,
        RecallRequest::new("Who did Ada work with?")
            .query_type(SearchType::GraphCompletionContextExtension)
            .config("context_extension_rounds", json!(3)),
    )
    .await;
    assert_eq!(items.len(), 1);
    let calls = fake.requests().len() - n;
    assert!((2..=4).contains(&calls), "between one round and three, plus the final answer: {calls}");
}

#[tokio::test]
async fn summary_decomposition_and_feeling_lucky() {
    let (engine, fake) = with_llm(
        Arc::new(|body: &Value| {
            let system = system_of(body);
            if system.starts_with("You are a summarisation") {
                "Ada worked with Babbage.".into()
            } else if system.starts_with("Split the user's question") {
                "Who is Ada?\nWhat did Babbage design?".into()
            } else if system.starts_with("You choose how to search") {
                "not a type".into()
            } else {
                "answer".into()
            }
        }),
        EngineConfig::default(),
    )
    .await;
    let items =
        run(&engine, RecallRequest::new("Ada?").query_type(SearchType::GraphSummaryCompletion).only_context(true))
            .await;
    assert!(items[0].text.contains("`Ada worked with Babbage.`"), "the summary is the context: {}", items[0].text);

    let n = fake.requests().len();
    let items = run(
        &engine,
        RecallRequest::new("Who is Ada and what did Babbage design?")
            .query_type(SearchType::GraphCompletionDecomposition),
    )
    .await;
    assert_eq!(items[0].text, "answer");
    let sent = &fake.requests()[n..];
    let last = user_of(sent.last().unwrap());
    assert!(last.contains("Q: Who is Ada?\nA: answer\n\nQ: What did Babbage design?\nA: answer"), "{last}");

    let items = run(&engine, RecallRequest::new("Ada?").query_type(SearchType::FeelingLucky)).await;
    assert_eq!(items[0].search_type, SearchType::RagCompletion, "an unusable choice falls back to RAG_COMPLETION");
}

#[tokio::test]
async fn temporal_moves_chunks_in_the_time_window_first() {
    let (engine, _fake) = with_llm(Arc::new(|_| "ok".into()), EngineConfig::default()).await;
    let items = run(
        &engine,
        RecallRequest::new("What did Ada publish in 1843?").query_type(SearchType::Temporal).only_context(true),
    )
    .await;
    let passages = items[0].text.split("## Relevant passages\n").nth(1).unwrap();
    assert!(passages.starts_with(GAMMA), "{passages}");
}

#[tokio::test]
async fn triplet_completion_needs_triplet_embeddings() {
    let (engine, _fake) = with_llm(Arc::new(|_| "ok".into()), EngineConfig::default()).await;
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("Ada").query_type(SearchType::TripletCompletion))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("set TRIPLET_EMBEDDING=true"), "{err}");
    let config = EngineConfig { triplet_embedding: true, ..Default::default() };
    let (engine, fake) = with_llm(Arc::new(|_| "Babbage.".into()), config).await;
    let n = fake.requests().len();
    let items =
        run(&engine, RecallRequest::new("Ada worked with").query_type(SearchType::TripletCompletion).top_k(2)).await;
    assert_eq!(items[0].text, "Babbage.");
    assert_eq!(items[0].search_type, SearchType::TripletCompletion);
    let user = user_of(&fake.requests()[n]);
    assert!(user.contains("ada lovelace -> worked -> charles babbage"), "{user}");
}

#[tokio::test]
async fn coding_rules_are_the_texts_of_the_node_set() {
    let engine = offline().await;
    let ds = dataset_id(&engine).await;
    let rule = |id: u128, text: &str, set: &str| Node {
        id: uuid::Uuid::from_u128(id),
        node_type: "Rule".into(),
        properties: json!({"text": text, "belongs_to_set": [set]}).as_object().cloned().unwrap(),
    };
    engine
        .graph()
        .upsert_nodes(ds, &[rule(1, "Use snake_case.", "coding_agent_rules"), rule(2, "Prefer tabs.", "style")])
        .await
        .unwrap();
    let items = run(&engine, RecallRequest::new("anything").query_type(SearchType::CodingRules)).await;
    let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(texts, vec!["Use snake_case."]);
    assert_eq!(items[0].kind, "coding_rule");
    let items = run(
        &engine,
        RecallRequest::new("x").query_type(SearchType::CodingRules).node_name(["style", "coding_agent_rules"]),
    )
    .await;
    let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(texts, vec!["Prefer tabs.", "Use snake_case."]);
}

#[tokio::test]
async fn cypher_is_disabled_by_default_and_unsupported_on_stores_without_cypher() {
    let engine = offline().await;
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("MATCH (n) RETURN n").query_type(SearchType::Cypher))
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), 403);
    assert!(err.to_string().starts_with("CYPHER search is disabled by default for security reasons."));
    let engine = offline_builder(EngineConfig { allow_cypher_query: true, ..Default::default() }, 64).build().unwrap();
    fixture(&engine).await;
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("MATCH (n) RETURN n").query_type(SearchType::Cypher))
        .await
        .unwrap_err();
    assert_eq!(err.name(), "SearchTypeNotSupported");
    assert_eq!(err.http_status(), 400);
}

#[tokio::test]
async fn a_search_type_with_no_retriever_is_an_error() {
    let engine = offline().await;
    let err = engine
        .recall(&me(&engine).await, &RecallRequest::new("q").query_type(SearchType::GraphReport))
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "Unsupported search type: SearchType.GRAPH_REPORT");
}

/// A contributor's retriever: returns the query reversed.
struct Reverse;

#[async_trait]
impl Retriever for Reverse {
    async fn get_retrieved_objects(&self, call: &RetrieverCall<'_>) -> recall_core::Result<Vec<Value>> {
        let query = call.query;
        Ok(vec![json!({"text": query.chars().rev().collect::<String>(), "score": 0.5})])
    }

    async fn get_context_from_objects(
        &self,
        _call: &RetrieverCall<'_>,
        objects: &[Value],
    ) -> recall_core::Result<LlmContext> {
        Ok(LlmContext::List(objects.iter().map(|o| o["text"].as_str().unwrap_or_default().to_string()).collect()))
    }

    async fn get_completion_from_context(
        &self,
        _call: &RetrieverCall<'_>,
        objects: &[Value],
        _context: &LlmContext,
    ) -> recall_core::Result<Option<Vec<Value>>> {
        Ok(Some(objects.to_vec()))
    }
}

#[tokio::test]
async fn a_registered_retriever_replaces_the_built_in_one() {
    let engine = offline_builder(EngineConfig::default(), 64)
        .register_retriever(SearchType::Chunks, Arc::new(Reverse))
        .build()
        .unwrap();
    fixture(&engine).await;
    let items = run(&engine, RecallRequest::new("abc").query_type(SearchType::Chunks)).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].text, "cba");
    assert_eq!(items[0].score, Some(0.5));
    let ctx = run(&engine, RecallRequest::new("abc").query_type(SearchType::Chunks).only_context(true)).await;
    assert_eq!(ctx[0].text, "cba");
    assert_eq!(ctx[0].system_prompt, None);
}

#[tokio::test]
async fn temporal_asks_the_llm_for_the_window_when_one_is_configured() {
    // "back then" has no absolute date: only the LLM can place it in 1843.
    let (engine, fake) = with_llm(
        Arc::new(|body: &Value| {
            if body["response_format"]["json_schema"]["name"] == "QueryInterval" {
                json!({"starts_at": {"year": 1843, "month": null, "day": null}, "ends_at": {"year": 1844}}).to_string()
            } else {
                "ok".into()
            }
        }),
        EngineConfig::default(),
    )
    .await;
    let n = fake.requests().len();
    let items = run(
        &engine,
        RecallRequest::new("What did Ada Lovelace publish back then?")
            .query_type(SearchType::Temporal)
            .only_context(true),
    )
    .await;
    let passages = items[0].text.split("## Relevant passages\n").nth(1).unwrap();
    assert!(passages.starts_with(GAMMA), "{passages}");
    let sent = &fake.requests()[n..];
    assert_eq!(sent.len(), 1, "only the window extraction is called with only_context");
    assert!(system_of(&sent[0]).starts_with("Extract the time window a question is about"));
    assert_eq!(user_of(&sent[0]), "What did Ada Lovelace publish back then?");
}

/// The pruned projection (seed–seed edge sketches first, then the edges of
/// hit types, then a seed's other edges only when they could still make the
/// top k; the winners read in full) ranks exactly like the whole 1-hop
/// projection: for every k, the first k triplets of the unbounded ranking.
/// On the memory store (the port's default sketch and key reads) and on
/// SQLite (its type-key column and indexes).
#[tokio::test]
async fn pruned_triplet_search_equals_ranking_the_whole_projection() {
    pruned_search_equals_whole_projection(Arc::new(MemoryGraphStore::new())).await;
}

#[tokio::test]
async fn pruned_triplet_search_equals_ranking_the_whole_projection_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("graph.db").display());
    let db = recall_sql::SqlDatabase::connect(&url).await.unwrap();
    pruned_search_equals_whole_projection(Arc::new(recall_sql::SqlGraphStore::new(db))).await;
}

async fn pruned_search_equals_whole_projection(graph: Arc<dyn GraphStore>) {
    let vectors = Arc::new(MemoryVectorStore::new());
    let embedder = Arc::new(HashingEmbedder::new(64).unwrap());
    let engine = EngineBuilder::new(
        RelationalPorts::from_store(Arc::new(MemoryRelationalStore::new())),
        graph.clone(),
        vectors.clone(),
        embedder.clone(),
    )
    .extractor(Arc::new(RuleBasedExtractor))
    .summarizer(Arc::new(ExtractiveSummarizer::default()))
    .build()
    .unwrap();
    // Hubs: every document names one of three cities and one of four people.
    let cities = ["London", "Paris", "Vienna"];
    let people = ["Ada Lovelace", "Charles Babbage", "Alan Turing", "Grace Hopper"];
    let docs: Vec<RememberInput> = (0..24)
        .map(|i| RememberInput::Text {
            text: format!(
                "{} met Engineer{i} in {}. Engineer{i} built Machine{i} for {}.",
                people[i % 4],
                cities[i % 3],
                people[(i + 1) % 4]
            ),
            name: Some(format!("doc{i}.txt")),
        })
        .collect();
    engine.remember(&me(&engine).await, "d", &docs).await.unwrap();
    let user = engine.relational().users.find_user("default_user@example.com").await.unwrap().unwrap();
    let dataset =
        engine.relational().datasets.permitted_datasets(&user, recall_core::Permission::Read).await.unwrap().remove(0);
    let mut stored = graph.get_graph(dataset.id).await.unwrap();
    assert!(stored.edges.iter().any(|e| e.properties.contains_key("document_ids")), "relations carry provenance");
    // Feedback on some edges and nodes, for the runs with feedback influence.
    for (i, e) in stored.edges.iter_mut().enumerate() {
        e.properties.insert("feedback_weight".into(), json!((i % 5) as f64 / 4.0));
    }
    for (i, n) in stored.nodes.iter_mut().enumerate() {
        n.properties.insert("feedback_weight".into(), json!((i % 3) as f64 / 2.0));
    }
    graph.upsert_edges(dataset.id, &stored.edges).await.unwrap();
    graph.upsert_nodes(dataset.id, &stored.nodes).await.unwrap();
    let ctx = DatasetPorts {
        dataset,
        graph,
        vectors,
        embedder,
        llm: None,
        data_version: 0,
        events: Arc::new(recall_core::NoEvents),
        caller: None,
        sketch: None,
    };
    let whole = ctx.graph.ranking().whole_sketch(ctx.dataset.id).await.unwrap();
    let index = recall_retrievers::graph::SketchIndex::build(whole).unwrap();
    assert_eq!(index.len().0, stored.nodes.len());
    let cached_ctx = DatasetPorts { sketch: Some(Arc::new(index)), ..ctx.clone() };
    let params = |top_k: usize, wide: usize, penalty: f64, feedback_influence: f64| TripletSearch {
        top_k,
        wide_search_top_k: wide,
        penalty,
        feedback_influence,
        neighborhood_depth: None,
        neighborhood_seed_top_k: None,
        node_filter: None,
    };
    for query in ["Who met Engineer3 in Paris?", "Machine7", "Ada Lovelace and Alan Turing", "Vienna"] {
        // A small penalty lets edges to unmatched nodes compete with edges between hits.
        for (wide, penalty, fi) in [
            (5, 6.5, 0.0),
            (100, 6.5, 0.0),
            (5, 0.6, 0.0),
            (100, 0.9, 0.0),
            (20, 0.2, 0.0),
            (100, 6.5, 0.7),
            (5, 0.9, 0.3),
        ] {
            // With top_k past every edge, nothing can be pruned: the reference.
            let all = brute_force_triplet_search(&ctx, query, &params(1_000_000, wide, penalty, fi)).await.unwrap();
            assert!(all.len() > 20, "{query}: the projection has {} triplets", all.len());
            assert!(
                all.iter().all(|t| !t.edge.properties.contains_key("document_ids")),
                "the memory fragment projects Cognee's edge properties, never the provenance"
            );
            for k in [1, 3, 5, 10, 20] {
                let top = brute_force_triplet_search(&ctx, query, &params(k, wide, penalty, fi)).await.unwrap();
                let key =
                    |t: &Triplet| (t.edge.source_node_id, t.edge.relationship_name.clone(), t.edge.target_node_id);
                assert_eq!(
                    top.iter().map(|t| (key(t), t.score)).collect::<Vec<_>>(),
                    all[..k].iter().map(|t| (key(t), t.score)).collect::<Vec<_>>(),
                    "{query}, wide {wide}, penalty {penalty}, influence {fi}, top {k}"
                );
                assert_eq!(top, all[..k].to_vec(), "the winners read in full, as the reference read them");
                // Ranked on the sketch in memory (the engine's sketch cache):
                // the same triplets.
                let cached =
                    brute_force_triplet_search(&cached_ctx, query, &params(k, wide, penalty, fi)).await.unwrap();
                assert_eq!(cached, top, "{query}, wide {wide}, penalty {penalty}, influence {fi}, top {k}, cached");
            }
        }
    }
}
