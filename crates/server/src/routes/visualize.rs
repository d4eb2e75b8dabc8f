//! `GET /api/v1/visualize?dataset_id=…`: a self-contained page drawing a
//! dataset's knowledge graph (no network: the script and the data are in
//! the page). Without `full`, a bounded subgraph around seed nodes.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use recall_api::{bounded_subgraph, graph_dto};
use recall_core::DatasetRef;
use serde_json::{json, Value};

use super::{parse_uuid_in, query_int, query_pairs};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

const TEMPLATE: &str = include_str!("../../assets/graph.html");
const SCRIPT: &str = include_str!("../../assets/graph.js");

/// The largest graph the page draws.
const MAX_NODES: usize = 5000;

/// `GET /api/v1/visualize`.
#[utoipa::path(get, path = "/visualize", tag = "datasets", params(("dataset_id" = String, Query, description = "Dataset id"), ("full" = Option<bool>, Query, description = "The whole graph (up to 5 000 nodes)"), ("max_nodes" = Option<usize>, Query, description = "1–5000, default 500"), ("neighborhood_depth" = Option<usize>, Query, description = "1–10, default 2"), ("neighborhood_seed_top_k" = Option<usize>, Query, description = "1–100, default 10"), ("seed_node_ids" = Option<Vec<String>>, Query, description = "Seed node ids (repeatable)")), responses((status = 200, description = "A self-contained HTML page", content_type = "text/html"), (status = 400, description = "Missing dataset_id", body = Object), (status = 403, description = "No read permission", body = Object)))]
pub async fn visualize(
    State(state): State<AppState>,
    Caller(user): Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let query = query_pairs(raw.as_deref());
    let value = |name: &str| query.iter().find(|(k, v)| k == name && !v.is_empty()).map(|(_, v)| v.as_str());
    let dataset = value("dataset_id").ok_or_else(|| {
        ApiError::invalid("missing", vec![json!("query"), json!("dataset_id")], "Field required", Value::Null)
    })?;
    let dataset = recall_core::DatasetId(parse_uuid_in("query", dataset, "dataset_id")?);
    let full = value("full").is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes" | "on"));
    let max_nodes = query_int(&query, "max_nodes", if full { MAX_NODES } else { 500 }, 1..=MAX_NODES)?;
    let depth = query_int(&query, "neighborhood_depth", 2, 1..=10)?;
    let seed_top_k = query_int(&query, "neighborhood_seed_top_k", 10, 1..=100)?;
    let seeds = query
        .iter()
        .filter(|(k, v)| k == "seed_node_ids" && !v.is_empty())
        .map(|(_, v)| parse_uuid_in("query", v, "seed_node_ids"))
        .collect::<ApiResult<Vec<_>>>()?;

    let (dataset, graph) = state.app().dataset_graph(&user, &DatasetRef::Id(dataset)).await?;
    let graph = if full && graph.nodes.len() <= max_nodes {
        graph
    } else {
        bounded_subgraph(&graph, &seeds, if full { usize::MAX } else { depth }, seed_top_k, max_nodes)
    };
    let page = graph_page(&dataset.name, &graph);
    Ok(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response())
}

/// The graph page for a graph: a self-contained HTML document.
pub fn graph_page(title: &str, graph: &recall_core::Subgraph) -> String {
    render(title, &graph_dto(graph))
}

/// The page: the template with the title, the script and the data filled in
/// (each marker once, in one pass, so no value is read as a marker).
fn render(title: &str, data: &Value) -> String {
    // `</` inside a script element would end it.
    let data = data.to_string().replace("</", "<\\/");
    let title = html_escape(title);
    let mut out = String::with_capacity(TEMPLATE.len() + SCRIPT.len() + data.len());
    let mut rest = TEMPLATE;
    let markers = [("__TITLE__", title.as_str()), ("__SCRIPT__", SCRIPT), ("__DATA__", data.as_str())];
    while let Some((at, marker, value)) =
        markers.iter().filter_map(|(m, v)| rest.find(m).map(|at| (at, *m, *v))).min_by_key(|(at, _, _)| *at)
    {
        out.push_str(&rest[..at]);
        out.push_str(value);
        rest = &rest[at + marker.len()..];
    }
    out.push_str(rest);
    out
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_embeds_data_that_cannot_escape_its_script() {
        let data = json!({"nodes": [{"id": "1", "label": "</script><script>alert(1)</script> __TITLE__", "type": "Entity", "properties": {}}], "edges": []});
        let page = render("<b>notes</b>", &data);
        assert!(page.contains("<title>&lt;b&gt;notes&lt;/b&gt; — Recall graph</title>"));
        assert!(!page.contains("</script><script>alert(1)"));
        assert!(page.contains("<\\/script><script>alert(1)<\\/script> __TITLE__"), "values are never read as markers");
        assert!(!page.contains("__DATA__") && !page.contains("__SCRIPT__"));
        assert!(!page.contains("http://") && !page.contains("https://"), "nothing is fetched from elsewhere");
    }
}
