//! The query router (docs/routing.md): a pure function from the
//! question to a search type, with no I/O and no LLM call. Three ordered rules
//! and a default:
//!
//! 1. `quoted_phrase` — the whole query is one `"…"` phrase → CHUNKS_LEXICAL
//! 2. `coding_rules_intent` — "coding rules", "code review checklist", … → CODING_RULES
//! 3. `time_scoped_question` — a time preposition and an absolute date → TEMPORAL
//! 4. `default` → HYBRID_COMPLETION
//!
//! CYPHER is deliberately not routable: routed raw Cypher would let any
//! dataset reader mutate the graph. Python `re` semantics are kept: Unicode
//! `\b`, `\w`, `\s`, `\d`, case-insensitive matching by simple case folding,
//! and unanchored search except for rule 1.

use std::sync::LazyLock;

use fancy_regex::Regex;
use recall_core::SearchType;

/// The router's decision and the name of the rule that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteDecision {
    pub search_type: SearchType,
    pub rule: &'static str,
}

impl RouteDecision {
    /// Whether a rule (not the default) chose the type: such a guess is
    /// retried once as HYBRID_COMPLETION when it fails or finds nothing.
    pub fn is_routed_guess(&self) -> bool {
        self.rule != DEFAULT_RULE && self.search_type != SearchType::HybridCompletion
    }
}

pub const QUOTED_PHRASE: &str = "quoted_phrase";
pub const CODING_RULES_INTENT: &str = "coding_rules_intent";
pub const TIME_SCOPED_QUESTION: &str = "time_scoped_question";
pub const DEFAULT_RULE: &str = "default";

const YEAR: &str = r"(?:1[0-9]{3}|20[0-9]{2})";
const DAY: &str = r"\d{1,2}(?:st|nd|rd|th)?";
// Longer names first so that alternation prefers them.
const MONTH: &str = r"(?:january|february|march|april|may|june|july|august|september|october|november|december|sept|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)\.?";
const PREPOSITIONS: &str =
    r"(?:in|during|before|after|since|until|till|between|from|by|on|around|circa|as of|prior to|throughout|through)";
/// After a year in the "for" form: whitespace then a letter is a quantity
/// ("for 2000 users") unless it starts a conjunction ("for 2025 and 2026").
const NOT_A_QUANTITY: &str = r"(?!\s+(?!(?:and|or|to|through|until|till)\b)[^\W\d_])";

fn iso_date() -> String {
    format!(r"{YEAR}-\d\d-\d\d")
}

fn month_date() -> String {
    format!(r"(?:{DAY}\s+)?{MONTH}\s+(?:{DAY},?\s+)?{YEAR}")
}

fn year_span() -> String {
    format!(r"(?:(?:early|late|mid)(?:-|\s)+)?{YEAR}s?")
}

fn time_scoped_pattern() -> String {
    let form_a = format!(
        r"\b{PREPOSITIONS}\s+(?:{iso}|{month}|{span}|the\s+{YEAR}s)\b",
        iso = iso_date(),
        month = month_date(),
        span = year_span()
    );
    let form_b = format!(
        r"\bfor\s+(?:{iso}|{month}|{span}{NOT_A_QUANTITY}|the\s+{YEAR}s?{NOT_A_QUANTITY})\b",
        iso = iso_date(),
        month = month_date(),
        span = year_span()
    );
    format!("(?i)(?:{form_a})|(?:{form_b})")
}

static QUOTED: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r#"^"[^"]+"$"#).ok());
static CODING_RULES: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:coding (?:rules?|standards?|conventions?|guidelines?)|code review (?:guidelines?|rules?|standards?|checklist|conventions?))\b",
    )
    .ok()
});
static TIME_SCOPED: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(&time_scoped_pattern()).ok());

fn matches(re: &LazyLock<Option<Regex>>, text: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(text).unwrap_or(false))
}

