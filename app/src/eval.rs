//! `recall eval`: a retrieval-quality harness (docs/quality.md).
//!
//! It remembers a corpus into a dataset, asks each question with every
//! search type under test, and scores what came back:
//!
//! - **answer recall@k** (k = 1, 5, 10): the gold answer string occurs
//!   (case-insensitively) in what was retrieved. For the ranked types
//!   (CHUNKS, CHUNKS_LEXICAL, SUMMARIES) that is the first k results of one
//!   top-10 recall; for the context types (HYBRID_COMPLETION,
//!   GRAPH_COMPLETION and the other completions, asked with only_context) it
//!   is the one context built with `top_k = k`, the question's own words
//!   taken out of it first.
//! - **MRR**: 1 / the rank of the first result holding the answer (ranked
//!   types), or 1 / the smallest `top_k` whose context holds it (context
//!   types); 0 when not found within 10.
//! - **latency p50** of the top-10 call.
//! - With `--answers` (an LLM configured): the completion types answer for
//!   real and are scored by **exact match** and **token F1** against the
//!   gold answer, normalised as HotpotQA's evaluation script does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use recall_core::{RecallError, RecallResponse, Result, SearchType, User};
use recall_engine::{Engine, RecallRequest, RememberInput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The cut-offs answer recall is reported at.
pub const CUTOFFS: [usize; 3] = [1, 5, 10];

/// The deepest cut-off: ranked types are asked for this many results.
const DEPTH: usize = 10;

/// The types measured when none are named.
pub const DEFAULT_TYPES: [SearchType; 5] = [
    SearchType::Chunks,
    SearchType::ChunksLexical,
    SearchType::Summaries,
    SearchType::HybridCompletion,
    SearchType::GraphCompletion,
];

/// One question and its gold answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QaPair {
    pub question: String,
    pub answer: String,
}

/// What one run measures.
#[derive(Debug, Clone)]
pub struct EvalConfig {
    pub corpus: PathBuf,
    pub questions: PathBuf,
    pub dataset: String,
    pub types: Vec<SearchType>,
    /// Only the first N questions.
    pub limit: Option<usize>,
    /// Also generate answers (needs an LLM) and score EM / F1.
    pub answers: bool,
    /// `retriever_specific_config` sent with every recall.
    pub retriever_config: Map<String, Value>,
    /// Show a progress bar on stderr.
    pub progress: bool,
}

/// The scores of one search type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypeReport {
    pub search_type: SearchType,
    /// Answer recall at 1, 5 and 10, keyed "1", "5", "10".
    pub recall_at: BTreeMap<String, f64>,
    pub mrr: f64,
    pub latency_p50_ms: f64,
    /// Exact match of generated answers (with `--answers`, completion types only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_match: Option<f64>,
    /// Token F1 of generated answers (with `--answers`, completion types only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub corpus: String,
    pub documents: usize,
    pub questions: usize,
    pub embedder: String,
    pub llm: Option<String>,
    pub dataset: String,
    /// Seconds spent remembering the corpus (0 when it was already there).
    pub ingest_seconds: f64,
    pub chunks: u64,
    pub results: Vec<TypeReport>,
}

/// Reads a corpus: a JSON list of paragraphs (strings) or of documents
/// (objects with `text` or `content`, and optionally `name` or `title`), or
/// JSON Lines of either. Each becomes one document.
pub fn load_corpus(path: &Path) -> Result<Vec<RememberInput>> {
    let values = read_json_items(path)?;
    let mut docs = Vec::with_capacity(values.len());
    for (i, value) in values.into_iter().enumerate() {
        let (text, name) = match value {
            Value::String(text) => (text, None),
            Value::Object(mut m) => {
                let text = ["text", "content"]
                    .iter()
                    .find_map(|k| m.remove(*k).and_then(|v| v.as_str().map(str::to_string)))
                    .ok_or_else(|| bad_item(path, i, "a document needs a string `text` or `content`"))?;
                let name = ["name", "title"].iter().find_map(|k| m.get(*k).and_then(Value::as_str).map(str::to_string));
                (text, name)
            }
            _ => return Err(bad_item(path, i, "expected a string or an object")),
        };
        if text.trim().is_empty() {
            continue;
        }
        let name = name.unwrap_or_else(|| format!("document-{i:05}"));
        docs.push(RememberInput::Text { text, name: Some(format!("{name}.txt")) });
    }
    if docs.is_empty() {
        return Err(RecallError::invalid_input(format!("{}: the corpus holds no text", path.display())));
    }
    Ok(docs)
}

