//! `ctxasm cost`: what each request cost (recorded usage), what a prompt
//! cache simulator predicts from the assembled requests, and what a change
//! would do to the bill; the reports of a corpus's shards merged into one
//! (`merge`).
//!
//! The parts, each using only those before it: `tokens` (a request's token
//! counts), `pricing` (prices, minimum cacheable lengths and the model-id
//! normalization, as data), `sim` (the cache simulator), `usage` (recorded
//! usage, counted once), `modeled` (the corpus replayed through the
//! simulator), `format` (numbers and money as printed), then the outputs
//! `report` (terminal tables) and `html` (the page). The library builds
//! values and strings; printing and writing files is the CLI's.

pub mod format;
pub mod html;
pub mod merge;
pub mod modeled;
pub mod pricing;
pub mod report;
pub mod sim;
pub mod tokens;
pub mod usage;
