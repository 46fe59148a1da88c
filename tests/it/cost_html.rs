//! The HTML report of `ctxasm cost --html` (`ctxasm::cost::html::render`):
//! self-contained (nothing fetched), escaped, finite coordinates,
//! deterministic, fast; and, when a Chromium is on PATH, rendered headless
//! (DOM dump and screenshot).

use ctxasm::assemble::pipeline::Setup;
use ctxasm::assemble::{Assembler, Mode};
use ctxasm::corpus::RunOptions;
use ctxasm::cost::html::render;
use ctxasm::cost::modeled::{
    Accuracy, CategoryCost, CostReport, EstimatorReport, ModelOptions, SessionCost, TurnRow, WhatIfResult, cost_report,
};
use ctxasm::cost::pricing::Pricing;
use ctxasm::cost::tokens::TokenCounts;
use ctxasm::cost::usage::{PricingInfo, Totals};
use ctxasm::input::discover::discover;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHART_IDS: [&str; 4] = ["chart-hit-ratio", "chart-cost-by-session", "chart-cost-by-category", "chart-what-if"];
const EVIL: &str = "<script>alert(1)</script>&\"x'";

/// `1234567` → `1,234,567` (the page's grouping, written out here).
fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut o = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
    }
    o
}

/// `$1,234.5678` / `-$0.5000`, four decimals.
fn dollars(x: f64) -> String {
    let s = format!("{:.4}", x.abs());
    let (w, f) = s.split_once('.').unwrap();
    let neg = x < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b));
    format!("{}${}.{}", if neg { "-" } else { "" }, grouped(w.parse().unwrap()), f)
}

fn signed_dollars(x: f64) -> String {
    let s = dollars(x);
    if s.starts_with('-') { s } else { format!("+{s}") }
}

fn signed_percent(p: f64) -> String {
    let s = format!("{p:.1}");
    let neg = p < 0.0 && s.bytes().any(|b| (b'1'..=b'9').contains(&b));
    format!("{}{}%", if neg { "-" } else { "+" }, s.trim_start_matches('-'))
}

fn tokens(input: u64, w5: u64, w1: u64, read: u64, out: u64) -> TokenCounts {
    TokenCounts { input, cache_write_5m: w5, cache_write_1h: w1, cache_read: read, output: out }
}

fn totals(requests: u64, t: &TokenCounts, cost: f64) -> Totals {
    Totals {
        requests,
        input_tokens: t.input,
        cache_creation_input_tokens: t.cache_write_5m + t.cache_write_1h,
        cache_read_input_tokens: t.cache_read,
        output_tokens: t.output,
        cost_usd: cost,
    }
}

