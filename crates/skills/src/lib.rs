//! The skill gate (docs/recall.md, "The skill gate (rules)"): a pure, rule-based check of
//! whether a question asks for a procedure, so recall() also searches the
//! dataset's skills. Weighted English and Chinese rules, each counted once,
//! its first match negated by a negator in the 20 characters before it;
//! fires at a score of 3.0. The patterns are compiled once.

pub mod run;
pub mod skill;

use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

pub use run::{SkillRun, SkillRunEntry, SKILL_RUN_NODE_TYPE, SKILL_RUN_TASK_TEXT};
pub use skill::{parse_skill, project_metadata, Skill, SKILL_NODE_TYPE, SKILL_SEARCH_TEXT};

/// Score at which the gate fires.
pub const GATE_THRESHOLD: f64 = 3.0;
/// Characters (code points) before a match searched for a negator.
pub const NEGATION_WINDOW: usize = 20;
/// Skills the gate returns at most.
pub const DEFAULT_SKILL_GATE_TOP_K: usize = 3;

/// One weighted rule.
struct Rule {
    name: &'static str,
    weight: f64,
    pattern: Option<Regex>,
}

const ZH_STOP: &str = "[^？?！!。]{0,12}?";

fn rule(name: &'static str, weight: f64, pattern: &str) -> Rule {
    Rule { name, weight, pattern: Regex::new(pattern).ok() }
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        rule("E1_how_do_i", 3.0, r"(?i)\b(?:how (?:do|can|should|would) (?:i|we|you)|how to)\b"),
        rule("E2_steps", 3.0, r"(?i)\b(?:steps? (?:to|for)|step.by.step)\b"),
        rule("E3_procedure_noun", 4.0, r"(?i)\b(?:procedure|playbook|runbook|checklist|workflow)\b"),
        rule("E4_walkthrough", 3.0, r"(?i)\b(?:walk (?:me|us) through|guide (?:to|for|on))\b"),
        rule("E5_what_is_the_process", 4.0, r"(?i)\bwhat(?:'s|s| is) the (?:process|procedure)\b"),
        rule("E6_skill", 4.0, r"(?i)\bskills?\b"),
        rule(
            "E7_ops_verb",
            2.0,
            r"(?i)\b(?:set up|setting up|setup|install|installing|configure|configuring|deploy|deploying|migrate|migrating|provision|provisioning|onboard|onboarding|rotate|troubleshoot|troubleshooting)\b",
        ),
        rule(
            "C1_zh_how_to_ops",
            3.0,
            &format!("(?:怎么|怎样|如何|咋){ZH_STOP}(?:配置|设置|安装|部署|迁移|搭建|排查|调试|升级|接入|集成|运行|启用|卸载|修复)"),
        ),
        rule(
            "C2_zh_request_ops",
            3.0,
            &format!("(?:请帮我|帮我|帮忙|麻烦){ZH_STOP}(?:配置|设置|安装|部署|迁移|搭建|排查|调试|升级|接入|集成|运行|修复|检查|卸载)"),
        ),
        rule(
            "C3_zh_document_noun",
            4.0,
            "(?:操作手册|运维手册|运行手册|操作指南|配置指南|安装指南|部署指南|排查指南|使用指南|检查清单|操作流程|操作规范|运维流程)",
        ),
        rule("C4_zh_ops_verb", 2.0, "(?:安装|部署|配置|迁移|排查|调试|搭建|升级|卸载|初始化|集成|接入|修复|步骤)"),
    ]
});

static NEGATOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:not|no|never|without|lack)\b|n't\b|不|别|勿|未|无需|无须").ok());

/// What the gate decided, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    pub fired: bool,
    pub score: f64,
    /// The rules that counted, in rule order.
    pub matched: Vec<&'static str>,
    /// The text each counted rule matched.
    pub fragments: Vec<String>,
}

/// Whether the `NEGATION_WINDOW` characters before byte offset `start` hold a negator.
fn negated(q: &str, start: usize) -> bool {
    let before = &q[..start];
    let window_start = before.char_indices().rev().nth(NEGATION_WINDOW - 1).map_or(0, |(i, _)| i);
    NEGATOR.as_ref().is_some_and(|re| re.is_match(&before[window_start..]))
}

/// `should_search_skills`: any string, no I/O.
pub fn should_search_skills(query: &str) -> GateResult {
    let q = query.trim();
    let mut result = GateResult { fired: false, score: 0.0, matched: Vec::new(), fragments: Vec::new() };
    if q.is_empty() {
        return result;
    }
    for rule in RULES.iter() {
        let Some(m) = rule.pattern.as_ref().and_then(|p| p.find(q)) else { continue };
        if negated(q, m.start()) {
            continue;
        }
        result.score += rule.weight;
        result.matched.push(rule.name);
        result.fragments.push(m.as_str().to_string());
    }
    result.fired = result.score >= GATE_THRESHOLD;
    result
}

