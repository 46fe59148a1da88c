//! Grouping assistant lines into API messages.
//!
//! Claude Code writes one transcript line per content block of a streamed
//! message; the lines of one message share `message.id` (and `requestId`).

use super::entry::Entry;
use smallvec::SmallVec;
use std::collections::HashMap;

/// The lines of one assistant message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssistantMessage<'a> {
    /// `message.id`; `None` for a line without one (its own message).
    pub id: Option<&'a str>,
    /// Entry indices in file order.
    pub entries: SmallVec<[u32; 4]>,
}

/// Group the assistant entries of a file by `message.id`, in order of first
/// appearance.
pub fn assistant_messages<'a>(entries: &[Entry<'a>]) -> Vec<AssistantMessage<'a>> {
    let mut out: Vec<AssistantMessage<'a>> = Vec::new();
    let mut by_id: HashMap<&'a str, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(a) = e.as_assistant() else { continue };
        match a.message_id {
            Some(id) => match by_id.get(id) {
                Some(&g) => out[g].entries.push(i as u32),
                None => {
                    by_id.insert(id, out.len());
                    out.push(AssistantMessage { id: Some(id), entries: SmallVec::from_slice(&[i as u32]) });
                }
            },
            None => out.push(AssistantMessage { id: None, entries: SmallVec::from_slice(&[i as u32]) }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{ReadOptions, parse_bytes};
    use bumpalo::Bump;

    #[test]
    fn fragments_share_message_id() {
        let data =
            br#"{"type":"assistant","uuid":"1","message":{"id":"m1","content":[{"type":"thinking","thinking":""}]}}
{"type":"assistant","uuid":"2","message":{"id":"m1","content":[{"type":"text","text":"a"}]}}
{"type":"user","uuid":"3","message":{"content":"x"}}
{"type":"assistant","uuid":"4","message":{"content":[]}}
{"type":"assistant","uuid":"5","message":{"id":"m1","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}}
{"type":"assistant","uuid":"6","message":{"id":"m2","content":[]}}
"#;
        let bump = Bump::new();
        let p = parse_bytes(&bump, data, "m.jsonl", &ReadOptions::default());
        let m = assistant_messages(&p.entries);
        let got: Vec<(Option<&str>, Vec<u32>)> = m.iter().map(|g| (g.id, g.entries.to_vec())).collect();
        assert_eq!(got, vec![(Some("m1"), vec![0, 1, 4]), (None, vec![3]), (Some("m2"), vec![5])]);
    }
}
