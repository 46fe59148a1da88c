//! The one tokio runtime builder of the binary. Only the network commands
//! start a runtime; everything else is rayon and blocking I/O.

use anyhow::Context;

/// Which runtime a command runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavour {
    /// send and batch: one thread is plenty for network I/O at API rates
    /// (the journal has its own thread), and a paced sender on a
    /// multi-threaded runtime spends its CPU waking idle workers (measured
    /// by scripts/bench-compare: 0.6 s → 0.3 s per 1,000 requests at
    /// 6,000/min).
    CurrentThread,
    /// mock-server: it stands in for a server under load from many clients.
    MultiThread,
}

/// A runtime with I/O and time enabled.
pub fn build(flavour: Flavour) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = match flavour {
        Flavour::CurrentThread => tokio::runtime::Builder::new_current_thread(),
        Flavour::MultiThread => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().context("cannot start the async runtime")
}