/// `SKILL_GATE_ENABLED`: on unless the trimmed, lower-cased value is false, 0 or no.
pub fn gate_enabled(value: Option<&str>) -> bool {
    !matches!(value.map(|v| v.trim().to_ascii_lowercase()).as_deref(), Some("false" | "0" | "no"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// every example of the gate's rules (docs/recall.md, "The skill gate (rules)"): (query, score, fires, fragments).
    const EXAMPLES: &[(&str, f64, bool, &[&str])] = &[
        ("How do I rotate the API key?", 5.0, true, &["How do I", "rotate"]),
        ("how to deploy the service", 5.0, true, &["how to", "deploy"]),
        ("How can we migrate the database?", 5.0, true, &["How can we", "migrate"]),
        ("Steps to configure SSO", 5.0, true, &["Steps to", "configure"]),
        ("step-by-step guide for onboarding", 8.0, true, &["step-by-step", "guide for", "onboarding"]),
        ("Is there a runbook for failover?", 4.0, true, &["runbook"]),
        ("What is the process for refunds?", 4.0, true, &["What is the process"]),
        ("what's the procedure for incident response", 8.0, true, &["procedure", "what's the procedure"]),
        ("Walk me through the release", 3.0, true, &["Walk me through"]),
        ("Give me a guide to setting up the VPN", 5.0, true, &["guide to", "setting up"]),
        ("Which skills do we have for billing?", 4.0, true, &["skills"]),
        ("deploy the service", 2.0, false, &["deploy"]),
        ("install and configure nginx", 2.0, false, &["install"]),
        ("Why did the deploy fail?", 2.0, false, &["deploy"]),
        ("What is the capital of France?", 0.0, false, &[]),
        ("I don't know how to deploy this", 0.0, false, &[]),
        ("I can't figure out how to deploy", 2.0, false, &["deploy"]),
        ("I cannot figure out, after hours of trying, how to deploy", 5.0, true, &["how to", "deploy"]),
        ("No idea. How do I deploy?", 0.0, false, &[]),
        ("never use the checklist", 0.0, false, &[]),
        ("Nothing about how to install", 5.0, true, &["how to", "install"]),
        ("the know-how to install it", 5.0, true, &["how to", "install"]),
        ("not the runbook but how do I install it", 2.0, false, &["install"]),
        ("How do I set up SSO without a runbook", 5.0, true, &["How do I", "set up"]),
        ("don't walk me through it", 0.0, false, &[]),
        ("how do they deploy", 2.0, false, &["deploy"]),
        ("Steps for the audit", 3.0, true, &["Steps for"]),
        ("playbooks", 0.0, false, &[]),
        ("checklists", 0.0, false, &[]),
        ("skillset", 0.0, false, &[]),
        ("rotating keys", 0.0, false, &[]),
        ("How do I use skills?", 7.0, true, &["How do I", "skills"]),
        ("怎么配置数据库连接？", 5.0, true, &["怎么配置", "配置"]),
        ("如何部署这个服务", 5.0, true, &["如何部署", "部署"]),
        ("怎么排查这个报错", 5.0, true, &["怎么排查", "排查"]),
        ("帮我配置一下代理", 5.0, true, &["帮我配置", "配置"]),
        ("麻烦帮忙排查一下", 5.0, true, &["麻烦帮忙排查", "排查"]),
        ("有没有部署指南？", 6.0, true, &["部署指南", "部署"]),
        ("有没有操作手册", 4.0, true, &["操作手册"]),
        ("请给我检查清单", 4.0, true, &["检查清单"]),
        ("部署步骤", 2.0, false, &["部署"]),
        ("安装和配置", 2.0, false, &["安装"]),
        ("别帮我部署", 0.0, false, &[]),
        ("不同环境怎么部署", 0.0, false, &[]),
        ("无需安装，如何使用", 0.0, false, &[]),
        ("你们没有部署文档吗", 2.0, false, &["部署"]),
        ("怎样升级", 5.0, true, &["怎样升级", "升级"]),
        ("咋安装", 5.0, true, &["咋安装", "安装"]),
        ("怎么启用", 3.0, true, &["怎么启用"]),
        ("帮我启用", 0.0, false, &[]),
        ("请帮我检查", 3.0, true, &["请帮我检查"]),
        ("帮我检查一下代码", 3.0, true, &["帮我检查"]),
        ("检查一下", 0.0, false, &[]),
        ("如何使用", 0.0, false, &[]),
        ("怎么办", 0.0, false, &[]),
        ("运维流程是什么", 4.0, true, &["运维流程"]),
        ("我想知道如何在生产环境中一步一步地部署", 5.0, true, &["如何在生产环境中一步一步地部署", "部署"]),
    ];

    #[test]
    fn every_worked_example_of_the_spec() {
        for (query, score, fires, fragments) in EXAMPLES {
            let r = should_search_skills(query);
            assert_eq!(r.score, *score, "{query}: {r:?}");
            assert_eq!(r.fired, *fires, "{query}");
            assert_eq!(r.fragments, *fragments, "{query}");
            assert_eq!(r.matched.len(), r.fragments.len());
        }
    }

    #[test]
    fn rule_names_and_odd_input() {
        assert_eq!(should_search_skills("How do I use skills?").matched, vec!["E1_how_do_i", "E6_skill"]);
        assert!(!should_search_skills("").fired);
        assert!(!should_search_skills("   \n\t").fired);
        let big = "how do I deploy ".repeat(70_000);
        assert!(should_search_skills(&big).fired, "a 1 MB query is fine");
        assert!(should_search_skills("Ünïcödé 🚀 how to install 😀").fired);
        assert!(!should_search_skills("\u{FFFD}\u{FFFD}").fired);
        assert!(RULES.iter().all(|r| r.pattern.is_some()) && NEGATOR.is_some(), "every pattern compiles");
    }

    #[test]
    fn the_switch() {
        assert!(gate_enabled(None));
        assert!(gate_enabled(Some("true")));
        assert!(gate_enabled(Some("yes please")));
        for off in ["false", " FALSE ", "0", "no", "No"] {
            assert!(!gate_enabled(Some(off)), "{off}");
        }
    }
}
