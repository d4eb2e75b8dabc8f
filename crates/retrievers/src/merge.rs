//! Two retrievals of one turn made one (docs/sessions.md, "The second
//! retrieval lane"): a session turn retrieves with the question and with a
//! query that quotes the last turns; the retriever merges the two ranked
//! lists before it builds its context.

use std::collections::HashMap;

use serde_json::Value;

/// Slots held for what only the second lane found: about a third of
/// `limit`, none below three slots (one of two would give the rewrite half).
pub fn conversational_reserve(limit: usize) -> usize {
    if limit <= 2 {
        0
    } else {
        (limit / 3).max(1)
    }
}

/// Merges two ranked lists, agreement first: items in both lists (as their
/// `primary` object, in primary order), then the rest of `primary`, then
/// the rest of `secondary`. Items without an identity are never merged
/// away. With a `limit`, up to `reserve` slots go to secondary-only items
/// and unused slots return to the other side; the result keeps the merged
/// order and never exceeds `limit`.
pub fn merge_ranked(
    primary: Vec<Value>,
    secondary: Vec<Value>,
    identity: impl Fn(&Value) -> Option<String>,
    limit: Option<usize>,
    reserve: usize,
) -> Vec<Value> {
    // (rank in primary, rank in secondary, the object)
    let mut records: Vec<(Option<usize>, Option<usize>, Value)> = Vec::new();
    let mut by_identity: HashMap<String, usize> = HashMap::new();
    for (lane, items) in [primary, secondary].into_iter().enumerate() {
        for (rank, item) in items.into_iter().enumerate() {
            let found = identity(&item).map(|id| {
                let next = records.len();
                (*by_identity.entry(id).or_insert(next), next)
            });
            let index = match found {
                Some((existing, next)) if existing < next => existing,
                _ => {
                    records.push((None, None, item));
                    records.len() - 1
                }
            };
            let record = &mut records[index];
            let slot = if lane == 0 { &mut record.0 } else { &mut record.1 };
            if slot.is_none() {
                *slot = Some(rank);
            }
        }
    }
    let order = |r: &(Option<usize>, Option<usize>, Value)| match (r.0, r.1) {
        (Some(p), Some(_)) => (0, p),
        (Some(p), None) => (1, p),
        (None, s) => (2, s.unwrap_or(usize::MAX)),
    };
    records.sort_by_key(order);
    let Some(limit) = limit else { return records.into_iter().map(|r| r.2).collect() };
    let reserve = reserve.min(limit);
    let secondary_only: Vec<usize> = (0..records.len()).filter(|&i| records[i].0.is_none()).collect();
    let with_primary: Vec<usize> = (0..records.len()).filter(|&i| records[i].0.is_some()).collect();
    let mut take: Vec<usize> = secondary_only.iter().take(reserve).copied().collect();
    let primary_slots = limit - take.len();
    take.extend(with_primary.iter().take(primary_slots));
    let shortfall = limit.saturating_sub(take.len());
    take.extend(secondary_only.iter().skip(reserve).take(shortfall));
    take.sort_unstable();
    let mut records: Vec<Option<Value>> = records.into_iter().map(|r| Some(r.2)).collect();
    take.into_iter().filter_map(|i| records[i].take()).collect()
}

/// [`merge_ranked`] within what one lane returns: `top_k` when the request
/// set one, else the longer lane's length, with the conversational reserve.
pub fn merge_lanes(
    primary: Vec<Value>,
    secondary: Vec<Value>,
    top_k: Option<usize>,
    identity: impl Fn(&Value) -> Option<String>,
) -> Vec<Value> {
    let limit = top_k.unwrap_or(primary.len().max(secondary.len()));
    merge_ranked(primary, secondary, identity, Some(limit), conversational_reserve(limit))
}

/// A chunk (or any payload) by its `id`.
pub fn payload_identity(item: &Value) -> Option<String> {
    item.get("id").map(|id| match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// A triplet's edge: its `edge_object_id`, else the relationship it
/// expresses (source, relationship, target).
pub fn edge_identity(item: &Value) -> Option<String> {
    let edge = item.get("edge")?;
    if let Some(id) = edge.pointer("/properties/edge_object_id").and_then(Value::as_str) {
        return Some(format!("edge:{id}"));
    }
    let field = |k: &str| edge.get(k).map(Value::to_string).unwrap_or_default();
    Some(format!("graph:{}:{}:{}", field("source_node_id"), field("relationship_name"), field("target_node_id")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn items(ids: &[&str]) -> Vec<Value> {
        ids.iter().map(|id| json!({"id": id})).collect()
    }

    fn ids(merged: &[Value]) -> Vec<&str> {
        merged.iter().filter_map(|v| v["id"].as_str()).collect()
    }

    #[test]
    fn agreement_comes_first_then_primary_then_secondary() {
        let merged = merge_ranked(items(&["a", "b", "c"]), items(&["c", "d", "a"]), payload_identity, None, 0);
        assert_eq!(ids(&merged), ["a", "c", "b", "d"]);
        let single = merge_ranked(items(&["x", "y"]), Vec::new(), payload_identity, None, 0);
        assert_eq!(ids(&single), ["x", "y"], "one lane comes back as it was");
    }

    #[test]
    fn a_limit_reserves_slots_for_the_second_lane_and_gives_back_what_it_does_not_use() {
        let p = items(&["p1", "p2", "p3", "p4", "p5", "p6"]);
        let s = items(&["s1", "s2", "s3"]);
        assert_eq!(conversational_reserve(6), 2);
        let merged = merge_ranked(p.clone(), s.clone(), payload_identity, Some(6), 2);
        assert_eq!(ids(&merged), ["p1", "p2", "p3", "p4", "s1", "s2"]);
        // Nothing new from the second lane: the primary side gets every slot.
        let merged = merge_ranked(p.clone(), items(&["p2"]), payload_identity, Some(6), 2);
        assert_eq!(ids(&merged), ["p2", "p1", "p3", "p4", "p5", "p6"]);
        // A short primary lane leaves slots to the second.
        let merged = merge_ranked(items(&["p1"]), s, payload_identity, Some(3), 1);
        assert_eq!(ids(&merged), ["p1", "s1", "s2"]);
        assert_eq!((conversational_reserve(2), conversational_reserve(3), conversational_reserve(10)), (0, 1, 3));
    }

    #[test]
    fn items_without_identity_are_kept_and_the_primary_object_represents_a_pair() {
        let p = vec![json!({"id": "a", "lane": 1}), json!({"no": "id"})];
        let s = vec![json!({"id": "a", "lane": 2}), json!({"no": "id"})];
        let merged = merge_ranked(p, s, payload_identity, None, 0);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0], json!({"id": "a", "lane": 1}));
    }

    #[test]
    fn edges_are_identified_by_object_id_else_by_their_ends() {
        let with_id = json!({"edge": {"properties": {"edge_object_id": "e1"}, "source_node_id": "s"}});
        assert_eq!(edge_identity(&with_id).as_deref(), Some("edge:e1"));
        let plain = json!({"edge": {"source_node_id": "s", "relationship_name": "knows", "target_node_id": "t"}});
        assert_eq!(edge_identity(&plain).as_deref(), Some("graph:\"s\":\"knows\":\"t\""));
        assert_eq!(edge_identity(&json!({"id": 1})), None);
    }
}
