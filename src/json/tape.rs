//! Reading simd-json's tape without building a [`Json`] tree: for callers
//! that need a few fields of a line and nothing else (the lean read of
//! `input::scan`). Lookups follow [`Json`]'s: the first member of a key,
//! numbers converted by the same rules.

use super::Json;
use simd_json::{Node, StaticNode};

/// One value on a tape: its node and the nodes of its children after it.
#[derive(Debug, Clone, Copy)]
pub struct TapeValue<'t, 'i> {
    nodes: &'t [Node<'i>],
}

/// Nodes a value takes on the tape, its own included.
pub(super) fn span(node: &Node<'_>) -> usize {
    match node {
        Node::Object { count, .. } | Node::Array { count, .. } => count + 1,
        _ => 1,
    }
}

impl<'t, 'i> TapeValue<'t, 'i> {
    /// The value whose node is the first of `nodes` (`None` for no node).
    pub fn root(nodes: &'t [Node<'i>]) -> Option<Self> {
        nodes.first().map(|n| TapeValue { nodes: &nodes[..span(n).min(nodes.len())] })
    }

    /// The member `key` of an object (first occurrence), as [`Json::get`].
    pub fn get(&self, key: &str) -> Option<TapeValue<'t, 'i>> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The members of an object in order (none for anything else), as
    /// [`Json::as_object`] lists them.
    pub fn members(&self) -> impl Iterator<Item = (&'i str, TapeValue<'t, 'i>)> + use<'t, 'i> {
        let nodes = self.nodes;
        let len = match nodes.first() {
            Some(&Node::Object { len, .. }) => len,
            _ => 0,
        };
        let mut i = 1;
        (0..len).map_while(move |_| {
            let k = match nodes.get(i) {
                Some(Node::String(k)) => *k,
                _ => "",
            };
            let n = span(nodes.get(i + 1)?);
            let v = TapeValue { nodes: nodes.get(i + 1..i + 1 + n)? };
            i += 1 + n;
            Some((k, v))
        })
    }

    /// The value without its children: scalars as they are, arrays and
    /// objects as empty ones (enough to tell a value's kind).
    pub fn shallow(&self) -> Json<'i> {
        match self.nodes.first() {
            Some(Node::String(s)) => Json::Str(s),
            Some(Node::Static(s)) => super::scalar(*s),
            Some(Node::Array { .. }) => Json::Arr(&[]),
            Some(Node::Object { .. }) => Json::Obj(&[]),
            None => Json::Null,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self.nodes.first(), Some(Node::Object { .. }))
    }

    /// As [`Json::as_str`].
    pub fn as_str(&self) -> Option<&'i str> {
        match self.nodes.first() {
            Some(Node::String(s)) => Some(s),
            _ => None,
        }
    }

    /// As [`Json::as_u64`].
    pub fn as_u64(&self) -> Option<u64> {
        self.shallow().as_u64()
    }

    /// A boolean; `None` for anything else.
    pub fn as_bool(&self) -> Option<bool> {
        match self.nodes.first() {
            Some(Node::Static(StaticNode::Bool(b))) => Some(*b),
            _ => None,
        }
    }

    /// As [`Json::get_str`].
    pub fn get_str(&self, key: &str) -> Option<&'i str> {
        self.get(key).and_then(|v| v.as_str())
    }

    /// True when `v` is the tree this value would become: the same
    /// members in the same order, the same items, equal scalars.
    pub fn equals(&self, v: &Json<'_>) -> bool {
        match (self.nodes.first(), v) {
            (Some(Node::String(s)), Json::Str(t)) => s == t,
            (Some(Node::Static(s)), _) => super::scalar(*s) == *v,
            (Some(&Node::Array { len, .. }), Json::Arr(items)) => {
                len == items.len() && self.items().zip(items.iter()).all(|(a, b)| a.equals(b))
            }
            (Some(&Node::Object { len, .. }), Json::Obj(members)) => {
                len == members.len()
                    && self.members().zip(members.iter()).all(|((k, a), (l, b))| k == *l && a.equals(b))
            }
            _ => false,
        }
    }

    /// The items of an array in order (none for anything else).
    fn items(&self) -> impl Iterator<Item = TapeValue<'t, 'i>> + use<'t, 'i> {
        let nodes = self.nodes;
        let len = match nodes.first() {
            Some(&Node::Array { len, .. }) => len,
            _ => 0,
        };
        let mut i = 1;
        (0..len).map_while(move |_| {
            let n = span(nodes.get(i)?);
            let v = TapeValue { nodes: nodes.get(i..i + n)? };
            i += n;
            Some(v)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::LineParser;
    use bumpalo::Bump;

    #[test]
    fn lookups_agree_with_the_tree() {
        let line =
            br#"{"a":{"x":[1,{"y":2}],"x":3,"s":"t\"u"},"n":-1,"f":2.0,"g":1.5,"b":true,"a":null,"e":{},"z":[]}"#;
        let bump = Bump::new();
        let mut p = LineParser::new();
        let tree = p.parse(&bump, line).unwrap();
        p.with_tape(line, |root| {
            assert!(root.is_object());
            let a = root.get("a").unwrap();
            assert_eq!(a.get("x").unwrap().shallow(), super::Json::Arr(&[]));
            assert_eq!(a.get_str("s"), tree.get("a").unwrap().get_str("s"));
            for k in ["n", "f", "g", "b", "e", "z", "missing"] {
                assert_eq!(root.get(k).map(|v| v.as_u64()), tree.get(k).map(|v| v.as_u64()), "{k}");
                assert_eq!(root.get(k).and_then(|v| v.as_bool()), tree.get_bool(k), "{k}");
            }
            assert_eq!(root.get("e").unwrap().get("x").map(|v| v.shallow()), None);
            let keys: Vec<&str> = root.members().map(|(k, _)| k).collect();
            assert_eq!(keys, ["a", "n", "f", "g", "b", "a", "e", "z"]);
            assert_eq!(root.get("n").unwrap().members().count(), 0);
            assert!(root.get("n").unwrap().get("x").is_none());
        })
        .unwrap();
        assert!(p.with_tape(b"{\"a\":", |_| ()).is_none());
        assert!(p.with_tape(br#"{"n":1e400}"#, |_| ()).is_none());
        assert_eq!(p.with_tape(b"[1]", |r| r.shallow().as_array().map(<[_]>::len)).unwrap(), Some(0));
    }
}
