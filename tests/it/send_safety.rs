//! Issue 14: sends that must not turn a passing outage into lost work, nor
//! wait a day, nor reach the real API; a mock server that outlives
//! misbehaving clients. Loopback only (the in-process mock server, closed
//! ports on 127.0.0.1).

use ctxasm::mock::{MockConfig, MockServer};
use ctxasm::send::dispatch::Stop;
use ctxasm::send::limits::Limits;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ctxasm");

fn batch_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("in-{n}.jsonl"));
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "{{\"custom_id\":\"req-{i:04}\",\"params\":{{\"model\":\"claude-haiku-4-5\",\"max_tokens\":16,\"messages\":[{{\"role\":\"user\",\"content\":\"req-{i:04}\"}}]}}}}\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn mock_config() -> MockConfig {
    MockConfig {
        addr: "127.0.0.1:0".parse().unwrap(),
        batch_delay: Duration::from_millis(100),
        ..MockConfig::default()
    }
}

fn script(dir: &Path, rules: Value) -> Vec<ctxasm::mock::Rule> {
    let p = dir.join("script.json");
    std::fs::write(&p, rules.to_string()).unwrap();
    ctxasm::mock::load_script(&p).unwrap()
}

/// A loopback port nothing listens on.
fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

fn options(endpoint: &str, results: &Path) -> ctxasm::send::SendOptions {
    ctxasm::send::SendOptions {
        client: ctxasm::send::client::ClientConfig {
            endpoint: endpoint.to_string(),
            api_key: Some("test-key".into()),
            beta: None,
            timeout: Duration::from_secs(10),
            pool: 8,
        },
        results: results.to_path_buf(),
        concurrency: 8,
        limits: Limits::default(),
        adapt: true,
        max_attempts: 2,
        progress: None,
    }
}

async fn send(opts: &ctxasm::send::SendOptions, input: &Path) -> ctxasm::send::SendRun {
    let input = ctxasm::send::input::read_input(input).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(Stop::Run);
    ctxasm::send::send(opts, &input, rx).await.unwrap()
}

fn journal(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The last line of each custom_id (its outcome).
fn outcomes(path: &Path) -> BTreeMap<String, Value> {
    journal(path).into_iter().map(|l| (l["custom_id"].as_str().unwrap().to_string(), l)).collect()
}

fn messages_arrivals(stats: &ctxasm::mock::MockStats) -> usize {
    stats.arrivals.iter().filter(|(_, p)| p == "/v1/messages").count()
}

/// Item 2: an outage (nothing listening, then replies cut) leaves the
/// requests retryable; a resume against a working server sends them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_retried_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let n = 12;
    let input = batch_file(dir.path(), n);
    let results = dir.path().join("results.jsonl");

    // Run 1: the server is down (connection refused).
    send(&options(&closed_port(), &results), &input).await;
    let lines = journal(&results);
    assert_eq!(lines.len(), n);
    assert!(lines.iter().all(|l| l["status"] == 0 && l["error"]["error"]["type"] == "connection_error"));

    // Run 2: the server cuts every reply (a drop fault).
    let server = MockServer::start(MockConfig { faults: "drop=1".parse().unwrap(), ..mock_config() }).await.unwrap();
    send(&options(&format!("http://{}", server.addr()), &results), &input).await;
    let stats = server.shutdown().await.unwrap();
    assert_eq!(messages_arrivals(&stats), 2 * n, "every request was sent again (2 attempts each)");

    // Run 3: the server is back: every request is sent and ends 200.
    let server = MockServer::start(mock_config()).await.unwrap();
    let run = send(&options(&format!("http://{}", server.addr()), &results), &input).await;
    let stats = server.shutdown().await.unwrap();
    assert_eq!(messages_arrivals(&stats), n);
    assert_eq!(run.summary.ok, n as u64);
    assert_eq!(ctxasm::send::exit_status(&run.summary, 0), 0);
    let out = outcomes(&results);
    assert_eq!(out.len(), n);
    assert!(out.values().all(|l| l["status"] == 200), "{out:?}");
    // Run 4: nothing left to send.
    let server = MockServer::start(mock_config()).await.unwrap();
    let run = send(&options(&format!("http://{}", server.addr()), &results), &input).await;
    assert_eq!(run.summary.already_done, n as u64);
    assert_eq!(server.shutdown().await.unwrap().requests, 0);
}

