//! The `response_schema` compiler (docs/structured-output.md): the
//! structural subset of JSON Schema that Pydantic's `model_json_schema()`
//! emits, checked in a fixed order before any retrieval or LLM work, and
//! compiled into the model a structured answer is validated against.
//!
//! Value constraints (`minLength`, `minimum`, `pattern`, `format`, …) are
//! ignored. A required property is mandatory; every other property is
//! optional and reads as `null` when absent. Properties a model did not
//! declare are dropped from the answer, as a Pydantic model drops them.

use std::collections::BTreeSet;

use recall_core::{RecallError, Result};
use serde_json::{Map, Value};

/// Nesting levels a schema may have (objects, `$ref`s, `anyOf` members,
/// array items and list-type members each add one).
pub const MAX_DEPTH: usize = 10;
/// Properties a schema may declare in total, counted per object as built.
pub const MAX_PROPERTIES: usize = 200;

/// The model name used when the schema's `title` is not an identifier.
pub const DEFAULT_MODEL_NAME: &str = "ResponseModel";

/// A compiled schema: the model name and the root object.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseModel {
    pub name: String,
    root: Node,
}

/// One compiled node.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Object(Vec<Field>),
    Array(Box<Node>),
    String,
    Integer,
    Number,
    Boolean,
    Null,
    Enum(Vec<Value>),
    Union(Vec<Node>),
}

#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    node: Node,
    required: bool,
}

fn invalid(suffix: impl std::fmt::Display) -> RecallError {
    RecallError::Validation { name: "CogneeValidationError", message: format!("response_schema: {suffix}") }
}

/// A Python identifier (ASCII subset: a letter or `_`, then letters, digits or `_`).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_') && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Compiles a response schema, or says why it is outside the subset.
pub fn compile(schema: &Value) -> Result<ResponseModel> {
    let Value::Object(root) = schema else {
        return Err(invalid("must be a JSON object"));
    };
    if root.get("type") != Some(&Value::String("object".into())) {
        return Err(invalid("root schema must have type 'object'"));
    }
    for key in ["$defs", "definitions"] {
        if root.get(key).is_some_and(|d| !d.is_object()) {
            return Err(invalid("'$defs' must be an object"));
        }
    }
    let mut compiler = Compiler { root, properties: 0, resolving: Vec::new() };
    let node = compiler.object(root, 0)?;
    let name = root.get("title").and_then(Value::as_str).filter(|t| is_identifier(t)).unwrap_or(DEFAULT_MODEL_NAME);
    Ok(ResponseModel { name: name.to_string(), root: node })
}

struct Compiler<'a> {
    root: &'a Map<String, Value>,
    properties: usize,
    /// The `$ref`s being resolved on the current path.
    resolving: Vec<String>,
}