/// A report written by hand: `n_sessions` sessions, `turns_per` requests
/// each (the first session's id is hostile), two what-ifs.
fn hand_report(n_sessions: usize, turns_per: usize) -> CostReport {
    let mut r = CostReport {
        recorded: totals(1234, &tokens(5_000, 120_000, 0, 3_456_789, 42_000), 12.3456),
        modeled: totals(1234, &tokens(5_100, 118_000, 2_000, 3_450_000, 42_000), 12.5),
        accuracy: Accuracy {
            requests_compared: 1200,
            requests_without_usage: 34,
            recorded_cost_usd: 12.0,
            modeled_cost_usd: 12.1,
            cost_error_pct: 0.8333,
            ..Accuracy::default()
        },
        estimator: EstimatorReport {
            samples: 321,
            bytes_per_token: [("text", 3.7), ("tool_use", 2.9)].into_iter().collect(),
            median_relative_error: 0.04,
            p90_relative_error: 0.2,
            ..EstimatorReport::default()
        },
        what_if: vec![
            WhatIfResult {
                what_if: "ttl=1h".into(),
                modeled: totals(1234, &tokens(5_100, 0, 130_000, 3_600_000, 42_000), 11.25),
                unpriced: Vec::new(),
                delta_usd: -1.25,
                delta_pct: -10.0,
                not_applicable: None,
            },
            WhatIfResult {
                what_if: "model=<b>&co".into(),
                modeled: totals(1234, &tokens(5_100, 118_000, 0, 3_450_000, 42_000), 20.0),
                unpriced: Vec::new(),
                delta_usd: 7.5,
                delta_pct: 60.0,
                not_applicable: None,
            },
        ],
        recorded_by_category: CategoryCost {
            input: 0.5,
            cache_write_5m: 2.0,
            cache_write_1h: 0.0,
            cache_read: 4.0,
            output: 5.8,
        },
        modeled_by_category: CategoryCost {
            input: 0.55,
            cache_write_5m: 1.9,
            cache_write_1h: 0.2,
            cache_read: 4.1,
            output: 5.8,
        },
        account: "root".into(),
        pricing: PricingInfo {
            source: "builtin <LiteLLM>".into(),
            date: "2026-01-01".into(),
            table: "the price table <p>.json".into(),
        },
        ..CostReport::default()
    };
    for s in 0..n_sessions {
        r.sessions.push(SessionCost {
            session_id: if s == 0 { EVIL.into() } else { format!("session-{s:05}") },
            project: format!("-home-user-project-{}", s % 7),
            // The first session's prompt is hostile too; one has none.
            title: match s {
                0 => Some(EVIL.into()),
                1 => None,
                _ => Some(format!("Please fix test {s}")),
            },
            started: (s != 1).then(|| format!("2026-01-01T00:{:02}:00.000Z", s % 60)),
            requests: turns_per as u64,
            by_pipeline: s % 2 == 1,
            unseen_prompt: s % 4 == 1,
            recorded_cost_usd: 0.01 * s as f64,
            modeled_cost_usd: 0.011 * s as f64,
            unpriced_requests: 0,
            recorded_hit_ratio: (s % 3 != 0).then_some(0.9),
            modeled_hit_ratio: 0.88,
        });
    }
    // Interleaved in time, as the report's rows are.
    for i in 0..turns_per {
        for s in 0..n_sessions {
            let read = (i as u64 * 1000) % 50_000;
            let modeled = tokens(3, 500, 0, read, 200);
            r.turns.push(TurnRow {
                custom_id: format!("{s}-{i}"),
                session: s,
                at_ms: (i * n_sessions + s) as u64 * 1000,
                recorded: (i % 5 != 0).then(|| tokens(3, 450, 0, read + 50, 200)),
                modeled,
                recorded_cost_usd: Some(0.001),
                modeled_cost_usd: Some(0.001),
                context: Default::default(),
            });
        }
    }
    r
}

/// Every `<svg>` element of the page (start tag through `</svg>`).
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let end = rest[i..].find("</svg>").expect("closed svg") + i + 6;
        out.push(&rest[i..end]);
        rest = &rest[end..];
    }
    out
}

/// The page fetches nothing and has no non-finite number.
fn check_page(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", &html[..40.min(html.len())]);
    assert!(html.trim_end().ends_with("</html>"));
    let lower = html.to_ascii_lowercase();
    for bad in ["src=", "@import", "url(", "<script", "<link", "<img", "<iframe", "<object", "<embed"] {
        assert!(!lower.contains(bad), "the page contains {bad:?}");
    }
    // Links only within the page (a session's row).
    assert_eq!(lower.matches("href=").count(), lower.matches("href=\"#session-").count(), "a link out of the page");
    // A URL may be quoted as text (the pricing source names its page), never
    // as an attribute value.
    for bad in ["=\"http", "='http", "=http", "=\"//", "='//"] {
        assert!(!lower.contains(bad), "the page has an attribute {bad:?}");
    }
    assert!(!html.contains("NaN"), "NaN in the page");
    // `inf` / `-inf` as a word (Rust's f64 Display), not inside a word.
    let b = html.as_bytes();
    for (i, _) in html.match_indices("inf") {
        let before = i.checked_sub(1).map(|j| b[j]);
        let after = b.get(i + 3).copied();
        let word = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
        assert!(
            word(before) || word(after),
            "`inf` at byte {i}: {}",
            &html[i.saturating_sub(40)..(i + 40).min(html.len())]
        );
    }
    // Every numeric attribute of every chart is a finite number.
    for svg in svgs(html) {
        for attr in ["x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height"] {
            let pat = format!(" {attr}=\"");
            for (i, _) in svg.match_indices(&pat) {
                let v = &svg[i + pat.len()..];
                let v = &v[..v.find('"').unwrap()];
                let x: f64 = v.parse().unwrap_or_else(|_| panic!("{attr}={v:?} is not a number"));
                assert!(x.is_finite(), "{attr}={v}");
            }
        }
        for (i, _) in svg.match_indices(" d=\"") {
            let v = &svg[i + 4..];
            let v = &v[..v.find('"').unwrap()];
            for n in v.split(['M', 'L', ' ']).filter(|s| !s.is_empty()) {
                assert!(n.parse::<f64>().is_ok_and(f64::is_finite), "path number {n:?}");
            }
        }
        assert!(svg.contains("role=\"img\"") && svg.contains("aria-label=\"") && svg.contains("<title>"));
    }
}

