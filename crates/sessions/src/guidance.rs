//! Session guidance (docs/sessions.md, "Guidance"): the goals, rules,
//! preferences and lessons a conversation states, ranked and rendered into a
//! block a completion reads and the `session_context` lane returns.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use recall_core::{RecallError, Result};
use serde::{Deserialize, Serialize};

/// The longest guidance entry, in characters; longer content is truncated.
pub const MAX_CONTENT_CHARS: usize = 280;
/// The most characters one section contributes to the block.
pub const SECTION_BUDGET: usize = 400;
/// The most characters the whole block holds.
pub const TOTAL_BUDGET: usize = 1200;
/// The least confidence a candidate needs to become an entry.
pub const MIN_CONFIDENCE: f64 = 0.75;

/// Which body of guidance: learned from conversation turns, or from agent traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Qa,
    Agent,
}

impl Profile {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "qa" => Ok(Profile::Qa),
            "agent" => Ok(Profile::Agent),
            other => Err(crate::validation::parameter_error(format!(
                "context_profile must be 'qa' or 'agent', got {other:?}."
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Qa => "qa",
            Profile::Agent => "agent",
        }
    }

    /// The profile's sections in render order: (name, heading, priority).
    pub fn sections(self) -> &'static [(&'static str, &'static str, u8)] {
        match self {
            Profile::Qa => &[
                ("goals", "Goals", 2),
                ("rules", "Rules", 3),
                ("preferences", "Preferences", 1),
                ("lessons_learned", "Lessons learned", 1),
            ],
            Profile::Agent => &[
                ("tool_rules", "Tool rules", 3),
                ("workflow_state", "Workflow state", 2),
                ("success_patterns", "Success patterns", 1),
                ("failure_lessons", "Failure lessons", 3),
                ("environment_facts", "Environment facts", 2),
            ],
        }
    }

    fn section(self, name: &str) -> Option<(usize, &'static str, u8)> {
        self.sections().iter().enumerate().find(|(_, s)| s.0 == name).map(|(i, s)| (i, s.1, s.2))
    }