/// Python's `str.strip()`: Unicode whitespace plus the separators U+001C–U+001F.
fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// Chooses a search type for `query` (docs/routing.md).
pub fn route_query(query: &str) -> RouteDecision {
    let q = python_strip(query);
    let (search_type, rule) = if matches(&QUOTED, q) {
        (SearchType::ChunksLexical, QUOTED_PHRASE)
    } else if matches(&CODING_RULES, q) {
        (SearchType::CodingRules, CODING_RULES_INTENT)
    } else if matches(&TIME_SCOPED, q) {
        (SearchType::Temporal, TIME_SCOPED_QUESTION)
    } else {
        (SearchType::HybridCompletion, DEFAULT_RULE)
    };
    RouteDecision { search_type, rule }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert!(QUOTED.is_some());
        assert!(CODING_RULES.is_some());
        assert!(TIME_SCOPED.is_some(), "{}", time_scoped_pattern());
    }

    /// Examples computed by running Cognee 1.6.5's rules (docs/routing.md).
    #[test]
    fn spec_examples() {
        use SearchType::*;
        let cases: &[(&str, SearchType, &str)] = &[
            ("\"polonium and radium\"", ChunksLexical, QUOTED_PHRASE),
            ("\"coding rules\"", ChunksLexical, QUOTED_PHRASE),
            ("   \"padded quoted phrase\"  ", ChunksLexical, QUOTED_PHRASE),
            ("\"two\" \"quotes\"", HybridCompletion, DEFAULT_RULE),
            ("'single quoted'", HybridCompletion, DEFAULT_RULE),
            ("\u{201c}curly quoted\u{201d}", HybridCompletion, DEFAULT_RULE),
            ("\"\"", HybridCompletion, DEFAULT_RULE),
            ("\"unterminated", HybridCompletion, DEFAULT_RULE),
            ("What coding rules apply to error handling?", CodingRules, CODING_RULES_INTENT),
            ("Show me the code review guidelines", CodingRules, CODING_RULES_INTENT),
            ("What are our coding standards for Python?", CodingRules, CODING_RULES_INTENT),
            ("Any code review checklist?", CodingRules, CODING_RULES_INTENT),
            ("Who did the code review for PR 12?", HybridCompletion, DEFAULT_RULE),
            ("What are the best practices for onboarding new hires?", HybridCompletion, DEFAULT_RULE),
            ("Refactor plan for the billing service", HybridCompletion, DEFAULT_RULE),
            ("What was discovered in 1915?", Temporal, TIME_SCOPED_QUESTION),
            ("What happened between 1910 and 1920?", Temporal, TIME_SCOPED_QUESTION),
            ("Incidents from 2019 to 2021", Temporal, TIME_SCOPED_QUESTION),
            ("What shipped on 2024-03-01?", Temporal, TIME_SCOPED_QUESTION),
            ("What happened in July 1969?", Temporal, TIME_SCOPED_QUESTION),
            ("Who was born on 7 November 1867?", Temporal, TIME_SCOPED_QUESTION),
            ("What changed in the 1990s?", Temporal, TIME_SCOPED_QUESTION),
            ("What was the 1990s policy on remote work?", HybridCompletion, DEFAULT_RULE),
            ("What happened in early 2024?", Temporal, TIME_SCOPED_QUESTION),
            ("What happened before July 1969?", Temporal, TIME_SCOPED_QUESTION),
            ("Plans as of March 1, 2024", Temporal, TIME_SCOPED_QUESTION),
            ("What is scheduled for 2031?", Temporal, TIME_SCOPED_QUESTION),
            ("Capacity planning for 2000 users", HybridCompletion, DEFAULT_RULE),
            ("Book a table for 1500 guests", HybridCompletion, DEFAULT_RULE),
            ("Goals for the 2030s", Temporal, TIME_SCOPED_QUESTION),
            ("Targets for 2025 and 2026", Temporal, TIME_SCOPED_QUESTION),
            ("Q4 2024 revenue", HybridCompletion, DEFAULT_RULE),
        ];
        for (query, t, rule) in cases {
            let d = route_query(query);
            assert_eq!((d.search_type, d.rule), (*t, *rule), "query {query:?}");
        }
    }

    #[test]
    fn rule_details() {
        use SearchType::*;
        let t = |q: &str| route_query(q).search_type;
        // Quoted phrases may span lines; no other double quote may appear.
        assert_eq!(t("\"line one\nline two\""), ChunksLexical);
        assert_eq!(t("\"a\" and \"b\""), HybridCompletion);
        // Coding phrases need exactly one space; hyphens and double spaces do not count.
        assert_eq!(t("coding-rules for us"), HybridCompletion);
        assert_eq!(t("coding  rules"), HybridCompletion);
        assert_eq!(t("CODING RULES please"), CodingRules);
        assert_eq!(t("our lint config and refactor plan"), HybridCompletion);
        // Years are 1000–2099; "since monday" and a bare "when" are not dates.
        assert_eq!(t("what happened in 999"), HybridCompletion);
        assert_eq!(t("what happens in 2100"), HybridCompletion);
        assert_eq!(t("changes since monday"), HybridCompletion);
        assert_eq!(t("when did it ship"), HybridCompletion);
        assert_eq!(t("the 2019 report"), HybridCompletion);
        assert_eq!(t("ticket 2048"), HybridCompletion);
        // Months, days, ISO dates (unvalidated), decades, prefixes.
        assert_eq!(t("released on Mar. 3 2020"), Temporal);
        assert_eq!(t("deployed on 2019-13-45"), Temporal);
        assert_eq!(t("music from mid-1990s"), Temporal);
        assert_eq!(t("prices circa 1850"), Temporal);
        assert_eq!(t("status prior to June 2020"), Temporal);
        // The "for" form: quantities are not dates; conjunctions are.
        assert_eq!(t("Budget for 2030 through 2035"), Temporal);
        assert_eq!(t("seats for 2000 people"), HybridCompletion);
        assert_eq!(t("plan for 2030"), Temporal);
        assert_eq!(t("plan for 2030s"), Temporal);
        assert_eq!(t("plan for the 2030s and beyond"), Temporal);
        // Unicode case folding and whitespace.
        assert_eq!(t("WHAT HAPPENED IN JULY 1969"), Temporal);
        assert_eq!(t("\u{3000}\"fullwidth padded\"\u{3000}"), ChunksLexical);
    }

    #[test]
    fn only_rule_matches_are_routed_guesses() {
        assert!(route_query("\"x\"").is_routed_guess());
        assert!(route_query("in 1915").is_routed_guess());
        assert!(!route_query("hello").is_routed_guess());
    }
}
