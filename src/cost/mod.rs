//! `ctxasm cost`: what each request cost (recorded usage), what a prompt
//! cache simulator predicts from the assembled requests, and what a change
//! would do to the bill.

pub mod format;
pub mod html;
pub mod modeled;
pub mod pricing;
pub mod report;
pub mod sim;
pub mod tokens;
pub mod usage;