fn count(html: &str, needle: &str) -> usize {
    html.matches(needle).count()
}

/// The fixtures through the pipeline, as the brief's call writes it: the
/// default assembler's pipeline has no prompt text, so sessions without a
/// recorded shape give no request.
fn fixture_report_default_assembler() -> CostReport {
    let disc = discover(&[PathBuf::from("tests/fixtures/usage")]);
    cost_report(
        &disc,
        &RunOptions::default(),
        &Assembler { mode: Mode::Auto, ..Default::default() },
        &Pricing::builtin(),
        &ModelOptions {
            what_ifs: vec!["ttl=1h".parse().unwrap(), "no-cross-session-cache".parse().unwrap()],
            ..Default::default()
        },
    )
    .expect("the modeled cost")
}

/// The fixtures as `ctxasm cost --html` models them: mode auto with the
/// default `--profile cc-2.1.328` loaded as in `src/main.rs`, so that
/// sessions without records are assembled with the unseen prompt prefix.
fn fixture_report() -> CostReport {
    let disc = discover(&[PathBuf::from("tests/fixtures/usage")]);
    let prep = Setup::load("cc-2.1.328", None, Default::default()).unwrap();
    let prompt_known = prep.profile.has_prompt_text();
    cost_report(
        &disc,
        &RunOptions::default(),
        &Assembler { mode: Mode::Auto, pipeline: Some(prep), ..Default::default() },
        &Pricing::builtin(),
        &ModelOptions {
            what_ifs: vec!["ttl=1h".parse().unwrap(), "no-cross-session-cache".parse().unwrap()],
            prompt_known,
            ..Default::default()
        },
    )
    .expect("the modeled cost")
}

#[test]
fn hand_made_report() {
    let r = hand_report(15, 40);
    let html = render(&r);
    check_page(&html);
    for id in CHART_IDS {
        assert_eq!(count(&html, &format!("id=\"{id}\"")), 1, "{id}");
    }
    assert_eq!(count(&html, "<svg"), 4);
    // Escaping.
    assert!(!html.contains(EVIL));
    assert!(!html.contains("<script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;x&#39;"));
    assert!(html.contains("model=&lt;b&gt;&amp;co"));
    assert!(html.contains("builtin &lt;LiteLLM&gt;"));
    // Summary numbers.
    for n in ["1,234", "5,000", "5,100", "120,000", "3,456,789", "3,450,000", "42,000", "$12.3456", "$12.5000", "321"] {
        assert!(html.contains(n), "{n}");
    }
    assert!(html.contains("+0.8%"), "cost error");
    // Accuracy figures, no verdict against the project's own targets.
    assert!(!html.contains(">met<") && !html.contains(">missed<") && !html.contains("Target"));
    assert!(html.contains("<tr><th>Price table</th><td>the price table &lt;p&gt;.json</td></tr>"));
    // Every request priced: no unpriced row.
    assert!(!html.contains("Unpriced") && !html.contains("unpriced-models"));
    // What-if labels with their deltas.
    assert!(html.contains("ttl=1h"));
    assert!(html.contains("$11.2500 (-$1.2500, -10.0%)"));
    assert!(html.contains("$20.0000 (+$7.5000, +60.0%)"));
    // In the payer's terms: the recorded bill ($12.3456) plus each change.
    assert!(
        html.contains("<li><code>ttl=1h</code>: you would have paid <b>$11.0956</b> instead of $12.3456 (-10.0%)</li>")
    );
    assert!(html.contains(
        "<li><code>model=&lt;b&gt;&amp;co</code>: you would have paid <b>$19.8456</b> instead of $12.3456 (+60.0%)</li>"
    ));
    assert!(html.contains("<td>$12.3456 (the bill)</td>") && html.contains("<td>$11.0956</td>"));
    assert_eq!(dollars(-1.25), "-$1.2500");
    assert_eq!(signed_dollars(7.5), "+$7.5000");
    // 12 panels of 15 sessions; 20 bars max (15 here, each two bars).
    assert_eq!(count(&html, "<g class=\"panel\">"), 12);
    assert_eq!(count(&html, "<g class=\"what-if\">"), 3);
    // Every session is in the table, named by its first prompt (escaped),
    // its id and start under it.
    assert!(html.contains("session-00014"));
    assert!(html.contains(
        "Please fix test 14<div class=\"mono sub\" title=\"session-00014\">session- · 2026-01-01 00:14</div>"
    ));
    assert!(html.contains("(no prompt typed)"));
    assert_eq!(render(&r), html, "deterministic");
}

