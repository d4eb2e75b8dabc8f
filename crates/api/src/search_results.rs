//! Cognee's legacy search result shapes, built from the engine's payloads.

use recall_core::request::truthy;
use recall_engine::SearchResultPayload;
use recall_retrievers::LlmContext;
use serde_json::{json, Map, Value};

fn context_value(context: &Option<LlmContext>) -> Value {
    match context {
        Some(LlmContext::Text(s)) => Value::String(s.clone()),
        Some(LlmContext::List(l)) => json!(l),
        None => Value::Null,
    }
}

/// The non-verbose `search_result`: the prompt (only_context), else the
/// completion if truthy, else the context if truthy, else the raw objects.
fn search_result(p: &SearchResultPayload) -> Value {
    if p.only_context {
        return match &p.user_prompt {
            Some(prompt) => Value::String(prompt.clone()),
            None => context_value(&p.context),
        };
    }
    let completion = p.completion.clone().map(Value::Array).unwrap_or(Value::Null);
    if truthy(&completion) {
        return completion;
    }
    let context = context_value(&p.context);
    if truthy(&context) {
        return context;
    }
    Value::Array(p.objects.clone())
}

fn verbose_result(p: &SearchResultPayload) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("text_result".into(), p.completion.clone().map(Value::Array).unwrap_or(Value::Null));
    m.insert("context_result".into(), context_value(&p.context));
    m.insert("objects_result".into(), Value::Array(p.objects.clone()));
    m.insert("user_prompt_result".into(), p.user_prompt.clone().map(Value::String).unwrap_or(Value::Null));
    m.insert("system_prompt_result".into(), p.system_prompt.clone().map(Value::String).unwrap_or(Value::Null));
    m.insert("evidence".into(), serde_json::to_value(&p.evidence).unwrap_or(Value::Array(Vec::new())));
    m
}

/// `_backwards_compatible_search_results`: the legacy search's answer
/// (docs/requests.md, "The legacy search result"). With access control on,
/// one object per searched dataset; off, the bare results, a single list
/// result unwrapped.
pub fn search_results(payloads: &[SearchResultPayload], verbose: bool, access_control: bool) -> Vec<Value> {
    if !access_control {
        let results: Vec<Value> = payloads
            .iter()
            .map(|p| if verbose { Value::Object(verbose_result(p)) } else { search_result(p) })
            .collect();
        if let [Value::Array(inner)] = results.as_slice() {
            if !verbose {
                return inner.clone();
            }
        }
        return results;
    }
    payloads
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("dataset_id".into(), json!(p.dataset.as_ref().map(|d| d.id.to_string())));
            m.insert("dataset_name".into(), json!(p.dataset.as_ref().map(|d| d.name.clone())));
            m.insert(
                "dataset_tenant_id".into(),
                json!(p.dataset.as_ref().and_then(|d| d.tenant_id).map(|t| t.to_string())),
            );
            if verbose {
                m.extend(verbose_result(p));
            } else {
                m.insert("search_result".into(), search_result(p));
            }
            if let Some(error) = &p.error {
                m.insert("error".into(), json!(error));
            }
            Value::Object(m)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use recall_core::SearchType;

    use super::*;

    fn payload(
        completion: Option<Vec<Value>>,
        context: Option<LlmContext>,
        objects: Vec<Value>,
    ) -> SearchResultPayload {
        SearchResultPayload {
            dataset: None,
            search_type: SearchType::GraphCompletion,
            completion,
            context,
            only_context: false,
            user_prompt: None,
            system_prompt: None,
            evidence: Vec::new(),
            structured: false,
            error: None,
            objects,
        }
    }

    #[test]
    fn the_result_falls_through_completion_context_and_objects() {
        let answer = payload(Some(vec![json!("Paris")]), Some(LlmContext::Text("ctx".into())), vec![]);
        assert_eq!(search_result(&answer), json!(["Paris"]));
        let empty_answer = payload(Some(vec![]), Some(LlmContext::Text("ctx".into())), vec![]);
        assert_eq!(search_result(&empty_answer), json!("ctx"));
        let nothing = payload(Some(vec![]), Some(LlmContext::Text(String::new())), vec![json!({"a": 1})]);
        assert_eq!(search_result(&nothing), json!([{"a": 1}]));
        // Access control off: a single list result is returned unwrapped.
        assert_eq!(search_results(std::slice::from_ref(&answer), false, false), vec![json!("Paris")]);
        assert_eq!(search_results(&[answer.clone(), answer], false, false), vec![json!(["Paris"]), json!(["Paris"])]);
    }
}