impl Compiler<'_> {
    fn object(&mut self, node: &Map<String, Value>, depth: usize) -> Result<Node> {
        let properties = match node.get("properties") {
            Some(Value::Object(p)) if !p.is_empty() => p,
            _ => return Err(invalid("object schemas must declare non-empty 'properties'")),
        };
        self.properties += properties.len();
        if self.properties > MAX_PROPERTIES {
            return Err(invalid(format!("more than {MAX_PROPERTIES} properties in total")));
        }
        if let Some(bad) = properties.keys().find(|k| !is_identifier(k)) {
            return Err(invalid(format!("property name '{bad}' is not a valid identifier")));
        }
        let required: BTreeSet<&str> = node
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::with_capacity(properties.len());
        for (name, schema) in properties {
            let node = self.node(schema, depth + 1)?;
            fields.push(Field { name: name.clone(), node, required: required.contains(name.as_str()) });
        }
        Ok(Node::Object(fields))
    }

    fn node(&mut self, schema: &Value, depth: usize) -> Result<Node> {
        if depth > MAX_DEPTH {
            return Err(invalid(format!("nesting deeper than {MAX_DEPTH} levels")));
        }
        let Value::Object(node) = schema else {
            return Err(invalid("every schema node must be an object"));
        };
        for keyword in ["allOf", "oneOf", "not", "patternProperties"] {
            if node.contains_key(keyword) {
                return Err(invalid(format!("unsupported JSON Schema keyword: {keyword}")));
            }
        }
        if let Some(reference) = node.get("$ref") {
            return self.reference(reference, depth);
        }
        if let Some(values) = node.get("enum") {
            return enumeration(values);
        }
        if let Some(members) = node.get("anyOf") {
            let members = members.as_array().map(Vec::as_slice).unwrap_or_default();
            if members.is_empty() {
                return Err(unsupported_type(schema));
            }
            return members.iter().map(|m| self.node(m, depth + 1)).collect::<Result<_>>().map(Node::Union);
        }
        match node.get("type") {
            Some(Value::Array(types)) if !types.is_empty() => types
                .iter()
                .map(|t| {
                    let mut single = node.clone();
                    single.insert("type".into(), t.clone());
                    self.node(&Value::Object(single), depth + 1)
                })
                .collect::<Result<_>>()
                .map(Node::Union),
            Some(Value::String(t)) if t == "object" => self.object(node, depth),
            None if node.contains_key("properties") => self.object(node, depth),
            Some(Value::String(t)) if t == "array" => match node.get("items") {
                Some(items) => Ok(Node::Array(Box::new(self.node(items, depth + 1)?))),
                None => Err(invalid("array schemas must declare 'items'")),
            },
            Some(Value::String(t)) => match t.as_str() {
                "string" => Ok(Node::String),
                "integer" => Ok(Node::Integer),
                "number" => Ok(Node::Number),
                "boolean" => Ok(Node::Boolean),
                "null" => Ok(Node::Null),
                _ => Err(unsupported_type(schema)),
            },
            _ => Err(unsupported_type(schema)),
        }
    }

    fn reference(&mut self, reference: &Value, depth: usize) -> Result<Node> {
        let text = reference.as_str().unwrap_or_default();
        let (section, name) = match (text.strip_prefix("#/$defs/"), text.strip_prefix("#/definitions/")) {
            (Some(name), _) => ("$defs", name),
            (None, Some(name)) => ("definitions", name),
            (None, None) => {
                return Err(invalid(format!(
                    "unsupported reference '{}' (only #/$defs/... and #/definitions/...)",
                    display(reference)
                )))
            }
        };
        let Some(target) = self.root.get(section).and_then(|d| d.get(name)) else {
            return Err(invalid(format!("unresolvable reference '{text}'")));
        };
        if self.resolving.iter().any(|r| r == text) {
            return Err(invalid(format!("recursive reference '{text}'")));
        }
        self.resolving.push(text.to_string());
        let node = self.node(target, depth + 1);
        self.resolving.pop();
        node
    }
}