#[test]
fn empty_report() {
    let r = CostReport::default();
    let html = render(&r);
    check_page(&html);
    for id in &CHART_IDS[..3] {
        assert_eq!(count(&html, &format!("id=\"{id}\"")), 1, "{id}");
    }
    assert!(!html.contains("id=\"chart-what-if\""), "no empty what-if chart");
    assert!(html.contains("No what-if scenario"));
    // Zero costs, sessions without turns, turns of unknown sessions.
    let mut r = hand_report(3, 0);
    for s in &mut r.sessions {
        s.recorded_cost_usd = 0.0;
        s.modeled_cost_usd = 0.0;
        s.recorded_hit_ratio = None;
    }
    r.recorded_by_category = CategoryCost::default();
    r.modeled_by_category = CategoryCost::default();
    r.turns.push(TurnRow { session: 99, ..TurnRow::default() });
    r.turns.push(TurnRow { session: 1, ..TurnRow::default() }); // empty input
    r.what_if[0].delta_pct = f64::NAN;
    r.accuracy.cost_error_pct = f64::INFINITY;
    r.modeled.cost_usd = f64::NAN;
    let html = render(&r);
    check_page(&html);
    for id in CHART_IDS {
        assert_eq!(count(&html, &format!("id=\"{id}\"")), 1, "{id}");
    }
}

#[test]
fn large_report_is_fast_and_capped() {
    let r = hand_report(20, 5_000); // 100,000 turns
    assert_eq!(r.turns.len(), 100_000);
    let t = Instant::now();
    let html = render(&r);
    let took = t.elapsed();
    eprintln!("100k turns: {} bytes in {took:?}", html.len());
    assert!(took < Duration::from_secs(1), "{took:?}");
    check_page(&html);
    // One session of 100k requests: sampled to 2,000 points per series.
    let mut one = hand_report(1, 100_000);
    one.sessions[0].session_id = "big".into();
    let html = render(&one);
    let svg = svgs(&html)[0];
    let points = svg.matches('L').count();
    assert!(points <= 2 * 2000, "{points}");
    assert!(points > 2000);
}

#[test]
fn fixture_report_default_assembler_page() {
    let r = fixture_report_default_assembler();
    assert!(!r.sessions.is_empty());
    assert_eq!(r.what_if.len(), 2);
    let html = render(&r);
    check_page(&html);
    for id in CHART_IDS {
        assert_eq!(count(&html, &format!("id=\"{id}\"")), 1, "{id}");
    }
    assert_eq!(render(&r), html, "deterministic");
}

#[test]
fn fixture_report_page() {
    let r = fixture_report();
    assert!(
        !r.sessions.is_empty() && !r.turns.is_empty(),
        "the fixtures model requests: {} sessions, {} turns, {} diagnostics: {:?}",
        r.sessions.len(),
        r.turns.len(),
        r.diagnostics.len(),
        r.diagnostics.iter().take(3).collect::<Vec<_>>()
    );
    assert_eq!(r.what_if.len(), 2);
    let html = render(&r);
    check_page(&html);
    for id in CHART_IDS {
        assert_eq!(count(&html, &format!("id=\"{id}\"")), 1, "{id}");
    }
    assert_eq!(render(&r), html, "deterministic");
    assert_eq!(render(&fixture_report()), html, "deterministic across runs of the pipeline");
    for w in &r.what_if {
        let label = format!(
            "{} ({}, {})",
            dollars(w.modeled.cost_usd),
            signed_dollars(w.delta_usd),
            signed_percent(w.delta_pct)
        );
        assert!(html.contains(&label), "{label}");
        assert!(html.contains(&format!(">{}<", w.what_if)), "{}", w.what_if);
    }
    for n in summary_numbers(&r) {
        assert!(html.contains(&n), "{n}");
    }
    for s in &r.sessions {
        assert!(html.contains(&ctxasm::cost::html::escape(&s.session_id)));
    }
    eprintln!("fixture page: {} bytes, {} sessions, {} turns", html.len(), r.sessions.len(), r.turns.len());
    if let Ok(dir) = std::env::var("CTXASM_HTML_OUT") {
        std::fs::write(Path::new(&dir).join("cost-report.html"), &html).unwrap();
    }
}

fn summary_numbers(r: &CostReport) -> Vec<String> {
    vec![
        grouped(r.recorded.requests),
        grouped(r.modeled.requests),
        grouped(r.recorded.cache_read_input_tokens),
        grouped(r.modeled.cache_read_input_tokens),
        dollars(r.recorded.cost_usd),
        dollars(r.modeled.cost_usd),
    ]
}

