//! The first JSON path where two `serde_json` values differ
//! (`$.messages[3].content`), for messages that name a difference.

use serde_json::Value;

/// The first JSON path where `got` differs from `expected`.
pub fn first_difference(expected: &Value, got: &Value, path: &mut String) -> Option<(String, Value, Value)> {
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                let d = match b.get(k) {
                    Some(vb) => first_difference(va, vb, path),
                    None => Some((path.clone(), va.clone(), Value::Null)),
                };
                if d.is_some() {
                    return d;
                }
                path.truncate(len);
            }
            b.iter().find(|(k, _)| !a.contains_key(*k)).map(|(k, vb)| (format!("{path}.{k}"), Value::Null, vb.clone()))
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                if let Some(d) = first_difference(va, vb, path) {
                    return Some(d);
                }
                path.truncate(len);
            }
            (a.len() != b.len()).then(|| (format!("{path}.length"), Value::from(a.len()), Value::from(b.len())))
        }
        _ => (expected != got).then(|| (path.clone(), expected.clone(), got.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn first_difference_names_the_path() {
        let a = json!({"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant"}]});
        let b = json!({"model":"m","messages":[{"role":"user","content":"b"},{"role":"assistant"}]});
        let d = first_difference(&a, &b, &mut "$".to_string()).unwrap();
        assert_eq!(d, ("$.messages[0].content".to_string(), json!("a"), json!("b")));
        let c = json!({"model":"m","messages":[{"role":"user","content":"a"}]});
        let d = first_difference(&a, &c, &mut "$".to_string()).unwrap();
        assert_eq!(d.0, "$.messages.length");
        assert!(first_difference(&a, &a.clone(), &mut "$".to_string()).is_none());
    }
}