/// A reference as the message shows it: the string, else its JSON.
fn display(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn enumeration(values: &Value) -> Result<Node> {
    let bad = || invalid("enum values must be non-empty strings, integers, or booleans");
    let values = values.as_array().filter(|v| !v.is_empty()).ok_or_else(bad)?;
    let allowed = |v: &Value| match v {
        Value::String(s) => !s.is_empty(),
        Value::Bool(_) => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        _ => false,
    };
    if values.iter().all(allowed) {
        Ok(Node::Enum(values.clone()))
    } else {
        Err(bad())
    }
}

/// Python's `repr` of a schema node, approximately: its JSON.
fn unsupported_type(schema: &Value) -> RecallError {
    invalid(format!("unsupported or missing 'type' in schema node: {schema}"))
}

impl ResponseModel {
    /// Validates an answer against the model: the answer as the model
    /// holds it (every declared property, `null` for absent optional ones,
    /// undeclared ones dropped; integers given for `number` become floats),
    /// or what is wrong with it.
    pub fn validate(&self, value: &Value) -> std::result::Result<Value, String> {
        check(&self.root, value, "")
    }
}

fn check(node: &Node, value: &Value, path: &str) -> std::result::Result<Value, String> {
    let wrong = |expected: &str| Err(format!("invalid value at '{path}': expected {expected}, got {value}"));
    match node {
        Node::Object(fields) => {
            let Value::Object(map) = value else { return wrong("an object") };
            let mut out = Map::new();
            for field in fields {
                let at = format!("{path}/{}", field.name);
                match map.get(&field.name) {
                    Some(v) if !(v.is_null() && !field.required && !accepts_null(&field.node)) => {
                        out.insert(field.name.clone(), check(&field.node, v, &at)?);
                    }
                    Some(_) => {
                        out.insert(field.name.clone(), Value::Null);
                    }
                    None if field.required => return Err(format!("missing required property at '{at}'")),
                    None => {
                        out.insert(field.name.clone(), Value::Null);
                    }
                }
            }
            Ok(Value::Object(out))
        }
        Node::Array(items) => {
            let Value::Array(list) = value else { return wrong("an array") };
            list.iter()
                .enumerate()
                .map(|(i, v)| check(items, v, &format!("{path}/{i}")))
                .collect::<Result<_, _>>()
                .map(Value::Array)
        }
        Node::String => value.as_str().map(|_| value.clone()).map_or_else(|| wrong("a string"), Ok),
        Node::Integer => match value {
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(value.clone()),
            Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite()) => {
                Ok(Value::from(n.as_f64().unwrap_or_default() as i64))
            }
            _ => wrong("an integer"),
        },
        Node::Number => match value.as_f64() {
            Some(f) => Ok(serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            None => wrong("a number"),
        },
        Node::Boolean => value.as_bool().map(|_| value.clone()).map_or_else(|| wrong("a boolean"), Ok),
        Node::Null => {
            if value.is_null() {
                Ok(Value::Null)
            } else {
                wrong("null")
            }
        }
        Node::Enum(values) => {
            if values.contains(value) {
                Ok(value.clone())
            } else {
                Err(format!("invalid value at '{path}': {value} is not one of {}", Value::Array(values.clone())))
            }
        }
        Node::Union(members) => {
            let mut errors = Vec::new();
            for member in members {
                match check(member, value, path) {
                    Ok(v) => return Ok(v),
                    Err(e) => errors.push(e),
                }
            }
            Err(errors.join("; "))
        }
    }
}

/// Whether a node takes `null` as a value of its own (so an explicit null
/// is checked, not read as "absent").
fn accepts_null(node: &Node) -> bool {
    match node {
        Node::Null => true,
        Node::Union(members) => members.iter().any(accepts_null),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(schema: Value) -> String {
        match compile(&schema) {
            Err(RecallError::Validation { name: "CogneeValidationError", message }) => message,
            other => panic!("expected a CogneeValidationError, got {other:?}"),
        }
    }

    fn object(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    /// `depth` objects nested inside the root's property `p`.
    fn nested(depth: usize) -> Value {
        let mut node = json!({"type": "string"});
        for _ in 0..depth {
            node = object(json!({"p": node}));
        }
        object(json!({"p": node}))
    }

    #[test]
    fn every_check_has_its_exact_message() {
        let cases: Vec<(Value, &str)> = vec![
            (json!([1]), "must be a JSON object"),
            (json!("x"), "must be a JSON object"),
            (json!({"type": "array", "items": {"type": "string"}}), "root schema must have type 'object'"),
            (json!({"properties": {"a": {"type": "string"}}}), "root schema must have type 'object'"),
            (
                json!({"type": ["object"], "properties": {"a": {"type": "string"}}}),
                "root schema must have type 'object'",
            ),
            (
                json!({"type": "object", "$defs": [], "properties": {"a": {"type": "string"}}}),
                "'$defs' must be an object",
            ),
            (
                json!({"type": "object", "definitions": 3, "properties": {"a": {"type": "string"}}}),
                "'$defs' must be an object",
            ),
            (json!({"type": "object"}), "object schemas must declare non-empty 'properties'"),
            (json!({"type": "object", "properties": {}}), "object schemas must declare non-empty 'properties'"),
            (json!({"type": "object", "properties": []}), "object schemas must declare non-empty 'properties'"),
            (object(json!({"a": {"type": "object"}})), "object schemas must declare non-empty 'properties'"),
            (object(json!({"first-name": {"type": "string"}})), "property name 'first-name' is not a valid identifier"),
            (object(json!({"1st": {"type": "string"}})), "property name '1st' is not a valid identifier"),
            (nested(10), "nesting deeper than 10 levels"),
            (object(json!({"a": 3})), "every schema node must be an object"),
            (object(json!({"a": {"allOf": [{"type": "string"}]}})), "unsupported JSON Schema keyword: allOf"),
            (object(json!({"a": {"oneOf": [{"type": "string"}]}})), "unsupported JSON Schema keyword: oneOf"),
            (object(json!({"a": {"not": {"type": "string"}}})), "unsupported JSON Schema keyword: not"),
            (
                object(
                    json!({"a": {"type": "object", "patternProperties": {}, "properties": {"b": {"type": "string"}}}}),
                ),
                "unsupported JSON Schema keyword: patternProperties",
            ),
            // Checked in that order: allOf before oneOf before not.
            (object(json!({"a": {"not": {}, "oneOf": [], "allOf": []}})), "unsupported JSON Schema keyword: allOf"),
            (
                object(json!({"a": {"$ref": "https://example.com/s.json"}})),
                "unsupported reference 'https://example.com/s.json' (only #/$defs/... and #/definitions/...)",
            ),
            (object(json!({"a": {"$ref": "#/$defs/Missing"}})), "unresolvable reference '#/$defs/Missing'"),
            (
                json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Node"}},
                       "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}),
                "recursive reference '#/$defs/Node'",
            ),
            (object(json!({"a": {"enum": []}})), "enum values must be non-empty strings, integers, or booleans"),
            (object(json!({"a": {"enum": ["", "x"]}})), "enum values must be non-empty strings, integers, or booleans"),
            (object(json!({"a": {"enum": [1.5]}})), "enum values must be non-empty strings, integers, or booleans"),
            (object(json!({"a": {"enum": [null]}})), "enum values must be non-empty strings, integers, or booleans"),
            (object(json!({"a": {"type": "array"}})), "array schemas must declare 'items'"),
            (
                object(json!({"a": {"type": "date"}})),
                "unsupported or missing 'type' in schema node: {\"type\":\"date\"}",
            ),
            (
                object(json!({"a": {"description": "x"}})),
                "unsupported or missing 'type' in schema node: {\"description\":\"x\"}",
            ),
        ];
        for (schema, suffix) in cases {
            assert_eq!(message(schema.clone()), format!("response_schema: {suffix}"), "{schema}");
        }
        let err = compile(&json!(1)).unwrap_err();
        assert_eq!((err.name(), err.http_status()), ("CogneeValidationError", 422));
    }

    #[test]
    fn the_budgets_are_exact() {
        assert!(compile(&nested(9)).is_ok(), "ten levels are allowed");
        let props = |n: usize| {
            let map: Map<String, Value> = (0..n).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
            object(Value::Object(map))
        };
        assert!(compile(&props(200)).is_ok());
        assert_eq!(message(props(201)), "response_schema: more than 200 properties in total");
        // Counted per object as built: a definition used twice counts twice.
        let defs: Map<String, Value> = (0..60).map(|i| (format!("f{i}"), json!({"type": "string"}))).collect();
        let twice = json!({"type": "object",
            "properties": {"a": {"$ref": "#/$defs/D"}, "b": {"$ref": "#/$defs/D"}, "c": {"$ref": "#/$defs/D"}, "d": {"$ref": "#/$defs/D"}},
            "$defs": {"D": {"type": "object", "properties": defs}}});
        assert_eq!(message(twice), "response_schema: more than 200 properties in total");
        // A reference, an anyOf member, array items and a list-type member each add a level.
        let mut node = json!({"type": "string"});
        for _ in 0..10 {
            node = json!({"type": "array", "items": node});
        }
        assert_eq!(message(object(json!({"a": node}))), "response_schema: nesting deeper than 10 levels");
    }

    #[test]
    fn pydantic_schemas_compile_and_answers_validate() {
        // NLPFacts.model_json_schema(), as seed documentation shows it.
        let facts = json!({
            "properties": {
                "field_name": {"title": "Field Name", "type": "string"},
                "parent_disciplines": {"items": {"type": "string"}, "title": "Parent Disciplines", "type": "array"}
            },
            "required": ["field_name", "parent_disciplines"], "title": "NLPFacts", "type": "object"
        });
        let model = compile(&facts).unwrap();
        assert_eq!(model.name, "NLPFacts");
        let answer = json!({"field_name": "NLP", "parent_disciplines": ["linguistics"], "extra": 1});
        assert_eq!(
            model.validate(&answer).unwrap(),
            json!({"field_name": "NLP", "parent_disciplines": ["linguistics"]})
        );
        assert!(model.validate(&json!({"field_name": "NLP"})).unwrap_err().contains("parent_disciplines"));
        assert!(model.validate(&json!({"field_name": 3, "parent_disciplines": []})).is_err());

        // Optional[...] (anyOf with null), $defs, enums, list-valued type, numbers; constraints ignored.
        let rich = json!({
            "$defs": {
                "Color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
                "Point": {"properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                          "required": ["x", "y"], "title": "Point", "type": "object"}
            },
            "properties": {
                "name": {"type": "string", "minLength": 50, "pattern": "^z+$"},
                "color": {"$ref": "#/$defs/Color"},
                "at": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": null},
                "count": {"type": ["integer", "null"], "minimum": 100},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["name", "color"], "title": "Thing-with-dash", "type": "object"
        });
        let model = compile(&rich).unwrap();
        assert_eq!(model.name, "ResponseModel", "a title that is not an identifier");
        let got = model.validate(&json!({"name": "a", "color": "red", "at": {"x": 1, "y": 2.5}})).unwrap();
        assert_eq!(got, json!({"name": "a", "color": "red", "at": {"x": 1.0, "y": 2.5}, "count": null, "tags": null}));
        assert!(model.validate(&json!({"name": "a", "color": "blue"})).unwrap_err().contains("not one of"));
        assert_eq!(model.validate(&json!({"name": "a", "color": "green", "count": 3})).unwrap()["count"], json!(3));
        assert!(model.validate(&json!({"name": "a", "color": "green", "count": "3"})).is_err());
        // A definition used twice, not recursively, is fine.
        let pair = json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/P"}, "b": {"$ref": "#/definitions/P"}},
                          "definitions": {"P": {"type": "object", "properties": {"v": {"type": "boolean"}}}}});
        assert!(compile(&pair).unwrap().validate(&json!({"a": {"v": true}})).is_ok());
    }
}
