//! The reports of `ctxasm cost`: terminal tables and the HTML page.
//!
//! Returns strings (the CLI prints them); the formatting of numbers is
//! `cost::format`'s, the page is `cost::html`'s.

use super::format::{plain_pct, plain_signed_pct, plain_signed_usd};
use super::modeled::{Accuracy, CostReport};
use super::usage::{RecordedReport, Totals};
use std::fmt::Write as _;

/// `cost --recorded-only`: the recorded totals.
pub fn recorded_table(report: &RecordedReport) -> String {
    let t = &report.totals;
    let mut o = String::new();
    let _ = writeln!(o, "{:<28}{:>16}", "requests", t.requests);
    let _ = writeln!(o, "{:<28}{:>16}", "input tokens", t.input_tokens);
    let _ = writeln!(o, "{:<28}{:>16}", "cache write tokens", t.cache_creation_input_tokens);
    let _ = writeln!(o, "{:<28}{:>16}", "cache read tokens", t.cache_read_input_tokens);
    let _ = writeln!(o, "{:<28}{:>16}", "output tokens", t.output_tokens);
    let _ = writeln!(o, "{:<28}{:>16.4}", "cost (USD)", t.cost_usd);
    let _ = writeln!(o, "{:<28}{:>16}", "unpriced requests", report.unpriced_requests);
    let _ = writeln!(o, "prices: {} ({})", report.pricing.source, report.pricing.date);
    o
}

/// `cost`: recorded against modeled, accuracy, estimator, what-ifs.
pub fn table(r: &CostReport) -> String {
    let mut o = String::new();
    let row = |o: &mut String, name: &str, f: &dyn Fn(&Totals) -> String| {
        let _ = writeln!(o, "{:<22}{:>18}{:>18}", name, f(&r.recorded), f(&r.modeled));
    };
    let _ = writeln!(o, "{:<22}{:>18}{:>18}", "", "recorded", "modeled");
    row(&mut o, "requests", &|t| t.requests.to_string());
    row(&mut o, "input tokens", &|t| t.input_tokens.to_string());
    row(&mut o, "cache write tokens", &|t| t.cache_creation_input_tokens.to_string());
    row(&mut o, "cache read tokens", &|t| t.cache_read_input_tokens.to_string());
    row(&mut o, "output tokens", &|t| t.output_tokens.to_string());
    row(&mut o, "cost (USD)", &|t| format!("{:.4}", t.cost_usd));
    accuracy_lines(&mut o, &r.accuracy);
    let e = &r.estimator;
    let bpt: Vec<String> = e
        .bytes_per_token
        .iter()
        .filter(|(k, _)| **k != "image")
        .map(|(k, v)| if v.is_finite() { format!("{k} {v:.2}") } else { format!("{k} -") })
        .collect();
    let _ = writeln!(
        o,
        "estimator: {} samples, bytes/token {}; error median {} p90 {}; {} blocks pinned to usage, {} estimated",
        e.samples,
        bpt.join(", "),
        plain_pct(e.median_relative_error),
        plain_pct(e.p90_relative_error),
        e.blocks_pinned,
        e.blocks_estimated
    );
    if !r.what_if.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(o, "{:<32}{:>14}{:>14}{:>10}", "what-if", "modeled USD", "delta USD", "delta");
        let _ = writeln!(o, "{:<32}{:>14.4}", "(baseline)", r.modeled.cost_usd);
        for w in &r.what_if {
            let _ = writeln!(
                o,
                "{:<32}{:>14.4}{:>14}{:>10}",
                w.what_if,
                w.modeled.cost_usd,
                plain_signed_usd(w.delta_usd),
                plain_signed_pct(w.delta_pct)
            );
        }
    }
    let _ = writeln!(o, "sessions share a cache per {}; prices: {} ({})", r.account, r.pricing.source, r.pricing.date);
    o
}

/// The accuracy lines of [`table`].
fn accuracy_lines(o: &mut String, a: &Accuracy) {
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "accuracy on {} requests with recorded usage ({} without):",
        a.requests_compared, a.requests_without_usage
    );
    let _ = writeln!(
        o,
        "  cost                {:.4} recorded, {:.4} modeled: {:+.2}% (target ±2%: {})",
        a.recorded_cost_usd,
        a.modeled_cost_usd,
        a.cost_error_pct,
        if a.cost_within_2pct { "met" } else { "missed" }
    );
    let _ = writeln!(
        o,
        "  cache read error    median {} p90 {} of recorded ({} requests read), median {:.0} p90 {:.0} tokens (target median ≤5%: {})",
        plain_pct(a.cache_read.median_relative),
        plain_pct(a.cache_read.p90_relative),
        a.cache_read.relative_over,
        a.cache_read.median_abs_tokens,
        a.cache_read.p90_abs_tokens,
        if a.median_read_error_within_5pct { "met" } else { "missed" }
    );
    let _ = writeln!(
        o,
        "  cache write error   median {} p90 {} of recorded, median {:.0} p90 {:.0} tokens",
        plain_pct(a.cache_write.median_relative),
        plain_pct(a.cache_write.p90_relative),
        a.cache_write.median_abs_tokens,
        a.cache_write.p90_abs_tokens
    );
    let h = &a.hits;
    let _ = writeln!(
        o,
        "  cache hit agreement {} both, {} recorded only, {} modeled only, {} neither",
        h.both, h.recorded_only, h.modeled_only, h.neither
    );
}

/// The self-contained HTML report.
pub fn html(r: &CostReport) -> String {
    super::html::render(r)
}
