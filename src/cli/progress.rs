//! Progress bars on stderr, drawn only when stderr is a terminal and the
//! run is long enough to want one. The library reports progress through
//! callbacks (`RunOptions::progress`); the bars are the binary's.

use ctxasm::input::discover::Discovery;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bytes-read bar for a corpus of ≥ 500 files or ≥ 256 MB.
pub fn reading(disc: &Discovery) -> Option<ProgressBar> {
    let long = disc.files.len() >= 500 || disc.total_bytes() >= 256 << 20;
    if !long || !std::io::stderr().is_terminal() {
        return None;
    }
    Some(styled(disc.total_bytes(), "{spinner} reading {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec} eta {eta}"))
}

/// A requests-finished bar for send (the cli-side copy of
/// `ctxasm::send::report::progress_bar`, which `send::send` still draws
/// itself until the library takes a progress callback instead).
#[cfg(feature = "net")]
#[allow(dead_code)]
pub fn requests(total: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() || total == 0 {
        return None;
    }
    Some(styled(total, "{spinner} [{wide_bar}] {pos}/{len} {msg} {per_sec} eta {eta}"))
}

fn styled(total: u64, template: &str) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// The callback that advances `bar` (a no-op without one).
pub fn ticker(bar: &Option<ProgressBar>) -> impl Fn(u64) + Sync + '_ {
    move |bytes| {
        if let Some(b) = bar {
            b.inc(bytes);
        }
    }
}

/// Clear the bar before the report is printed.
pub fn finish(bar: &Option<ProgressBar>) {
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}
