//! The HTML report of `ctxasm cost --html`: one self-contained HTML5 page.
//!
//! Nothing is loaded from anywhere: the CSS is inline, the charts are inline
//! `<svg>` drawn here, there is no script, and a `Content-Security-Policy`
//! meta tag forbids every fetch. Every string from the data (session ids,
//! projects, models, what-if names, diagnostics) is HTML-escaped.
//!
//! Sections: summary (recorded against modeled, accuracy, estimator,
//! pricing, account), the cache hit ratio per turn of up to
//! [`MAX_PANELS`] sessions, the cost of the [`MAX_BARS`] most expensive
//! sessions, the cost by category, the what-ifs, every session, the
//! diagnostics.
//!
//! The page is a pure function of the report (same report, same bytes).
//! Coordinates are written with one decimal and never non-finite; a series
//! longer than [`MAX_POINTS`] is sampled at evenly spaced requests.
//!
//! The parts: `page` (head and summary), `chart` (what the charts share),
//! `hit_ratio`, `cost_bars`, `what_if` (one per chart), `tables` (sessions,
//! diagnostics), `text` (escaping, coordinates). Numbers and money come
//! from `cost::format`. Builds a `String`; writing it is the caller's.

use super::modeled::CostReport;
use super::tokens::TokenCounts;
use super::usage::Totals;

/// Sessions in the hit-ratio chart (those with the most requests).
pub const MAX_PANELS: usize = 12;
/// Points per series in the hit-ratio chart.
pub const MAX_POINTS: usize = 2000;
/// Sessions in the cost-by-session chart (by modeled cost).
pub const MAX_BARS: usize = 20;
/// Diagnostics listed (the rest are counted).
const MAX_DIAGNOSTICS: usize = 200;

const REC: &str = "#d9772b";
const MODL: &str = "#2f6db3";
const BASE: &str = "#7a7a7a";
const CHEAPER: &str = "#2e8b57";
const DEARER: &str = "#c0392b";

/// Width of every chart.
const W: f64 = 920.0;

/// `write!` into a `String`, which cannot fail. Defined before the `mod`
/// lines: a `macro_rules!` is only visible to the modules declared after it.
macro_rules! w {
    ($o:expr, $($arg:tt)*) => {
        let _ = write!($o, $($arg)*);
    };
}

mod chart;
mod cost_bars;
mod hit_ratio;
mod page;
mod tables;
mod text;
mod what_if;

pub use text::escape;
pub use what_if::what_if_label;

/// One self-contained page.
pub fn render(r: &CostReport) -> String {
    let mut o = String::with_capacity(32 * 1024 + r.sessions.len() * 400 + r.turns.len().min(50_000) * 24);
    page::head(&mut o);
    page::headline(&mut o, r);
    page::summary(&mut o, r);
    hit_ratio::hit_ratio_chart(&mut o, r);
    cost_bars::cost_by_session_chart(&mut o, r);
    cost_bars::category_chart(&mut o, r);
    what_if::what_if_section(&mut o, r);
    tables::sessions_table(&mut o, r);
    tables::diagnostics(&mut o, r);
    o.push_str("</main>\n</body>\n</html>\n");
    o
}

/// `a / b`, `None` when `b` is 0.
fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

fn hit(t: &TokenCounts) -> Option<f64> {
    ratio(t.cache_read, t.total_input())
}

fn totals_hit(t: &Totals) -> Option<f64> {
    ratio(t.cache_read_input_tokens, t.input_tokens + t.cache_creation_input_tokens + t.cache_read_input_tokens)
}

fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}
