//! TEMPORAL (docs/retrievers.md, "TEMPORAL"): hybrid candidates
//! re-ranked by overlap with the question's time window. The window comes
//! from the LLM when one is configured (asked concurrently with the
//! candidate fetch), else — or when it finds none — from rules for absolute
//! dates ("in 2019", "before March 2020", "between 1990 and 1995", "on
//! 2021-06-01"); chunks that mention a date inside it move to the front, the
//! most precise first.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use chrono::NaiveDate;
use recall_core::{RecallError, Result};
use regex::Regex;
use serde_json::Value;

use crate::hybrid::{hybrid_candidates, HybridFamily, HybridParams, HybridResult, HybridStrategy};
use crate::lexical::LexicalIndexCache;
use crate::{DatasetPorts, RetrieverOptions};

/// `[start, end)` in days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeWindow {
    pub start: NaiveDate,
    pub end: NaiveDate,
}

impl TimeWindow {
    fn days(&self) -> i64 {
        (self.end - self.start).num_days()
    }
    fn overlaps(&self, other: &TimeWindow) -> bool {
        other.start < self.end && other.end > self.start
    }
}

const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec";

fn month_number(name: &str) -> Option<u32> {
    let n = name.to_lowercase();
    let all = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    all.iter().position(|m| n.starts_with(m)).map(|i| i as u32 + 1)
}

fn ymd(y: i32, m: u32, d: u32) -> Option<NaiveDate> {
    NaiveDate::from_ymd_opt(y, m, d)
}

fn year_span(y: i32) -> Option<TimeWindow> {
    Some(TimeWindow { start: ymd(y, 1, 1)?, end: ymd(y + 1, 1, 1)? })
}

fn month_span(y: i32, m: u32) -> Option<TimeWindow> {
    let start = ymd(y, m, 1)?;
    let end = if m == 12 { ymd(y + 1, 1, 1)? } else { ymd(y, m + 1, 1)? };
    Some(TimeWindow { start, end })
}

fn day_span(d: NaiveDate) -> Option<TimeWindow> {
    Some(TimeWindow { start: d, end: d.succ_opt()? })
}

static DATE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})|(?P<month>{MONTHS})\.?\s+(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s+)?(?P<my>\d{{4}})|(?P<year>1\d{{3}}|2\d{{3}}))\b"
    ))
    .ok()
});

static BETWEEN: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\bbetween\s+(1\d{3}|2\d{3})\s+and\s+(1\d{3}|2\d{3})\b").ok());

static PREPOSITION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(before|until|till|through|by|after|since|from|in|during|for|on|of|around)\s+(?:the\s+)?(?:year\s+)?$",
    )
    .ok()
});

/// Every absolute date mentioned in a text, as the span it names.
pub fn mentioned_spans(text: &str) -> Vec<TimeWindow> {
    DATE.as_ref().map(|re| re.captures_iter(text).filter_map(|c| span_of(&c)).collect()).unwrap_or_default()
}

fn span_of(c: &regex::Captures<'_>) -> Option<TimeWindow> {
    if let Some(iso) = c.name("iso") {
        return day_span(NaiveDate::parse_from_str(iso.as_str(), "%Y-%m-%d").ok()?);
    }
    if let (Some(m), Some(y)) = (c.name("month"), c.name("my")) {
        return month_span(y.as_str().parse().ok()?, month_number(m.as_str())?);
    }
    year_span(c.name("year")?.as_str().parse().ok()?)
}

