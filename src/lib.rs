//! ctxasm rebuilds, from Claude Code session transcripts, the Anthropic
//! Messages API request of every turn.
//!
//! Data flows one way: [`input`] (discover files, read them, split lines,
//! parse each into a per-file arena) → [`model`] (typed entries,
//! assistant messages, the conversation tree, sessions) → outputs such as
//! [`stats`].
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]
#![deny(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]
#![warn(unreachable_pub)]

pub mod assemble;
pub mod baseline;
#[cfg(feature = "net")]
pub mod bucket;
pub mod corpus;
pub mod cost;
pub mod diag;
pub mod env;
pub mod input;
pub mod json;
#[cfg(feature = "net")]
pub mod mock;
pub mod model;
#[cfg(feature = "net")]
pub mod probe;
pub mod profile;
#[cfg(feature = "net")]
pub mod send;
pub mod stats;
pub mod time;
pub mod verify;
pub mod write;