/// A 429 that asks for a day, for every request.
fn day_429() -> Value {
    serde_json::json!([{
        "when": {"last_user_contains": "req-"},
        "reply": {"status": 429, "error": {"type": "rate_limit_error", "message": "come back tomorrow"},
                  "headers": {"retry-after": "86400"}}
    }])
}

/// Wait for a child at most `limit`; kill it after.
fn wait_at_most(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Item 3: `retry-after: 86400` is not slept on: the run ends at once,
/// journals the request as rate_limited, and a resume sends it.
#[test]
fn a_day_long_retry_after_is_not_waited_for() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 20;
    let input = batch_file(dir.path(), n);
    let results = dir.path().join("results.jsonl");
    let server =
        rt.block_on(MockServer::start(MockConfig { script: script(dir.path(), day_429()), ..mock_config() })).unwrap();
    let ep = format!("http://{}", server.addr());
    let t0 = Instant::now();
    let mut child = Command::new(BIN)
        .args(["send", input.to_str().unwrap(), "--results", results.to_str().unwrap(), "--endpoint", &ep])
        .args(["--concurrency", "2"])
        .env("ANTHROPIC_API_KEY", "test-key")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_at_most(&mut child, Duration::from_secs(20));
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = status.unwrap_or_else(|| panic!("send still waiting after 20 s: {stderr}"));
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("rate_limited"), "{stderr}");
    let stats = rt.block_on(server.shutdown()).unwrap();
    // At most the requests on the wire when the first 429 came back.
    assert!(messages_arrivals(&stats) <= 2, "{} sent", messages_arrivals(&stats));
    let lines = journal(&results);
    assert!(!lines.is_empty());
    assert!(lines.iter().all(|l| l["status"] == 429 && l["retry_later"] == "rate_limited"), "{lines:?}");

    // The limit is gone: the resume sends every request.
    let server = rt.block_on(MockServer::start(mock_config())).unwrap();
    let ep = format!("http://{}", server.addr());
    let out = Command::new(BIN)
        .args(["send", input.to_str().unwrap(), "--results", results.to_str().unwrap(), "--endpoint", &ep])
        .env("ANTHROPIC_API_KEY", "test-key")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(messages_arrivals(&rt.block_on(server.shutdown()).unwrap()), n);
    let out = outcomes(&results);
    assert_eq!(out.len(), n);
    assert!(out.values().all(|l| l["status"] == 200));
}

/// Item 3: `--max-retry-wait` caps what is waited for: a 5 s retry-after
/// with a 1 s cap is deferred; the summary says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_retry_wait_caps_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let input = batch_file(dir.path(), 1);
    let rules = serde_json::json!([{
        "when": {"last_user_contains": "req-"},
        "reply": {"status": 429, "error": {"type": "rate_limit_error", "message": "x"}, "headers": {"retry-after": "5"}}
    }]);
    let server = MockServer::start(MockConfig { script: script(dir.path(), rules), ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = options(&format!("http://{}", server.addr()), &results);
    let input = ctxasm::send::input::read_input(&input).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(Stop::Run);
    let policy = ctxasm::send::SendPolicy { max_retry_wait: Duration::from_secs(1) };
    let t0 = Instant::now();
    let run = ctxasm::send::send_with(&opts, &policy, &input, rx).await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_eq!((run.summary.deferred, run.summary.ok, run.summary.failed), (1, 0, 0));
    assert_eq!(run.summary.deferred_wait, Some(Duration::from_secs(5)));
    assert!(run.summary.line("send").contains("1 rate_limited"), "{}", run.summary.line("send"));
    assert_eq!(ctxasm::send::exit_status(&run.summary, 0), 1);
    assert_eq!(server.shutdown().await.unwrap().requests, 1);
    assert_eq!(journal(&results)[0]["retry_later"], "rate_limited");
}
