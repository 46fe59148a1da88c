//! The assembled request: a [`Body`] of arena values in the client's key
//! order, and the [`Request`] that names where it came from. Serializing it
//! is [`crate::write`]'s.

use crate::json::Json;
use std::borrow::Cow;

/// A request body: `model, messages`, the lead params, `system, tools,
/// metadata`, the other recorded params in their order, then `stream`.
///
/// Its lists are borrowed where a session's requests share them (the
/// pipeline keeps one copy per chain while they stay the same: a session
/// of thousands of turns does not hold thousands of equal lists).
#[derive(Debug, Clone)]
pub struct Body<'a> {
    pub model: Json<'a>,
    pub messages: Messages<'a>,
    /// How many leading messages are the same nodes as those of the request
    /// just before this one in its session's list (0 when unknown): a
    /// reader walking the requests in order handles only the rest (the
    /// dedup writer, the validity check), so a session of N turns costs N,
    /// not N².
    pub shared: usize,
    /// Params sent between `messages` and `system` (1.0.x: `temperature`;
    /// empty for every later release).
    pub lead_params: Cow<'a, [(&'a str, Json<'a>)]>,
    pub system: Cow<'a, [&'a Json<'a>]>,
    /// Per system block: a key naming its exact bytes (shape hash, index,
    /// cache control), so they are serialized once; `None` = serialize.
    pub system_keys: Cow<'a, [Option<u128>]>,
    pub tools: Option<&'a Json<'a>>,
    /// The same for the tool list.
    pub tools_key: Option<u128>,
    pub metadata: Json<'a>,
    /// Recorded params other than `model` and `betas`, in recorded order.
    pub params: Cow<'a, [(&'a str, Json<'a>)]>,
    pub stream: bool,
    /// `anthropic-beta` header values (not part of the body).
    pub betas: Cow<'a, [&'a str]>,
    /// The native client's attestation seed (`billing.cch_seed`): the
    /// writer replaces the billing block's `cch=00000` with the attested
    /// value of the written bytes ([`crate::assemble::wire::attest`]).
    pub cch_seed: Option<u64>,
}

impl<'a> Body<'a> {
    /// A body of just these messages (no system, tools or params).
    pub fn from_messages(messages: Vec<&'a Json<'a>>) -> Self {
        Body {
            model: Json::Null,
            messages: messages.into(),
            shared: 0,
            lead_params: Cow::Borrowed(&[]),
            system: Cow::Borrowed(&[]),
            system_keys: Cow::Borrowed(&[]),
            tools: None,
            tools_key: None,
            metadata: Json::Null,
            params: Cow::Borrowed(&[]),
            stream: true,
            cch_seed: None,
            betas: Cow::Borrowed(&[]),
        }
    }
}

/// A request's messages: one list, or (built turn after turn) the parts of
/// a list shared with the chain's earlier requests, so that each request
/// holds O(log n) parts rather than its n messages.
#[derive(Debug, Clone)]
pub enum Messages<'a> {
    Flat(Vec<&'a Json<'a>>),
    /// Consecutive parts and their total length.
    Parts(&'a [&'a [&'a Json<'a>]], usize),
}

impl Default for Messages<'_> {
    fn default() -> Self {
        Messages::Flat(Vec::new())
    }
}

impl<'a> From<Vec<&'a Json<'a>>> for Messages<'a> {
    fn from(v: Vec<&'a Json<'a>>) -> Self {
        Messages::Flat(v)
    }
}

impl<'a> Messages<'a> {
    pub fn len(&self) -> usize {
        match self {
            Messages::Flat(v) => v.len(),
            Messages::Parts(_, n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every message in order.
    pub fn iter(&self) -> MessagesIter<'a, '_> {
        self.iter_from(0)
    }

    /// The messages from index `k` on.
    pub fn iter_from(&self, mut k: usize) -> MessagesIter<'a, '_> {
        let mut parts = match self {
            Messages::Flat(v) => return MessagesIter { cur: v.get(k..).unwrap_or(&[]).iter(), rest: &[] },
            Messages::Parts(p, _) => *p,
        };
        while let Some((first, rest)) = parts.split_first() {
            if k < first.len() {
                return MessagesIter { cur: first[k..].iter(), rest };
            }
            k -= first.len();
            parts = rest;
        }
        MessagesIter { cur: [].iter(), rest: &[] }
    }

    pub fn get(&self, i: usize) -> Option<&'a Json<'a>> {
        self.iter_from(i).next()
    }

    pub fn first(&self) -> Option<&'a Json<'a>> {
        self.get(0)
    }

    pub fn last(&self) -> Option<&'a Json<'a>> {
        match self {
            Messages::Flat(v) => v.last().copied(),
            Messages::Parts(p, _) => p.iter().rev().find_map(|p| p.last().copied()),
        }
    }

    pub fn to_vec(&self) -> Vec<&'a Json<'a>> {
        self.iter().collect()
    }
}

impl<'a> FromIterator<&'a Json<'a>> for Messages<'a> {
    fn from_iter<I: IntoIterator<Item = &'a Json<'a>>>(it: I) -> Self {
        Messages::Flat(it.into_iter().collect())
    }
}

impl<'a, 's> IntoIterator for &'s Messages<'a> {
    type Item = &'a Json<'a>;
    type IntoIter = MessagesIter<'a, 's>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The iterator of [`Messages::iter`].
pub struct MessagesIter<'a, 's> {
    cur: std::slice::Iter<'s, &'a Json<'a>>,
    rest: &'s [&'a [&'a Json<'a>]],
}

impl<'a> Iterator for MessagesIter<'a, '_> {
    type Item = &'a Json<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(m) = self.cur.next() {
                return Some(m);
            }
            let (first, rest) = self.rest.split_first()?;
            self.cur = first.iter();
            self.rest = rest;
        }
    }
}

/// One assembled request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `<sessionId>_<n>` or `<sessionId>_<agentId>_<n>` (Message Batches API id).
    pub custom_id: String,
    pub session_id: &'a str,
    pub agent_id: Option<&'a str>,
    /// 0-based index in its chain.
    pub index: usize,
    /// Where it was recorded.
    pub file: &'a str,
    pub line: u32,
    pub timestamp: Option<&'a str>,
    pub body: Body<'a>,
}
