//! What changes with the model, learned from captures of one release run
//! with different `--model`s: the request params a model sends otherwise
//! (2.1.88: haiku `thinking: {budget_tokens, type: enabled}` and no
//! `output_config`, opus `max_tokens: 64000`) and the model's name in the
//! tool descriptions (Bash's `Co-Authored-By: Claude Sonnet 4.6`).

use crate::profile::Profile;
use serde_json::{Map, Value};

/// Take in `other`, a capture of `other_model` (`into` was made from one of
/// `into_model`), when its prompt is `into`'s and its tools are but for the
/// model's name: its params as `into.model_params[other_model]` and the
/// tools with `{{model_name}}`. False (nothing changed) otherwise: then the
/// model needs a variant of its own.
pub(super) fn absorb_model(into: &mut Profile, into_model: &str, other: &Profile, other_model: &str) -> bool {
    if into_model == other_model || into_model.is_empty() || other_model.is_empty() || into.prompt != other.prompt {
        return false;
    }
    if into.tools != other.tools {
        let name = |p: &Profile, id: &str| p.model(id).map(|m| m.name.clone());
        let (Some(a), Some(b)) = (name(into, into_model), name(other, other_model)) else { return false };
        let mine = templated(&into.tools, &a);
        if mine != templated(&other.tools, &b) {
            return false;
        }
        into.tools = mine;
    }
    let diff = params_diff(&into.params, &other.params);
    if !diff.is_empty() && !into.model_params.contains_key(other_model) {
        into.model_params.insert(other_model.to_string(), Value::Object(diff));
    }
    true
}

/// The params `other` sends differently from `base`: changed or new
/// values, and `null` for what it does not send.
fn params_diff(base: &Map<String, Value>, other: &Map<String, Value>) -> Map<String, Value> {
    let mut diff = Map::new();
    for (k, v) in other {
        if base.get(k) != Some(v) {
            diff.insert(k.clone(), v.clone());
        }
    }
    for k in base.keys() {
        if !other.contains_key(k) {
            diff.insert(k.clone(), Value::Null);
        }
    }
    diff
}

/// `Co-Authored-By: Claude <name>` as `{{model_name}}` in every tool.
pub(super) fn templated(tools: &[Value], name: &str) -> Vec<Value> {
    let from = format!("Co-Authored-By: Claude {name} <");
    super::capture::replace_in_tools(tools, &from, "Co-Authored-By: Claude {{model_name}} <")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::ModelInfo;
    use serde_json::json;

    fn profile(model: &str, name: &str, params: Value) -> Profile {
        let mut p = Profile::builtin_cc_2_1_328().clone();
        p.models = vec![ModelInfo { id: model.into(), name: name.into(), knowledge_cutoff: None }];
        p.params = params.as_object().unwrap().clone();
        p.tools = vec![
            json!({"name": "Bash", "description": format!("end with:\nCo-Authored-By: Claude {name} <noreply@anthropic.com>")}),
        ];
        p
    }

    #[test]
    fn params_and_the_tools_model_name_per_model() {
        let mut into = profile(
            "claude-sonnet-4-6",
            "Sonnet 4.6",
            json!({"max_tokens": 32000, "thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}),
        );
        let haiku = profile(
            "claude-haiku-4-5",
            "Haiku 4.5",
            json!({"max_tokens": 32000, "thinking": {"budget_tokens": 31999, "type": "enabled"}}),
        );
        into.models.extend(haiku.models.clone());
        assert!(absorb_model(&mut into, "claude-sonnet-4-6", &haiku, "claude-haiku-4-5"));
        assert_eq!(
            Value::Object(into.model_params.clone()),
            json!({"claude-haiku-4-5": {"thinking": {"budget_tokens": 31999, "type": "enabled"}, "output_config": null}})
        );
        assert_eq!(
            into.tools[0]["description"],
            "end with:\nCo-Authored-By: Claude {{model_name}} <noreply@anthropic.com>"
        );
        // The same model teaches nothing.
        let before = into.model_params.clone();
        let same = into.clone();
        assert!(!absorb_model(&mut into, "claude-sonnet-4-6", &same, "claude-sonnet-4-6"));
        assert_eq!(into.model_params, before);
    }

    #[test]
    fn tools_that_differ_otherwise_are_left_alone() {
        let mut into = profile("a", "A 1", json!({}));
        let mut other = profile("b", "B 1", json!({}));
        other.tools[0]["name"] = json!("Shell");
        into.models.extend(other.models.clone());
        assert!(!absorb_model(&mut into, "a", &other, "b"));
        assert_eq!(into.tools[0]["description"], "end with:\nCo-Authored-By: Claude A 1 <noreply@anthropic.com>");
        assert!(into.model_params.is_empty());
    }
}
