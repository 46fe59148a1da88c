//! The typed model: entries, content blocks, assistant messages, the
//! conversation tree, and sessions (a main file plus its subagent files).

pub mod content;
pub mod entry;
pub mod messages;
pub mod tree;
