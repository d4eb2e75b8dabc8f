//! `scope` (docs/recall.md, "Scopes and lanes"): normalisation, validation and the
//! lanes a recall runs, in order. A request names *scopes* (`auto`, `all`,
//! `session_first`, `graph`, …); a plan is the *lanes* they stand for. Pure
//! functions, no I/O.

use recall_core::{RecallError, Result};

/// One lane of `recall()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    Session,
    Trace,
    SessionContext,
    Graph,
    Tools,
    Code,
}

impl Lane {
    /// The scope name of the lane.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Session => "session",
            Lane::Trace => "trace",
            Lane::SessionContext => "session_context",
            Lane::Graph => "graph",
            Lane::Tools => "tools",
            Lane::Code => "code",
        }
    }

    fn from_name(name: &str) -> Option<Lane> {
        Some(match name {
            "session" => Lane::Session,
            "trace" => Lane::Trace,
            "session_context" => Lane::SessionContext,
            "graph" => Lane::Graph,
            "tools" => Lane::Tools,
            "code" => Lane::Code,
            _ => return None,
        })
    }
}

/// Every name `scope` accepts, sorted.
pub const VALID_SCOPES: &[&str] =
    &["all", "auto", "code", "graph", "graph_context", "session", "session_context", "session_first", "trace", "tools"];

/// The lanes to run and whether a session hit skips the graph lane (and
/// everything after it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub lanes: Vec<Lane>,
    pub short_circuit: bool,
}

fn py_list(items: &[&str]) -> String {
    format!("[{}]", items.iter().map(|s| format!("'{s}'")).collect::<Vec<_>>().join(", "))
}

/// `normalize_scope`: `None` is `["auto"]`; unknown names are an error;
/// `graph_context` is `graph`; `all` expands to graph, session, trace and
/// session_context (then `tools` and `session_first` if listed; everything
/// else listed with it is dropped); duplicates go, order stays.
pub fn normalize_scope(scope: Option<&[String]>) -> Result<Vec<String>> {
    let Some(scope) = scope else { return Ok(vec!["auto".into()]) };
    let bad: Vec<&str> = scope.iter().map(String::as_str).filter(|s| !VALID_SCOPES.contains(s)).collect();
    if !bad.is_empty() {
        return Err(RecallError::Validation {
            name: "ValueError",
            message: format!("Unknown recall scope(s): {}. Valid values: {}", py_list(&bad), py_list(VALID_SCOPES)),
        });
    }
    let mut names: Vec<String> = scope
        .iter()
        .map(|s| {
            if s == "graph_context" {
                tracing::warn!("recall scope 'graph_context' is deprecated; use 'graph'");
                "graph".to_string()
            } else {
                s.clone()
            }
        })
        .collect();
    if names.iter().any(|s| s == "all") {
        let mut out: Vec<String> = ["graph", "session", "trace", "session_context"].map(String::from).to_vec();
        for extra in ["tools", "session_first"] {
            if names.iter().any(|s| s == extra) {
                out.push(extra.into());
            }
        }
        return Ok(out);
    }
    let mut seen = std::collections::HashSet::new();
    names.retain(|s| seen.insert(s.clone()));
    Ok(names)
}

/// What a request asks for, beyond the scope itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScopeInputs {
    pub session_id_set: bool,
    pub datasets_given: bool,
    pub query_type_pinned: bool,
    pub tools_on_empty: bool,
    pub code_query_given: bool,
}

/// The lanes, in order, and the short-circuit flag (docs/recall.md, "Scopes and lanes").
pub fn plan(scope: &[String], inputs: ScopeInputs) -> Result<Plan> {
    let (mut names, short_circuit): (Vec<&str>, bool) = if scope.len() == 1 && scope[0] == "auto" {
        match (inputs.session_id_set, inputs.query_type_pinned, inputs.datasets_given) {
            (true, false, false) => (vec!["session", "graph"], true),
            (true, false, true) => (vec!["session", "graph"], false),
            _ => (vec!["graph"], false),
        }
    } else if scope.iter().any(|s| s == "session_first") {
        let rest = scope.iter().map(String::as_str).filter(|s| !matches!(*s, "session_first" | "session" | "graph"));
        (["session", "graph"].into_iter().chain(rest).collect(), true)
    } else {
        // "auto" inside a longer list has no lane and is ignored.
        (scope.iter().map(String::as_str).filter(|s| *s != "auto").collect(), false)
    };
    if inputs.code_query_given && !names.contains(&"code") {
        return Err(RecallError::Validation {
            name: "InvalidCodeQueryError",
            message: "code_query requires the 'code' scope — pass scope=['code'] or scope=['graph', 'code'] ('code' is never implied by 'auto' or 'all').".into(),
        });
    }
    if inputs.tools_on_empty {
        if let Some(i) = names.iter().position(|s| *s == "tools") {
            let tools = names.remove(i);
            names.push(tools);
        }
    }
    Ok(Plan { lanes: names.into_iter().filter_map(Lane::from_name).collect(), short_circuit })
}

