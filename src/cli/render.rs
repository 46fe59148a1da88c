//! The human text of the commands that the library does not already
//! render: assemble's summary, verify's table. Returns strings or prints to
//! stderr; decides no exit status.

use ctxasm::diag::DiagKind;
use ctxasm::verify::VerifyReport;
use ctxasm::write::AssembleSummary;
use std::fmt::Write as _;

/// assemble's summary for stderr: the diagnostics (the first 20; the
/// `approximated_profile` ones are counted in the table instead), what was
/// written where, a row per Claude Code release (how its requests were
/// obtained, how many are proven), and the pipeline's repairs.
pub fn assemble_summary(summary: &AssembleSummary, secs: f64, dedup: bool, output: &std::path::Path) -> String {
    let mut o = diagnostics(&summary.diagnostics, 20);
    let to = if output.as_os_str() == "-" { "stdout".to_string() } else { output.display().to_string() };
    let what = if dedup {
        let ratio =
            if summary.batch_bytes > 0 { summary.bytes_written as f64 / summary.batch_bytes as f64 } else { 0.0 };
        format!(
            "{} (dedup: {}, {:.1}% of the batch format's {})",
            size(summary.bytes_written),
            count(summary.segments, "segment"),
            ratio * 100.0,
            size(summary.batch_bytes)
        )
    } else {
        size(summary.bytes_written)
    };
    let _ = writeln!(
        o,
        "ctxasm: {} of {} written to {to}, {what}, in {}",
        count(summary.requests_written, "request"),
        count(summary.sessions, "session"),
        duration(secs)
    );
    let _ = writeln!(
        o,
        "  {:<12} {:>8} {:>9} {:>13} {:>7}  profile",
        "Claude Code", "sessions", "requests", "from records", "proven"
    );
    let mut total = ctxasm::write::ReleaseRow::default();
    for r in &summary.releases {
        let profile = if r.approximated_sessions == 0 {
            if r.from_records == r.requests { "recorded" } else { "pipeline" }
        } else if r.approximated_sessions == r.sessions {
            "approximated"
        } else {
            "partly approximated"
        };
        let _ = writeln!(
            o,
            "  {:<12} {:>8} {:>9} {:>13} {:>7}  {profile}",
            r.release.as_deref().unwrap_or("(none)"),
            r.sessions,
            r.requests,
            r.from_records,
            r.proven
        );
        total.sessions += r.sessions;
        total.requests += r.requests;
        total.from_records += r.from_records;
        total.proven += r.proven;
        total.approximated_sessions += r.approximated_sessions;
    }
    if summary.releases.len() > 1 {
        let _ = writeln!(
            o,
            "  {:<12} {:>8} {:>9} {:>13} {:>7}",
            "total", total.sessions, total.requests, total.from_records, total.proven
        );
    }
    if total.proven > 0 {
        let _ = writeln!(
            o,
            "  proven: every message, the system prompt and the tools matched the SHA-256 the transcript recorded"
        );
    }
    if total.approximated_sessions > 0 {
        let releases = summary.releases.iter().filter(|r| r.approximated_sessions > 0).count() as u64;
        let _ = writeln!(
            o,
            "  approximated: {} ({}) built without a profile of {} own release (`ctxasm profile capture VERSION` \
             makes {} exact; `ctxasm profile list` shows what is cached)",
            count(total.approximated_sessions, "session"),
            count(releases, "release"),
            if total.approximated_sessions == 1 { "its" } else { "their" },
            if total.approximated_sessions == 1 { "it" } else { "them" },
        );
    }
    if summary.pipeline_sessions > 0 {
        let p = &summary.pipeline;
        let parts: Vec<String> = [
            (p.pairing.synthetic_results, "synthetic tool result"),
            (p.pairing.dropped_results, "tool result dropped"),
            (p.leading_user_inserted, "user message put first"),
            (p.media_stripped, "media block stripped"),
            (p.thinking_only_dropped, "thinking-only assistant message dropped"),
            (p.empty_assistant_dropped, "blank assistant message dropped"),
            (p.approximated_attachments, "attachment rendered by ctxasm"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|&(n, what)| plural_phrase(n, what))
        .collect();
        if !parts.is_empty() {
            let _ = writeln!(
                o,
                "  the pipeline ({}, {}): {}",
                count(summary.pipeline_sessions, "session"),
                count(p.turns, "turn"),
                parts.join(", ")
            );
        }
    }
    o
}

/// The first `limit` diagnostics for stderr, one `ctxasm: …` line each,
/// then how many more. `approximated_profile` ones (one per session built
/// without a profile of its own release) are not listed: the callers count
/// them ([`approximated`] or assemble's table).
pub fn diagnostics(all: &[ctxasm::diag::Diagnostic], limit: usize) -> String {
    let mut o = String::new();
    let shown: Vec<_> = all.iter().filter(|d| d.kind != DiagKind::ApproximatedProfile).collect();
    for d in shown.iter().take(limit) {
        let _ = writeln!(o, "ctxasm: {d}");
    }
    if shown.len() > limit {
        let _ = writeln!(o, "ctxasm: … {} more (--json lists all)", count((shown.len() - limit) as u64, "diagnostic"));
    }
    o
}

/// One line for the sessions built without a profile of their own release
/// (their `approximated_profile` diagnostics), if any.
pub fn approximated(all: &[ctxasm::diag::Diagnostic]) -> String {
    let n = all.iter().filter(|d| d.kind == DiagKind::ApproximatedProfile).count() as u64;
    if n == 0 {
        return String::new();
    }
    format!(
        "ctxasm: {} built without a profile of {} own release (`ctxasm profile capture VERSION` makes {} exact; \
         --json lists {})\n",
        count(n, "session"),
        if n == 1 { "its" } else { "their" },
        if n == 1 { "it" } else { "them" },
        if n == 1 { "it" } else { "them" },
    )
}

/// `1 synthetic tool result`, `2 synthetic tool results`: the noun is the
/// phrase's first word after a number, so `tool result dropped` becomes
/// `tool results dropped`.
fn plural_phrase(n: u64, phrase: &str) -> String {
    if n == 1 {
        return format!("1 {phrase}");
    }
    // The noun is the last word before a participle ("dropped", "put", …)
    // or the last word.
    let words: Vec<&str> = phrase.split(' ').collect();
    let at = words
        .iter()
        .position(|w| matches!(*w, "dropped" | "put" | "stripped" | "rendered"))
        .map_or(words.len() - 1, |i| i - 1);
    let mut out = format!("{n}");
    for (i, w) in words.iter().enumerate() {
        out.push(' ');
        out.push_str(w);
        if i == at {
            out.push('s');
        }
    }
    out
}

/// A byte count for people: `812 B`, `12.3 KB`, `10.0 MB`, `1.25 GB`.
pub fn size(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1000 {
        format!("{bytes} B")
    } else if b < 1e6 {
        format!("{:.1} KB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.2} GB", b / 1e9)
    }
}

/// Seconds for people: `0.06 s`, `12.3 s`, `4 min 05 s`.
pub fn duration(secs: f64) -> String {
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        let whole = secs.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
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