// ---------------------------------------------------------------------------
// Headless Chromium
// ---------------------------------------------------------------------------

fn browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Run `cmd` with a timeout, killing it when late; its stdout.
fn run_with_timeout(mut cmd: Command, timeout: Duration) -> (bool, String, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("browser starts");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let ok = loop {
        match child.try_wait().unwrap() {
            Some(status) => break status.success(),
            None if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("browser timed out after {timeout:?}");
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    (ok, t_out.join().unwrap(), t_err.join().unwrap())
}

/// A page that frames `cost-report.html` 1,400 px wide and writes, once it
/// has loaded, the report's scroll and client widths and every element of
/// it that scrolls sideways.
const WIDTH_PROBE: &str = r#"<!DOCTYPE html><html><body>
<iframe id="f" src="cost-report.html" style="width:1400px;height:900px;border:0"></iframe>
<pre id="out">pending</pre>
<script>
document.getElementById('f').addEventListener('load', function () {
  var doc = this.contentDocument, d = doc.documentElement, wide = [];
  doc.querySelectorAll('*').forEach(function (e) {
    if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') {
      wide.push((e.id || e.tagName) + ':' + e.scrollWidth + '/' + e.clientWidth);
    }
  });
  document.getElementById('out').textContent =
    'scrollWidth=' + d.scrollWidth + ' clientWidth=' + d.clientWidth + ' inner=' + wide.join(',');
});
</script></body></html>"#;

fn chrome_cmd(bin: &Path, profile: &Path) -> Command {
    let mut c = Command::new(bin);
    c.arg("--headless=new")
        .arg("--no-sandbox")
        .arg("--disable-gpu")
        .arg("--disable-dev-shm-usage")
        .arg("--no-first-run")
        .arg("--hide-scrollbars")
        .arg(format!("--user-data-dir={}", profile.display()));
    c
}

#[test]
#[ignore = "needs chromium: apt-get install chromium (.ci/run does)"]
fn headless_chromium() {
    let bin = browser().expect("no chromium on PATH (apt-get install chromium)");
    let r = fixture_report();
    let html = render(&r);
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("cost-report.html");
    std::fs::write(&page, &html).unwrap();
    let url = format!("file://{}", page.display());
    let timeout = Duration::from_secs(60);

    let mut cmd = chrome_cmd(&bin, &dir.path().join("profile-dom"));
    cmd.arg("--dump-dom").arg(&url);
    let (ok, dom, err) = run_with_timeout(cmd, timeout);
    assert!(ok, "chromium --dump-dom failed: {err}");
    for id in CHART_IDS {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} not in the DOM");
    }
    for n in summary_numbers(&r) {
        assert!(dom.contains(&n), "{n} not in the DOM");
    }

    // No sideways scrolling at 1,400 px (issue 16): the page, and every
    // table, chart or box in it, fits; measured by a page that frames the
    // report (the report itself runs no script).
    let probe = dir.path().join("probe.html");
    std::fs::write(&probe, WIDTH_PROBE).unwrap();
    let mut cmd = chrome_cmd(&bin, &dir.path().join("profile-width"));
    cmd.arg("--allow-file-access-from-files")
        .arg("--virtual-time-budget=5000")
        .arg("--dump-dom")
        .arg(format!("file://{}", probe.display()));
    let (ok, probed, err) = run_with_timeout(cmd, timeout);
    assert!(ok, "chromium --dump-dom of the width probe failed: {err}");
    let line = probed.split("<pre id=\"out\">").nth(1).and_then(|r| r.split('<').next()).unwrap_or("");
    assert_eq!(line, "scrollWidth=1400 clientWidth=1400 inner=", "something scrolls sideways at 1,400 px");

    let png = std::env::var_os("CTXASM_SCREENSHOT").map_or_else(|| dir.path().join("cost-report.png"), PathBuf::from);
    let _ = std::fs::remove_file(&png);
    let mut cmd = chrome_cmd(&bin, &dir.path().join("profile-shot"));
    cmd.arg(format!("--screenshot={}", png.display())).arg("--window-size=1400,2200").arg(&url);
    let (ok, _, err) = run_with_timeout(cmd, timeout);
    assert!(ok, "chromium --screenshot failed: {err}");
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 10 * 1024, "screenshot {} is {size} bytes", png.display());
    let version =
        Command::new(&bin).arg("--version").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    eprintln!(
        "chromium ok ({}): DOM {} bytes, screenshot {} ({size} bytes)",
        version.unwrap_or_default(),
        dom.len(),
        png.display()
    );
}
