//! The human text of the commands that the library does not already
//! render: assemble's summary, verify's table. Returns strings or prints to
//! stderr; decides no exit status.

use ctxasm::verify::VerifyReport;
use ctxasm::write::AssembleSummary;
use std::fmt::Write as _;

/// assemble's summary on stderr: the first 20 diagnostics, the totals, and
/// the pipeline's repairs when any session went through it.
pub fn assemble_summary(summary: &AssembleSummary, secs: f64, dedup: bool) {
    for d in summary.diagnostics.iter().take(20) {
        eprintln!("ctxasm: {d}");
    }
    if summary.diagnostics.len() > 20 {
        eprintln!("ctxasm: … {} more diagnostics (--json lists all)", summary.diagnostics.len() - 20);
    }
    let ratio = if summary.batch_bytes > 0 { summary.bytes_written as f64 / summary.batch_bytes as f64 } else { 0.0 };
    let by_records = summary.sessions.saturating_sub(summary.pipeline_sessions);
    eprintln!(
        "ctxasm: {} ({} replayed from records, {} built by the pipeline), {} written; {:.1} MB written ({:.1}% of the batch format's {:.1} MB){}; {:.2} s, {:.0} MB/s",
        count(summary.sessions, "session"),
        by_records,
        summary.pipeline_sessions,
        count(summary.requests_written, "request"),
        summary.bytes_written as f64 / 1e6,
        ratio * 100.0,
        summary.batch_bytes as f64 / 1e6,
        if dedup { format!(", {} segments", summary.segments) } else { String::new() },
        secs,
        summary.bytes_written as f64 / 1e6 / secs.max(1e-9),
    );
    if summary.pipeline_sessions > 0 {
        let p = &summary.pipeline;
        eprintln!(
            "ctxasm: pipeline: {} sessions, {} turns; {} requests repaired ({} synthetic tool results, {} tool results dropped, {} user messages put first, {} media stripped); {} thinking-only and {} blank assistant messages dropped; {} attachments rendered by ctxasm",
            summary.pipeline_sessions,
            p.turns,
            p.requests_repaired,
            p.pairing.synthetic_results,
            p.pairing.dropped_results,
            p.leading_user_inserted,
            p.media_stripped,
            p.thinking_only_dropped,
            p.empty_assistant_dropped,
            p.approximated_attachments
        );
    }
}

/// `1 session`, `2 sessions`.
pub fn count(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// verify's table: counts, every mismatch, the verdict.
pub fn verify_table(report: &VerifyReport, with_wire: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "sessions          {:>8}", report.sessions);
    let _ = writeln!(o, "requests          {:>8}", report.requests);
    let _ = writeln!(o, "messages hashed   {:>8}   matching {}", report.messages_hashed, report.hash_matches);
    if with_wire {
        let _ = writeln!(
            o,
            "wire compared     {:>8}   byte-equal {}   JSON-equal {}",
            report.wire_compared, report.wire_byte_equal, report.wire_json_equal
        );
        let _ = writeln!(
            o,
            "wire requests     {:>8}   unmatched {}   side calls {} (held by no transcript, not rebuilt)",
            report.wire_requests, report.wire_unmatched, report.wire_side_calls
        );
    }
    if report.approximated_profiles > 0 {
        let _ = writeln!(
            o,
            "approximated      {:>8}   sessions built without a profile of their own release (`ctxasm profile capture VERSION` makes one)",
            report.approximated_profiles
        );
    }
    if report.approximated_mcp > 0 {
        let _ = writeln!(
            o,
            "approximated MCP  {:>8}   sessions calling MCP tools their environment's env/mcp.json or profile does not describe",
            report.approximated_mcp
        );
    }
    for m in &report.mismatches {
        let _ = writeln!(o, "{} {}:{}: {}", m.kind, m.file, m.line, m.message);
        if let Some(p) = &m.path {
            let show = |v: &Option<serde_json::Value>| {
                v.as_ref().map(|v| ctxasm::diag::clip(&v.to_string(), 200)).unwrap_or_default()
            };
            let _ = writeln!(o, "  at {p}: expected {} got {}", show(&m.expected), show(&m.got));
        }
    }
    let verdict = if report.clean() {
        "verify: clean"
    } else if report.mismatches.is_empty() && report.with_wire && report.wire_compared == 0 {
        "verify: NOT PROVEN (no captured request was compared)"
    } else {
        "verify: MISMATCH"
    };
    let _ = writeln!(o, "{verdict}");
    o
}

/// `profile list`'s table (rows as `profile list --json` writes them).
pub fn profile_list(dir: &std::path::Path, rows: &[serde_json::Value]) -> String {
    if rows.is_empty() {
        return format!(
            "no cached profiles in {}\n`ctxasm profile capture VERSION` makes one (--profile auto uses it)\n",
            dir.display()
        );
    }
    let mut s =
        format!("{} cached profile{} in {}\n", rows.len(), if rows.len() == 1 { "" } else { "s" }, dir.display());
    s.push_str(&format!("{:<10} {:<12} {:>5}  models\n", "release", "layout", "tools"));
    for r in rows {
        let models: Vec<&str> =
            r["models"].as_array().map(|m| m.iter().filter_map(|x| x.as_str()).collect()).unwrap_or_default();
        s.push_str(&format!(
            "{:<10} {:<12} {:>5}  {}\n",
            r["version"].as_str().unwrap_or(""),
            r["layout"].as_str().unwrap_or(""),
            r["tools"].as_u64().unwrap_or(0),
            models.join(", ")
        ));
    }
    s
}