/// The window a question asks about, by rules; `None` for relative or absent times.
pub fn extract_window(query: &str) -> Option<TimeWindow> {
    let (between, date, preposition) = (BETWEEN.as_ref()?, DATE.as_ref()?, PREPOSITION.as_ref()?);
    if let Some(c) = between.captures(query) {
        let (a, b): (i32, i32) = (c[1].parse().ok()?, c[2].parse().ok()?);
        let (a, b) = (a.min(b), a.max(b));
        return Some(TimeWindow { start: ymd(a, 1, 1)?, end: ymd(b + 1, 1, 1)? });
    }
    let open_start = ymd(1, 1, 1)?;
    let open_end = ymd(9999, 12, 31)?;
    for c in date.captures_iter(query) {
        let Some(whole) = c.get(0) else { continue };
        let span = span_of(&c)?;
        let prefix = &query[..whole.start()];
        let prep = preposition.captures(prefix).map(|p| p[1].to_lowercase());
        let window = match prep.as_deref() {
            Some("before") => TimeWindow { start: open_start, end: span.start },
            Some("until" | "till" | "through" | "by") => TimeWindow { start: open_start, end: span.end },
            Some("after") => TimeWindow { start: span.end, end: open_end },
            Some("since" | "from") => TimeWindow { start: span.start, end: open_end },
            Some(_) => span,
            // A bare year with no preposition still names a period.
            None => span,
        };
        if window.start < window.end {
            return Some(window);
        }
    }
    None
}

/// Stable partition: chunks mentioning a date in the window first, the most
/// precise (shortest span, at least the window's) first; the rest keep order.
pub fn rerank_chunks(chunks: Vec<Value>, window: &TimeWindow) -> (Vec<Value>, usize) {
    let mut anchored: Vec<(i64, usize, Value)> = Vec::new();
    let mut rest = Vec::new();
    for (i, c) in chunks.into_iter().enumerate() {
        let text = c.get("text").and_then(Value::as_str).unwrap_or_default();
        let tightest = mentioned_spans(text).iter().filter(|s| window.overlaps(s)).map(TimeWindow::days).min();
        match tightest {
            Some(days) => anchored.push((days.max(window.days()), i, c)),
            None => rest.push(c),
        }
    }
    anchored.sort_by_key(|a| (a.0, a.1));
    let n = anchored.len();
    (anchored.into_iter().map(|a| a.2).chain(rest).collect(), n)
}

/// The JSON Schema of the LLM's answer: `{starts_at, ends_at}`, each a
/// calendar date (year, optional month and day) or null.
fn interval_schema() -> Value {
    let point = serde_json::json!({
        "anyOf": [
            {"type": "null"},
            {"type": "object",
             "properties": {"year": {"type": "integer"}, "month": {"type": ["integer", "null"]}, "day": {"type": ["integer", "null"]}},
             "required": ["year"]}
        ]
    });
    serde_json::json!({
        "type": "object",
        "properties": {"starts_at": point, "ends_at": point},
        "required": ["starts_at", "ends_at"]
    })
}

fn date_of(v: &Value) -> Option<NaiveDate> {
    let year = i32::try_from(v.get("year")?.as_i64()?).ok()?;
    let month = v.get("month").and_then(Value::as_u64).map_or(Some(1), |m| u32::try_from(m).ok())?;
    let day = v.get("day").and_then(Value::as_u64).map_or(Some(1), |d| u32::try_from(d).ok())?;
    ymd(year, month, day)
}

/// The LLM's reading of the question's time window, when an LLM is
/// configured (`extract_query_time.txt`); `None` when it finds none, gives an
/// invalid one, or fails — the rules then decide.
async fn llm_window(ctx: &DatasetPorts, query: &str) -> Option<TimeWindow> {
    let llm = ctx.llm.as_ref()?;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let system = crate::prompts::render(crate::prompts::EXTRACT_QUERY_TIME, &[("time_now", today.as_str())]).ok()?;
    let request = recall_core::ports::ChatRequest::new(system, query);
    let answer = match llm.structured(&request, "QueryInterval", &interval_schema()).await {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "TEMPORAL: time-window extraction failed; using the rules");
            return None;
        }
    };
    let start = answer.get("starts_at").filter(|v| !v.is_null());
    let end = answer.get("ends_at").filter(|v| !v.is_null());
    if start.is_none() && end.is_none() {
        return None;
    }
    let window =
        TimeWindow { start: start.map_or(ymd(1, 1, 1), date_of)?, end: end.map_or(ymd(9999, 12, 31), date_of)? };
    if window.start >= window.end {
        tracing::warn!(?window, "TEMPORAL: the LLM's time window is empty; using the rules");
        return None;
    }
    Some(window)
}

/// TEMPORAL: hybrid candidates re-ranked by the question's time window
/// (the LLM's, else the rules'), answered as HYBRID_COMPLETION is.
pub type TemporalRetriever = HybridFamily<TimeWindowed>;

