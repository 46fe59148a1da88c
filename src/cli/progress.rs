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

/// `send`'s requests-finished bar: the library reports through
/// [`ctxasm::send::report::Progress`], this draws it (only when stderr is a
/// terminal).
#[cfg(feature = "net")]
#[derive(Default)]
pub struct SendBar(std::sync::OnceLock<ProgressBar>);

#[cfg(feature = "net")]
impl ctxasm::send::report::Progress for SendBar {
    fn start(&self, total: u64) -> bool {
        if !std::io::stderr().is_terminal() || total == 0 {
            return false;
        }
        // `{per_sec:1}`: indicatif reads the width as the number of
        // decimals (`4.9/s`, not `4.9168/s`).
        self.0.set(styled(total, "{spinner} [{wide_bar}] {pos}/{len} {msg} {per_sec:1} eta {eta}")).is_ok()
    }
    fn update(&self, finished: u64, counters: &ctxasm::send::report::Counters) {
        if let Some(bar) = self.0.get() {
            bar.set_position(finished);
            bar.set_message(ctxasm::send::report::progress_message(counters));
        }
    }
    fn finish(&self) {
        if let Some(bar) = self.0.get() {
            bar.finish_and_clear();
        }
    }
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