    /// A section name valid for this profile, or a validation error.
    pub fn check_section(self, name: &str) -> Result<()> {
        match self.section(name) {
            Some(_) => Ok(()),
            None => Err(crate::validation::parameter_error(format!(
                "section {name:?} is not valid for context_profile '{}': use one of {}.",
                self.as_str(),
                self.sections().iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}

/// One guidance entry, as a session stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuidanceEntry {
    pub id: String,
    pub section: String,
    pub context_profile: Profile,
    pub content: String,
    pub normalized_content: String,
    pub confidence: f64,
    pub created_at: String,
    #[serde(default)]
    pub source_feedback_ids: Vec<String>,
    #[serde(default)]
    pub source_trace_ids: Vec<String>,
    #[serde(default)]
    pub helpful_count: i64,
    #[serde(default)]
    pub harmful_count: i64,
    #[serde(default)]
    pub priority: i64,
    #[serde(default)]
    pub last_served_at: Option<String>,
}

/// Lower-cased, whitespace collapsed: how two entries are compared.
pub fn normalize(content: &str) -> String {
    content.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

impl GuidanceEntry {
    /// A new entry: the section checked against the profile, the content
    /// trimmed (non-blank) and truncated to [`MAX_CONTENT_CHARS`], the
    /// confidence clamped to 0..1.
    pub fn new(profile: Profile, section: &str, content: &str, confidence: f64, now: DateTime<Utc>) -> Result<Self> {
        profile.check_section(section)?;
        let content: String = content.trim().chars().take(MAX_CONTENT_CHARS).collect();
        if content.is_empty() {
            return Err(RecallError::Validation {
                name: "SessionParameterValidationError",
                message: "A guidance entry's content must not be blank.".into(),
            });
        }
        Ok(Self {
            id: uuid::Uuid::new_v4().to_string(),
            section: section.into(),
            context_profile: profile,
            normalized_content: normalize(&content),
            content,
            confidence: if confidence.is_finite() { confidence.clamp(0.0, 1.0) } else { 0.0 },
            created_at: crate::iso(now),
            source_feedback_ids: Vec::new(),
            source_trace_ids: Vec::new(),
            helpful_count: 0,
            harmful_count: 0,
            priority: 0,
            last_served_at: None,
        })
    }

    fn recency(&self) -> f64 {
        let stamp = self.last_served_at.as_deref().unwrap_or(&self.created_at);
        DateTime::parse_from_rfc3339(stamp).map(|t| t.timestamp() as f64 / 1e12).unwrap_or(0.0)
    }

    /// The ranking score for a query's words.
    fn score(&self, section_priority: u8, query: &HashSet<&str>) -> f64 {
        let words: HashSet<&str> = self.normalized_content.split_whitespace().collect();
        let overlap =
            if words.is_empty() { 0.0 } else { words.intersection(query).count() as f64 / words.len() as f64 };
        let votes = (self.helpful_count - self.harmful_count).clamp(-3, 3) as f64;
        10.0 * f64::from(section_priority)
            + 5.0 * self.confidence
            + 4.0 * overlap
            + 2.0 * votes
            + self.priority as f64
            + 0.5 * self.recency()
    }
}

/// The entries a block serves for `query`: the best-ranked first, each
/// taken if it fits its section's budget and the total budget (one that does
/// not fit is skipped and the walk goes on). Entries of another profile or
/// an unknown section are never served.
pub fn select<'a>(entries: &'a [GuidanceEntry], profile: Profile, query: &str) -> Vec<&'a GuidanceEntry> {
    let normalized = normalize(query);
    let query_words: HashSet<&str> = normalized.split_whitespace().collect();
    let mut ranked: Vec<(f64, &GuidanceEntry)> = entries
        .iter()
        .filter(|e| e.context_profile == profile)
        .filter_map(|e| profile.section(&e.section).map(|(_, _, p)| (e.score(p, &query_words), e)))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut used = vec![0usize; profile.sections().len()];
    let mut total = 0;
    let mut chosen = Vec::new();
    for (_, entry) in ranked {
        let Some((index, _, _)) = profile.section(&entry.section) else { continue };
        let len = entry.content.trim().chars().count();
        if used[index] + len <= SECTION_BUDGET && total + len <= TOTAL_BUDGET {
            used[index] += len;
            total += len;
            chosen.push(entry);
        }
    }
    chosen
}

/// The block for the chosen entries; empty when there are none. Sections
/// in their fixed order, each oldest first, each entry with its time.
pub fn render(chosen: &[&GuidanceEntry], profile: Profile) -> String {
    if chosen.is_empty() {
        return String::new();
    }
    let mut out = vec![
        "## Active session guidance".to_string(),
        "Items are listed oldest to newest within each section. When guidance conflicts, prefer the later item."
            .to_string(),
    ];
    for (name, heading, _) in profile.sections() {
        let mut items: Vec<&&GuidanceEntry> = chosen.iter().filter(|e| e.section == *name).collect();
        if items.is_empty() {
            continue;
        }
        items.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        out.push(format!("### {heading}"));
        for e in items {
            let label = DateTime::parse_from_rfc3339(&e.created_at)
                .map(|t| t.with_timezone(&Utc).format("%H:%M:%S").to_string())
                .unwrap_or_else(|_| "unknown".into());
            out.push(format!("- [{label}] {}", e.content.trim()));
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn entry(section: &str, content: &str, minute: u32) -> GuidanceEntry {
        let at = Utc.with_ymd_and_hms(2026, 12, 2, 9, minute, 5).single().unwrap_or_default();
        GuidanceEntry::new(Profile::Qa, section, content, 0.9, at).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn sections_render_in_fixed_order_oldest_first() {
        let entries = vec![
            entry("preferences", "Answer in French", 3),
            entry("rules", "Cite sources", 2),
            entry("goals", "Plan a trip", 1),
        ];
        let chosen = select(&entries, Profile::Qa, "anything");
        assert_eq!(
            render(&chosen, Profile::Qa),
            "## Active session guidance\nItems are listed oldest to newest within each section. When guidance conflicts, prefer the later item.\n### Goals\n- [09:01:05] Plan a trip\n### Rules\n- [09:02:05] Cite sources\n### Preferences\n- [09:03:05] Answer in French"
        );
        assert_eq!(render(&select(&entries, Profile::Agent, "x"), Profile::Agent), "", "profiles are separate");
    }

    #[test]
    fn budgets_skip_what_does_not_fit_and_go_on() {
        let long = "x".repeat(250);
        let entries = vec![
            entry("rules", &format!("a{long}"), 1),
            entry("rules", &format!("b{long}"), 2),
            entry("rules", "short rule", 3),
        ];
        let chosen = select(&entries, Profile::Qa, "");
        // Two 251-character rules exceed the 400-character section budget: one is skipped.
        assert_eq!(chosen.len(), 2);
        assert!(chosen.iter().any(|e| e.content == "short rule"));
    }

    #[test]
    fn rules_outrank_goals_and_preferences_and_harmful_votes_sink() {
        let mut harmful = entry("rules", "Never guess", 1);
        harmful.harmful_count = 5;
        let entries = vec![
            entry("preferences", "Be brief", 2),
            harmful,
            entry("rules", "Cite sources", 3),
            entry("goals", "Learn Rust", 4),
        ];
        let order: Vec<&str> = select(&entries, Profile::Qa, "").iter().map(|e| e.content.as_str()).collect();
        // rules 30 + 4.5, a harmful rule 30 + 4.5 - 6 (votes clamp at 3), goals 20 + 4.5, preferences 10 + 4.5.
        assert_eq!(order, ["Cite sources", "Never guess", "Learn Rust", "Be brief"]);
        // Overlap with the query lifts an entry within its section.
        let entries = vec![entry("rules", "Cite sources", 1), entry("rules", "Use metric units", 2)];
        let order: Vec<&str> =
            select(&entries, Profile::Qa, "which units").iter().map(|e| e.content.as_str()).collect();
        assert_eq!(order, ["Use metric units", "Cite sources"]);
    }

    #[test]
    fn bad_sections_and_blank_content_are_typed_errors() {
        let now = Utc::now();
        let err = GuidanceEntry::new(Profile::Qa, "tool_rules", "x", 1.0, now).err().map(|e| e.name());
        assert_eq!(err, Some("SessionParameterValidationError"));
        assert!(GuidanceEntry::new(Profile::Qa, "rules", "   ", 1.0, now).is_err());
        let e = GuidanceEntry::new(Profile::Agent, "tool_rules", &"y".repeat(500), 7.0, now)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((e.content.chars().count(), e.confidence), (280, 1.0));
        assert!(Profile::parse("both").is_err());
    }
}