/// `tools_trigger` must be `always` or `on_empty`.
pub fn check_tools_trigger(trigger: &str) -> Result<()> {
    if matches!(trigger, "always" | "on_empty") {
        Ok(())
    } else {
        Err(RecallError::Validation {
            name: "InvalidToolsTriggerError",
            message: format!("Invalid tools_trigger '{trigger}'. Valid values: 'always', 'on_empty'."),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(items: &[&str]) -> Vec<String> {
        items.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn normalisation_cases() {
        assert_eq!(normalize_scope(None).unwrap_or_default(), s(&["auto"]));
        assert_eq!(normalize_scope(Some(&s(&["graph_context", "graph"]))).unwrap_or_default(), s(&["graph"]));
        assert_eq!(
            normalize_scope(Some(&s(&["code", "all", "session_first", "tools"]))).unwrap_or_default(),
            s(&["graph", "session", "trace", "session_context", "tools", "session_first"])
        );
        assert_eq!(normalize_scope(Some(&s(&["trace", "graph", "trace"]))).unwrap_or_default(), s(&["trace", "graph"]));
        assert!(normalize_scope(Some(&[])).unwrap_or_default().is_empty());
        let err = normalize_scope(Some(&s(&["graph", "web", "x"]))).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("Unknown recall scope(s): ['web', 'x']. Valid values: ['all', 'auto', 'code', 'graph', 'graph_context', 'session', 'session_context', 'session_first', 'trace', 'tools']")
        );
    }

    #[test]
    fn auto_and_explicit_plans() {
        use Lane::*;
        let auto = s(&["auto"]);
        let p = |scope: &[String], i: ScopeInputs| plan(scope, i).unwrap_or_else(|e| panic!("{e}"));
        let session = ScopeInputs { session_id_set: true, ..Default::default() };
        assert_eq!(p(&auto, ScopeInputs::default()), Plan { lanes: vec![Graph], short_circuit: false });
        assert_eq!(p(&auto, session), Plan { lanes: vec![Session, Graph], short_circuit: true });
        assert_eq!(
            p(&auto, ScopeInputs { datasets_given: true, ..session }),
            Plan { lanes: vec![Session, Graph], short_circuit: false }
        );
        assert_eq!(p(&auto, ScopeInputs { query_type_pinned: true, ..session }).lanes, vec![Graph]);
        assert_eq!(
            p(&s(&["trace", "session_first"]), ScopeInputs::default()),
            Plan { lanes: vec![Session, Graph, Trace], short_circuit: true }
        );
        assert_eq!(p(&s(&["auto", "trace"]), ScopeInputs::default()).lanes, vec![Trace]);
        let on_empty = ScopeInputs { tools_on_empty: true, ..Default::default() };
        assert_eq!(p(&s(&["tools", "graph", "session"]), on_empty).lanes, vec![Graph, Session, Tools]);
        let err = plan(&s(&["graph"]), ScopeInputs { code_query_given: true, ..Default::default() }).err();
        assert!(matches!(err, Some(RecallError::Validation { name: "InvalidCodeQueryError", .. })));
        assert!(p(&s(&["graph", "code"]), ScopeInputs { code_query_given: true, ..Default::default() })
            .lanes
            .contains(&Code));
        assert!(check_tools_trigger("on_empty").is_ok());
        assert_eq!(
            check_tools_trigger("never").err().map(|e| e.to_string()).as_deref(),
            Some("Invalid tools_trigger 'never'. Valid values: 'always', 'on_empty'.")
        );
    }
}