/// TEMPORAL's candidates: wider hybrid lanes, re-ranked by time, then cut to `top_k`.
#[derive(Debug, Clone)]
pub struct TimeWindowed {
    lexical: Arc<LexicalIndexCache>,
}

impl TemporalRetriever {
    pub fn new(lexical: Arc<LexicalIndexCache>) -> Self {
        HybridFamily(TimeWindowed { lexical })
    }
}

#[async_trait]
impl HybridStrategy for TimeWindowed {
    const NAME: &'static str = "TEMPORAL";

    async fn candidates(&self, ctx: &DatasetPorts, query: &str, options: &RetrieverOptions) -> Result<HybridResult> {
        let top_k = options.top_k().unwrap_or(5);
        let candidates = options.rsc_usize("candidate_top_k")?.unwrap_or(4 * top_k);
        if top_k == 0 || candidates < top_k {
            return Err(RecallError::Validation {
                name: "CogneeValidationError",
                message: "limits must be positive with top_k <= candidate_top_k".into(),
            });
        }
        if ctx.graph.is_empty(ctx.dataset.id).await? {
            return Ok(HybridResult::default());
        }
        let mut params = HybridParams::from_options(options)?;
        params.chunks_top_k = candidates;
        params.entities_top_k = candidates;
        params.facts_top_k = top_k;
        let (candidates, llm_window) =
            tokio::join!(hybrid_candidates(ctx, &self.lexical, query, &params, options), llm_window(ctx, query));
        let mut result = candidates?;
        match llm_window.or_else(|| extract_window(query)) {
            Some(window) => {
                let (chunks, anchored) = rerank_chunks(std::mem::take(&mut result.chunks), &window);
                tracing::debug!(?window, anchored, "temporal re-rank");
                result.chunks = chunks;
            }
            None => tracing::warn!("TEMPORAL: no absolute time window in the question; answering as hybrid"),
        }
        result.chunks.truncate(top_k);
        result.entities.truncate(top_k);
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn w(a: (i32, u32, u32), b: (i32, u32, u32)) -> Option<TimeWindow> {
        Some(TimeWindow { start: ymd(a.0, a.1, a.2)?, end: ymd(b.0, b.1, b.2)? })
    }

    #[test]
    fn the_patterns_compile() {
        assert!(DATE.is_some() && BETWEEN.is_some() && PREPOSITION.is_some());
    }

    #[test]
    fn windows_by_rule() {
        assert_eq!(extract_window("What happened in 2019?"), w((2019, 1, 1), (2020, 1, 1)));
        assert_eq!(extract_window("events before March 2020"), w((1, 1, 1), (2020, 3, 1)));
        assert_eq!(extract_window("after 1999"), w((2000, 1, 1), (9999, 12, 31)));
        assert_eq!(extract_window("since 1999"), w((1999, 1, 1), (9999, 12, 31)));
        assert_eq!(extract_window("until 2001"), w((1, 1, 1), (2002, 1, 1)));
        assert_eq!(extract_window("between 1995 and 1990"), w((1990, 1, 1), (1996, 1, 1)));
        assert_eq!(extract_window("what was on 2021-06-01"), w((2021, 6, 1), (2021, 6, 2)));
        assert_eq!(extract_window("what happened last week"), None);
        assert_eq!(extract_window(""), None);
    }

    #[test]
    fn anchored_chunks_move_first_most_precise_first() {
        let window = extract_window("in 1843").unwrap_or_else(|| panic!("window"));
        let chunks = vec![
            json!({"text": "no dates here"}),
            json!({"text": "The notes were published in 1843."}),
            json!({"text": "In August 1843 she finished the translation."}),
            json!({"text": "Born in 1815."}),
        ];
        let (out, anchored) = rerank_chunks(chunks, &window);
        assert_eq!(anchored, 2);
        // Both spans are at most the window (a year), so they tie and keep order.
        assert_eq!(out[0]["text"], "The notes were published in 1843.");
        assert_eq!(out[1]["text"], "In August 1843 she finished the translation.");
        assert_eq!(out[2]["text"], "no dates here");
        assert_eq!(out[3]["text"], "Born in 1815.");
    }
}