/// Reads the questions: a JSON list (or JSON Lines) of `{"question", "answer"}`.
pub fn load_questions(path: &Path) -> Result<Vec<QaPair>> {
    let values = read_json_items(path)?;
    let mut pairs = Vec::with_capacity(values.len());
    for (i, value) in values.into_iter().enumerate() {
        let pair: QaPair = serde_json::from_value(value)
            .map_err(|e| bad_item(path, i, &format!("expected {{\"question\", \"answer\"}} strings: {e}")))?;
        if pair.question.trim().is_empty() || pair.answer.trim().is_empty() {
            return Err(bad_item(path, i, "the question and the answer must not be empty"));
        }
        pairs.push(pair);
    }
    if pairs.is_empty() {
        return Err(RecallError::invalid_input(format!("{}: no questions", path.display())));
    }
    Ok(pairs)
}

fn bad_item(path: &Path, index: usize, why: &str) -> RecallError {
    RecallError::invalid_input(format!("{}: item {index}: {why}", path.display()))
}

/// A JSON array, or one JSON value per non-empty line.
fn read_json_items(path: &Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| RecallError::invalid_input(format!("cannot read {}: {e}", path.display())))?;
    if text.trim_start().starts_with('[') {
        return serde_json::from_str(&text)
            .map_err(|e| RecallError::invalid_input(format!("{}: not a JSON list: {e}", path.display())));
    }
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, line)| {
            serde_json::from_str(line)
                .map_err(|e| RecallError::invalid_input(format!("{}:{}: not JSON: {e}", path.display(), n + 1)))
        })
        .collect()
}

/// Whether a type returns a ranked list (scored per result) rather than one
/// context (scored per `top_k`).
fn is_ranked(search_type: SearchType) -> bool {
    matches!(search_type, SearchType::Chunks | SearchType::ChunksLexical | SearchType::Summaries)
}

/// Whether `--answers` asks this type for a generated answer.
fn generates(search_type: SearchType) -> bool {
    !is_ranked(search_type)
}

/// Whether the retrieved text holds the answer, case-insensitively, with the
/// question's own text taken out (a context preview repeats the question).
pub fn holds_answer(text: &str, question: &str, answer: &str) -> bool {
    let text = text.replace(question, " ").to_lowercase();
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    squash(&text).contains(&squash(&answer.to_lowercase()))
}

/// HotpotQA's answer normalisation: lower case, punctuation removed,
/// articles (a, an, the) removed, whitespace collapsed.
pub fn normalize_answer(s: &str) -> String {
    let lower = s.to_lowercase();
    let no_punct: String = lower.chars().filter(|c| !c.is_ascii_punctuation()).collect();
    no_punct.split_whitespace().filter(|w| !matches!(*w, "a" | "an" | "the")).collect::<Vec<_>>().join(" ")
}

/// HotpotQA's exact match.
pub fn exact_match(prediction: &str, gold: &str) -> bool {
    normalize_answer(prediction) == normalize_answer(gold)
}

