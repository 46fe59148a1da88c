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
use std::net::TcpStream;
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

/// Run the binary with every proxy variable pointing at a closed loopback
/// port (loopback itself excepted): a request meant for the real API
/// fails there instead of leaving the machine.
fn ctxasm_offline(args: &[&str]) -> std::process::Output {
    let dead = closed_port();
    Command::new(BIN)
        .args(args)
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("HTTPS_PROXY", &dead)
        .env("https_proxy", &dead)
        .env("HTTP_PROXY", &dead)
        .env("http_proxy", &dead)
        .env("ALL_PROXY", &dead)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .output()
        .unwrap()
}

/// Item 1: `batch status|results --state` use the endpoint the state file
/// names; an explicit `--endpoint` that differs is refused, naming both.
#[test]
fn batch_state_keeps_its_endpoint() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 3;
    let input = batch_file(dir.path(), n);
    let server = rt.block_on(MockServer::start(mock_config())).unwrap();
    let ep = format!("http://{}", server.addr());
    let state = dir.path().join("state.jsonl");
    let st = state.to_str().unwrap();
    let out = ctxasm_offline(&["batch", "submit", input.to_str().unwrap(), "--state", st, "--endpoint", &ep]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let out = ctxasm_offline(&["batch", "status", "--state", st, "--wait", "--poll-ms", "50"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(" ended "));

    let journal_path = dir.path().join("results.jsonl");
    let jp = journal_path.to_str().unwrap();
    let out = ctxasm_offline(&["batch", "results", "--state", st, "-o", jp]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(journal(&journal_path).len(), n);
    // The same endpoint given explicitly (a trailing / is the same URL).
    let out = ctxasm_offline(&["batch", "status", "--state", st, "--endpoint", &format!("{ep}/")]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let requests_before = server.stats().requests;
    for cmd in [vec!["batch", "status", "--state", st], vec!["batch", "results", "--state", st, "-o", jp]] {
        let mut args = cmd.clone();
        args.extend(["--endpoint", "https://api.anthropic.com"]);
        let out = ctxasm_offline(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("https://api.anthropic.com") && err.contains(&ep), "names both: {err}");
    }
    assert_eq!(server.stats().requests, requests_before, "a refused run sends nothing");
    rt.block_on(server.shutdown()).unwrap();
}

/// Item 4: idle connections that never finish their head hold at most
/// `max_connections` slots and are closed after `header_timeout`; a normal
/// request is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_half_headers_do_not_starve_the_mock() {
    let bounds = ctxasm::mock::ServerLimits {
        max_connections: 16,
        header_timeout: Duration::from_millis(300),
        ..ctxasm::mock::ServerLimits::default()
    };
    let server = MockServer::start_with(mock_config(), bounds).await.unwrap();
    let addr = server.addr();
    let idle: Vec<TcpStream> = tokio::task::spawn_blocking(move || {
        (0..300)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n").unwrap();
                c
            })
            .collect()
    })
    .await
    .unwrap();
    let t0 = Instant::now();
    let reply = reqwest::Client::new()
        .post(format!("http://{addr}/v1/messages"))
        .header("content-type", "application/json")
        .body(r#"{"model":"claude-haiku-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}"#)
        .timeout(Duration::from_secs(15))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    assert!(t0.elapsed() < Duration::from_secs(15));
    // Every idle connection was closed by the server.
    let closed = tokio::task::spawn_blocking(move || {
        idle.into_iter()
            .filter(|c| {
                let mut c = c;
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut buf = [0u8; 256];
                loop {
                    match c.read(&mut buf) {
                        Ok(0) => break true,
                        Ok(_) => continue,
                        Err(e) => {
                            break !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut);
                        }
                    }
                }
            })
            .count()
    })
    .await
    .unwrap();
    assert_eq!(closed, 300);
    let stats = server.shutdown().await.unwrap();
    assert!(stats.peak_connections <= 16, "{}", stats.peak_connections);
}

/// Item 4: a long path is answered 414 and not kept; a body that never
/// ends is answered 408; an oversized head 431.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_paths_slow_bodies_and_big_heads_are_refused() {
    let server = MockServer::start(mock_config()).await.unwrap();
    let addr = server.addr();
    let status_line = move |head: String| {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(head.as_bytes()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = vec![0u8; 4096];
        let n = c.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or("").to_string()
    };
    let replies = tokio::task::spawn_blocking(move || {
        let mut v = Vec::new();
        for len in [20_000, 100_000] {
            v.push(status_line(format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(len))));
        }
        v.push(status_line(format!("GET /v1/messages HTTP/1.1\r\nHost: x\r\nx-big: {}\r\n\r\n", "b".repeat(200_000))));
        v
    })
    .await
    .unwrap();
    assert!(replies[0].starts_with("HTTP/1.1 414"), "{replies:?}");
    assert!(replies[1].starts_with("HTTP/1.1 414"), "{replies:?}");
    assert!(replies[2].starts_with("HTTP/1.1 431"), "{replies:?}");
    let stats = server.shutdown().await.unwrap();
    assert!(stats.arrivals.iter().all(|(_, p)| p.len() <= 256), "a long path was kept");

    let bounds = ctxasm::mock::ServerLimits {
        body_timeout: Duration::from_millis(300),
        ..ctxasm::mock::ServerLimits::default()
    };
    let server = MockServer::start_with(mock_config(), bounds).await.unwrap();
    let addr = server.addr();
    let head = tokio::task::spawn_blocking(move || {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"model\"").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = vec![0u8; 4096];
        let n = c.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).to_string()
    })
    .await
    .unwrap();
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");
    server.shutdown().await.unwrap();
}
