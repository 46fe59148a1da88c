//! The assembled request: a [`Body`] of arena values in the client's key
//! order, and the [`Request`] that names where it came from. Serializing it
//! is [`crate::write`]'s.

use crate::json::Json;

/// A request body: `model, messages`, the lead params, `system, tools,
/// metadata`, the other recorded params in their order, then `stream`.
#[derive(Debug, Clone)]
pub struct Body<'a> {
    pub model: Json<'a>,
    pub messages: Vec<&'a Json<'a>>,
    /// Params sent between `messages` and `system` (1.0.x: `temperature`;
    /// empty for every later release).
    pub lead_params: Vec<(&'a str, Json<'a>)>,
    pub system: Vec<&'a Json<'a>>,
    /// Per system block: a key naming its exact bytes (shape hash, index,
    /// cache control), so they are serialized once; `None` = serialize.
    pub system_keys: Vec<Option<u128>>,
    pub tools: Option<&'a Json<'a>>,
    /// The same for the tool list.
    pub tools_key: Option<u128>,
    pub metadata: Json<'a>,
    /// Recorded params other than `model` and `betas`, in recorded order.
    pub params: Vec<(&'a str, Json<'a>)>,
    pub stream: bool,
    /// `anthropic-beta` header values (not part of the body).
    pub betas: Vec<&'a str>,
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
            messages,
            lead_params: Vec::new(),
            system: Vec::new(),
            system_keys: Vec::new(),
            tools: None,
            tools_key: None,
            metadata: Json::Null,
            params: Vec::new(),
            stream: true,
            cch_seed: None,
            betas: Vec::new(),
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