/// HotpotQA's token F1 (yes / no / noanswer must match exactly).
pub fn f1_score(prediction: &str, gold: &str) -> f64 {
    let (p, g) = (normalize_answer(prediction), normalize_answer(gold));
    let special = ["yes", "no", "noanswer"];
    if (special.contains(&p.as_str()) || special.contains(&g.as_str())) && p != g {
        return 0.0;
    }
    let p_tokens: Vec<&str> = p.split_whitespace().collect();
    let g_tokens: Vec<&str> = g.split_whitespace().collect();
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for t in &g_tokens {
        *counts.entry(t).or_default() += 1;
    }
    let mut same = 0i64;
    for t in &p_tokens {
        if let Some(c) = counts.get_mut(t).filter(|c| **c > 0) {
            *c -= 1;
            same += 1;
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = same as f64 / p_tokens.len() as f64;
    let recall = same as f64 / g_tokens.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Remembers the corpus (documents already there are skipped by their
/// content hash) and scores every type.
pub async fn run(
    engine: &Engine,
    user: &User,
    config: &EvalConfig,
    active: &crate::ActiveAdapters,
) -> Result<EvalReport> {
    let docs = load_corpus(&config.corpus)?;
    let mut questions = load_questions(&config.questions)?;
    if let Some(n) = config.limit {
        questions.truncate(n);
    }
    if config.answers && !engine.llm_available() {
        return Err(RecallError::invalid_input(
            "--answers needs an LLM: set LLM_API_KEY (and LLM_ENDPOINT / LLM_MODEL for another OpenAI-compatible server)",
        ));
    }
    let started = Instant::now();
    let outcome = engine.remember(user, config.dataset.as_str(), &docs).await?;
    let ingest_seconds = if outcome.items_added == 0 { 0.0 } else { started.elapsed().as_secs_f64() };
    let dataset = engine.access().dataset(user, config.dataset.as_str()).await?;
    let chunks = engine.vectors().count(dataset.id, recall_core::model::collections::DOCUMENT_CHUNK_TEXT).await?;

    let bar = if config.progress {
        let bar = ProgressBar::new((questions.len() * config.types.len()) as u64);
        if let Ok(style) = ProgressStyle::with_template("{msg:>22} [{bar:30}] {pos}/{len} {elapsed}") {
            bar.set_style(style.progress_chars("=> "));
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let mut results = Vec::new();
    for &search_type in &config.types {
        bar.set_message(search_type.to_string());
        let mut scorer = Scorer::default();
        for qa in &questions {
            score_question(engine, user, config, search_type, qa, &mut scorer).await?;
            bar.inc(1);
        }
        results.push(scorer.report(search_type, questions.len()));
    }
    bar.finish_and_clear();
    Ok(EvalReport {
        corpus: config.corpus.display().to_string(),
        documents: docs.len(),
        questions: questions.len(),
        embedder: active.embedder.clone(),
        llm: active.llm.clone(),
        dataset: config.dataset.clone(),
        ingest_seconds,
        chunks,
        results,
    })
}

#[derive(Default)]
struct Scorer {
    hits: [usize; CUTOFFS.len()],
    reciprocal_ranks: f64,
    latencies: Vec<Duration>,
    exact: Vec<bool>,
    f1: Vec<f64>,
}

impl Scorer {
    /// Records where (1-based) the answer first showed, if it did within [`DEPTH`].
    fn found_at(&mut self, rank: Option<usize>, within: impl Fn(usize) -> bool) {
        for (i, k) in CUTOFFS.iter().enumerate() {
            if within(*k) {
                self.hits[i] += 1;
            }
        }
        if let Some(rank) = rank {
            self.reciprocal_ranks += 1.0 / rank as f64;
        }
    }

    fn report(mut self, search_type: SearchType, questions: usize) -> TypeReport {
        let n = questions.max(1) as f64;
        self.latencies.sort();
        let p50 = self.latencies.get(self.latencies.len() / 2).copied().unwrap_or_default();
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let exact: Vec<f64> = self.exact.iter().map(|&e| if e { 1.0 } else { 0.0 }).collect();
        TypeReport {
            search_type,
            recall_at: CUTOFFS.iter().zip(self.hits).map(|(k, h)| (k.to_string(), h as f64 / n)).collect(),
            mrr: self.reciprocal_ranks / n,
            latency_p50_ms: p50.as_secs_f64() * 1e3,
            exact_match: mean(&exact),
            f1: mean(&self.f1),
        }
    }
}

fn request(config: &EvalConfig, search_type: SearchType, question: &str, top_k: usize) -> RecallRequest {
    let mut request = RecallRequest::new(question).query_type(search_type).datasets([config.dataset.as_str()]);
    request = request.top_k(top_k as i64);
    request.options.retriever_specific_config = config.retriever_config.clone();
    request
}

/// The texts of a recall's permanent-memory entries, in order.
fn texts(results: &[RecallResponse]) -> Vec<String> {
    results
        .iter()
        .filter_map(|r| match r {
            RecallResponse::Graph(e) => Some(e.text.clone()),
            _ => None,
        })
        .collect()
}

async fn timed(engine: &Engine, user: &User, request: &RecallRequest) -> Result<(Vec<String>, Duration)> {
    let t = Instant::now();
    let results = engine.recall(user, request).await?;
    Ok((texts(&results), t.elapsed()))
}

async fn score_question(
    engine: &Engine,
    user: &User,
    config: &EvalConfig,
    search_type: SearchType,
    qa: &QaPair,
    scorer: &mut Scorer,
) -> Result<()> {
    let holds = |text: &str| holds_answer(text, &qa.question, &qa.answer);
    if is_ranked(search_type) {
        let (texts, latency) = timed(engine, user, &request(config, search_type, &qa.question, DEPTH)).await?;
        scorer.latencies.push(latency);
        let rank = texts.iter().take(DEPTH).position(|t| holds(t)).map(|i| i + 1);
        scorer.found_at(rank, |k| rank.is_some_and(|r| r <= k));
    } else {
        // One context per top_k: 1, 2, … until the answer shows (MRR), and
        // always the cut-offs themselves (a wider context need not hold
        // what a narrower one did).
        let mut found: BTreeMap<usize, bool> = BTreeMap::new();
        let mut first = None;
        for k in 1..=DEPTH {
            if first.is_some() && !CUTOFFS.contains(&k) {
                continue;
            }
            let only_context = request(config, search_type, &qa.question, k).only_context(true);
            let (texts, latency) = timed(engine, user, &only_context).await?;
            if k == DEPTH {
                scorer.latencies.push(latency);
            }
            let hit = texts.iter().any(|t| holds(t));
            found.insert(k, hit);
            if hit && first.is_none() {
                first = Some(k);
            }
        }
        scorer.found_at(first, |k| found.get(&k).copied().unwrap_or(false));
    }
    if config.answers && generates(search_type) {
        let results = engine.recall(user, &request(config, search_type, &qa.question, DEPTH)).await?;
        let answer = texts(&results).into_iter().next().unwrap_or_default();
        scorer.exact.push(exact_match(&answer, &qa.answer));
        scorer.f1.push(f1_score(&answer, &qa.answer));
    }
    Ok(())
}

/// The report as a plain-text table.
pub fn render_table(report: &EvalReport) -> String {
    let mut out = format!(
        "corpus: {} ({} documents, {} chunks) | questions: {} | embedder: {}{}\n",
        report.corpus,
        report.documents,
        report.chunks,
        report.questions,
        report.embedder,
        report.llm.as_ref().map(|l| format!(" | llm: {l}")).unwrap_or_default()
    );
    let with_answers = report.results.iter().any(|r| r.exact_match.is_some());
    out.push_str(&format!(
        "{:<20} {:>9} {:>9} {:>10} {:>6} {:>10}",
        "search type", "recall@1", "recall@5", "recall@10", "MRR", "p50 ms"
    ));
    if with_answers {
        out.push_str(&format!(" {:>6} {:>6}", "EM", "F1"));
    }
    out.push('\n');
    for r in &report.results {
        let at = |k: usize| r.recall_at.get(&k.to_string()).copied().unwrap_or(0.0);
        out.push_str(&format!(
            "{:<20} {:>9.2} {:>9.2} {:>10.2} {:>6.2} {:>10.1}",
            r.search_type.to_string(),
            at(1),
            at(5),
            at(10),
            r.mrr,
            r.latency_p50_ms
        ));
        if with_answers {
            let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
            out.push_str(&format!(" {:>6} {:>6}", cell(r.exact_match), cell(r.f1)));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hotpot_normalisation_exact_match_and_f1() {
        assert_eq!(normalize_answer("The  Eiffel Tower!"), "eiffel tower");
        assert!(exact_match("the Scotland.", "scotland"));
        assert!(!exact_match("Scotland, UK", "scotland"));
        assert!((f1_score("Scotland, UK", "scotland") - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(f1_score("yes", "no"), 0.0);
        assert_eq!(f1_score("no", "no"), 1.0);
        assert_eq!(f1_score("paris", "london"), 0.0);
        // Repeated tokens count once per gold occurrence.
        assert!((f1_score("new new york", "new york") - 0.8).abs() < 1e-9);
    }

    #[test]
    fn the_answer_is_looked_for_outside_the_question() {
        let q = "Is Paris the capital of France?";
        assert!(!holds_answer(&format!("Question: {q}\nContext: nothing here"), q, "paris"));
        assert!(holds_answer(&format!("Question: {q}\nContext: PARIS is\nthe capital"), q, "paris is the"));
    }

    #[test]
    fn corpora_and_questions_parse_in_both_shapes_and_reject_junk() {
        let dir = tempfile::tempdir().unwrap();
        let list = dir.path().join("c.json");
        std::fs::write(&list, r#"["first paragraph", "  ", "second"]"#).unwrap();
        assert_eq!(load_corpus(&list).unwrap().len(), 2, "blank paragraphs are skipped");
        let lines = dir.path().join("c.jsonl");
        std::fs::write(&lines, "{\"title\": \"A\", \"text\": \"alpha\"}\n\n{\"content\": \"beta\"}\n").unwrap();
        let docs = load_corpus(&lines).unwrap();
        assert!(matches!(&docs[0], RememberInput::Text { name: Some(n), .. } if n == "A.txt"));
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, "[1, 2]").unwrap();
        assert!(load_corpus(&bad).unwrap_err().to_string().contains("item 0"));
        let qs = dir.path().join("q.json");
        std::fs::write(&qs, r#"[{"question": "Who?", "answer": "me", "level": "easy"}]"#).unwrap();
        assert_eq!(load_questions(&qs).unwrap()[0].answer, "me");
        std::fs::write(&qs, r#"[{"question": "Who?"}]"#).unwrap();
        assert!(load_questions(&qs).is_err());
    }
}
