//! `ctxasm send` and `ctxasm batch` against the mock server (loopback only):
//! the in-process `ctxasm::mock::MockServer`, with `send` in-process
//! (`ctxasm::send::send`) or as the spawned binary.
//!
//! The tests of the limiter's timing run server and client in one
//! current-thread runtime on tokio's paused clock (`start_paused`): loopback
//! I/O is done before the runtime idles, so virtual time only moves when
//! every task waits on a timer, and the arrival times are exact whatever
//! the machine's load. Tests of a spawned binary keep real time.

use ctxasm::mock::{MockConfig, MockServer, MockStats};
use ctxasm::send::dispatch::Stop;
use ctxasm::send::limits::Limits;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_ctxasm");

/// A batch file of `n` tiny requests `req-0000…` whose user text is the
/// custom_id (so script rules can pick one).
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
        batch_delay: Duration::from_millis(200),
        ..MockConfig::default()
    }
}

fn script(dir: &Path, rules: Value) -> Vec<ctxasm::mock::Rule> {
    let p = dir.join("script.json");
    std::fs::write(&p, rules.to_string()).unwrap();
    ctxasm::mock::load_script(&p).unwrap()
}

fn endpoint(server: &MockServer) -> String {
    format!("http://{}", server.addr())
}

fn options(endpoint: &str, results: &Path) -> ctxasm::send::SendOptions {
    ctxasm::send::SendOptions {
        client: ctxasm::send::client::ClientConfig {
            endpoint: endpoint.to_string(),
            api_key: Some("test-key".into()),
            beta: None,
            timeout: Duration::from_secs(30),
            pool: 32,
        },
        results: results.to_path_buf(),
        concurrency: 32,
        limits: Limits::default(),
        adapt: true,
        max_attempts: 5,
        progress: None,
    }
}

async fn send_in_process(opts: &ctxasm::send::SendOptions, input: &Path) -> ctxasm::send::SendRun {
    let input = ctxasm::send::input::read_input(input).unwrap();
    assert!(input.errors.is_empty(), "{:?}", input.errors);
    let (_tx, rx) = tokio::sync::watch::channel(Stop::Run);
    ctxasm::send::send(opts, &input, rx).await.unwrap()
}

/// The journal's lines, parsed; the file must end with a newline.
fn journal(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.is_empty() || text.ends_with('\n'), "torn last line in {}", path.display());
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad journal line {l:?}: {e}"))).collect()
}

/// Every custom_id of `lines` exactly once, and all of `req-0000..n`.
fn assert_each_once(lines: &[Value], n: usize) {
    let ids: Vec<&str> = lines.iter().map(|l| l["custom_id"].as_str().unwrap()).collect();
    let set: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), set.len(), "a custom_id is written twice");
    assert_eq!(set.len(), n, "lost requests");
    for i in 0..n {
        assert!(set.contains(format!("req-{i:04}").as_str()), "req-{i:04} missing");
    }
}

fn messages_arrivals(stats: &MockStats) -> Vec<u64> {
    stats.arrivals.iter().filter(|(_, p)| p == "/v1/messages").map(|(t, _)| *t).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_requests_with_ten_percent_faults_lose_and_duplicate_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = batch_file(dir.path(), 1000);
    let faults = "529=0.04,500=0.03,drop=0.03".parse().unwrap();
    let server = MockServer::start(MockConfig { faults, seed: 7, ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = ctxasm::send::SendOptions { max_attempts: 10, ..options(&endpoint(&server), &results) };
    let run = send_in_process(&opts, &input).await;
    let stats = server.shutdown().await.unwrap();

    let lines = journal(&results);
    assert_eq!(lines.len(), 1000);
    assert_each_once(&lines, 1000);
    assert!(lines.iter().all(|l| l["status"] == 200 && l["response"]["content"].is_array()), "every request ends 200");
    let retried = lines.iter().filter(|l| l["attempts"].as_u64().unwrap() > 1).count();
    // 10% of the attempts fault: about 100 requests need a retry.
    assert!((60..=150).contains(&retried), "{retried} requests retried");
    let attempts: u64 = lines.iter().map(|l| l["attempts"].as_u64().unwrap()).sum();
    assert_eq!(attempts, run.summary.attempts);
    assert_eq!(stats.requests, attempts, "every attempt reached the server once");
    assert_eq!((run.summary.ok, run.summary.failed), (1000, 0));
    assert_eq!(ctxasm::send::exit_status(&run.summary, 0), 0);
    assert!(run.refused.is_empty());
}

#[test]
fn kill_9_mid_run_then_resume_sends_only_the_missing_ones() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = batch_file(dir.path(), 1000);
    let latency = "20-60".parse().unwrap();
    let server = rt.block_on(MockServer::start(MockConfig { latency, ..mock_config() })).unwrap();
    let results = dir.path().join("results.jsonl");
    let send = || {
        let mut c = Command::new(BIN);
        c.args(["send", input.to_str().unwrap(), "--results", results.to_str().unwrap(), "--concurrency", "16"])
            .args(["--endpoint", &endpoint(&server)])
            .env("ANTHROPIC_API_KEY", "test-key")
            .stderr(std::process::Stdio::null());
        c
    };
    let mut child = send().spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = std::fs::read(&results).map(|t| t.iter().filter(|&&b| b == b'\n').count()).unwrap_or(0);
        if n >= 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the journal never reached 200 lines");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // Let the requests that were on the wire reach the server.
    std::thread::sleep(Duration::from_millis(300));
    let before = server.stats().requests;
    let data = std::fs::read(&results).unwrap();
    let complete = data.iter().filter(|&&b| b == b'\n').count();
    assert!((200..1000).contains(&complete), "{complete} lines when killed");

    let status = send().status().unwrap();
    assert_eq!(status.code(), Some(0));
    let stats = rt.block_on(server.shutdown()).unwrap();
    let lines = journal(&results);
    assert_eq!(lines.len(), 1000);
    assert_each_once(&lines, 1000);
    assert_eq!(stats.requests - before, (1000 - complete) as u64, "the re-run sent exactly the missing requests");
}

#[test]
fn sigterm_drains_and_exits_143_and_the_journal_resumes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let input = batch_file(dir.path(), 300);
    let server =
        rt.block_on(MockServer::start(MockConfig { latency: "30".parse().unwrap(), ..mock_config() })).unwrap();
    let results = dir.path().join("results.jsonl");
    let send = || {
        let mut c = Command::new(BIN);
        c.args(["send", input.to_str().unwrap(), "--results", results.to_str().unwrap(), "--concurrency", "8"])
            .args(["--endpoint", &endpoint(&server)])
            .env("ANTHROPIC_API_KEY", "test-key")
            .stderr(std::process::Stdio::piped());
        c
    };
    let child = send().spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read(&results).map(|t| t.iter().filter(|&&b| b == b'\n').count()).unwrap_or(0) < 50 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{stderr}");
    assert!(stderr.contains("ctxasm: send: 300 requests:"), "the summary is printed: {stderr}");
    std::thread::sleep(Duration::from_millis(100));
    let first = journal(&results);
    assert!(first.len() < 300);
    // Everything sent before the stop finished and was journaled: the
    // server saw exactly the journaled requests (no faults, one attempt each).
    assert_eq!(rt.block_on(async { server.stats() }).requests, first.len() as u64);
    let out = send().output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    rt.block_on(server.shutdown()).unwrap();
    assert_each_once(&journal(&results), 300);
}

/// Count arrivals in every window [t_i, t_j] and check it against
/// `rate·w + burst` (a token bucket) and `limit` per 60 s.
fn assert_bucket(arrivals: &[u64], per_minute: f64, burst: f64) {
    let rate = per_minute / 60_000.0; // per ms
    for i in 0..arrivals.len() {
        for j in i..arrivals.len() {
            let w = (arrivals[j] - arrivals[i]) as f64;
            let count = (j - i + 1) as f64;
            // 5 ms of loopback jitter and ms rounding.
            assert!(
                count <= rate * (w + 5.0) + burst + 1.0,
                "{count} arrivals in {w} ms (rate {per_minute}/min, burst {burst})"
            );
            if w < 60_000.0 {
                assert!(count <= per_minute, "{count} arrivals within 60 s");
            }
        }
    }
}

/// On paused time nothing moves between a send and its arrival, and the
/// timers fire on whole milliseconds: the arrivals obey the client's own
/// bucket exactly (`burst`, then `refill_per_s`), with no allowance for
/// jitter.
fn assert_bucket_exact(arrivals: &[u64], burst: f64, refill_per_s: f64) {
    let rate = refill_per_s / 1000.0; // per ms
    for i in 0..arrivals.len() {
        for j in i..arrivals.len() {
            let w = (arrivals[j] - arrivals[i]) as f64;
            let count = (j - i + 1) as f64;
            assert!(count <= burst + rate * w + 1e-9, "{count} arrivals in {w} ms (burst {burst})");
        }
    }
}

/// Runs on tokio's paused clock (the test's `start_paused`): the mock's
/// arrival times are the virtual instants the limiter let each request go.
async fn rpm_run(per_minute: u64, n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let input = batch_file(dir.path(), n);
    let server = MockServer::start(mock_config()).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = ctxasm::send::SendOptions {
        limits: Limits { rpm: Some(per_minute), ..Limits::default() },
        concurrency: 16,
        ..options(&endpoint(&server), &results)
    };
    let run = send_in_process(&opts, &input).await;
    let stats = server.shutdown().await.unwrap();
    assert_eq!(run.summary.ok, n as u64);
    let arrivals = messages_arrivals(&stats);
    assert_eq!(arrivals.len(), n);
    assert_bucket(&arrivals, per_minute as f64, (per_minute as f64 / 60.0).max(1.0));
    // And it is not slower than the bucket needs: (n − burst) at (L − burst)/60 per s.
    let burst = (per_minute as f64 / 60.0).max(1.0);
    let needed = (n as f64 - burst) / ((per_minute as f64 - burst) / 60.0);
    let span = (arrivals[n - 1] - arrivals[0]) as f64 / 1000.0;
    assert!(span < needed * 1.1 + 0.5, "{span} s for {n} requests, the bucket needs {needed} s");
    // Exactly: never faster than the bucket, and late only by the last
    // timer's rounding up to the millisecond.
    assert_bucket_exact(&arrivals, burst, (per_minute as f64 - burst) / 60.0);
    assert!((span - needed).abs() < 0.002, "{span} s for {n} requests, the bucket needs {needed} s");
}

/// `--rpm 1200` on 150 requests (and the brief's `--rpm 120` on 150
/// requests, 75 s of virtual time: `rpm_120_on_150_requests`).
#[tokio::test(start_paused = true)]
async fn client_rpm_limit_holds_in_every_window() {
    rpm_run(1200, 150).await;
}

#[tokio::test(start_paused = true)]
async fn rpm_120_on_150_requests() {
    rpm_run(120, 150).await;
}

/// Without header adaptation (`--no-adapt`) the client's own `--rpm 6000`
/// overruns the server's 120/min: the 429s are retried after their
/// retry-after, and each one pauses every send.
#[tokio::test(start_paused = true)]
async fn server_rpm_below_the_clients_gives_429s_that_are_handled() {
    let dir = tempfile::tempdir().unwrap();
    let n = 130;
    let input = batch_file(dir.path(), n);
    let server = MockServer::start(MockConfig { rpm: Some(120), ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = ctxasm::send::SendOptions {
        limits: Limits { rpm: Some(6000), ..Limits::default() },
        concurrency: 8,
        adapt: false,
        max_attempts: 30,
        ..options(&endpoint(&server), &results)
    };
    let run = send_in_process(&opts, &input).await;
    let stats = server.shutdown().await.unwrap();
    let lines = journal(&results);
    assert_each_once(&lines, n);
    assert!(lines.iter().all(|l| l["status"] == 200));
    let limited = stats.by_status.get(&429).copied().unwrap_or(0);
    assert!(limited >= 1, "the server's limit was hit: {:?}", stats.by_status);
    assert_eq!(run.summary.rate_limited, limited);
    assert_eq!(stats.requests, n as u64 + limited);
    // A 429 pauses every new send until its retry-after (whole seconds,
    // ≥ 1, from the mock): the arrivals show those gaps.
    let arrivals = messages_arrivals(&stats);
    // On paused time the pause is exact: whole seconds.
    let gaps = arrivals.windows(2).filter(|w| w[1] - w[0] >= 1000).count();
    assert!(gaps >= 1, "no pause after a 429");
    // At most the requests already on the wire arrive in a pause: between
    // two pauses, ≤ concurrency + the server's refill.
    assert!(limited <= 8 * (gaps as u64 + 1), "{limited} 429s for {gaps} pauses");
}

/// With no client limit, the server's `anthropic-ratelimit-requests-*`
/// headers set one: no 429, and the arrivals follow a 600/min bucket after
/// the first replies.
#[tokio::test(start_paused = true)]
async fn server_limit_headers_are_followed() {
    let dir = tempfile::tempdir().unwrap();
    let n = 60;
    let input = batch_file(dir.path(), n);
    let server = MockServer::start(MockConfig { rpm: Some(600), ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = ctxasm::send::SendOptions { concurrency: 8, ..options(&endpoint(&server), &results) };
    let run = send_in_process(&opts, &input).await;
    let stats = server.shutdown().await.unwrap();
    assert_eq!(run.summary.ok, n as u64);
    assert_eq!(stats.by_status.get(&429), None);
    // Before the first reply: `concurrency` requests; then a full bucket of 10.
    let arrivals = messages_arrivals(&stats);
    assert_bucket(&arrivals, 600.0, 8.0 + 10.0);
    let span = run.summary.elapsed.as_secs_f64();
    assert!(span > 3.5, "{span} s: the learned limit was not applied");
    // On paused time, exactly: the learned bucket (600/min: burst 10, refill
    // 590/60 per s) after the first `concurrency` requests, and the run takes
    // as long as it needs for the other n − 18.
    assert_bucket_exact(&arrivals, 18.0, 590.0 / 60.0);
    let needed = (n - 18) as f64 / (590.0 / 60.0);
    assert!(span >= needed - 0.001, "{span} s, the learned bucket needs {needed} s");
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_by_every_send() {
    let dir = tempfile::tempdir().unwrap();
    let n = 40;
    let input = batch_file(dir.path(), n);
    let rules = serde_json::json!([{
        "when": {"last_user_contains": "req-0007"},
        "once": true,
        "reply": {"status": 429, "error": {"type": "rate_limit_error", "message": "slow down"},
                  "headers": {"retry-after": "2"}}
    }]);
    let server = MockServer::start(MockConfig { script: script(dir.path(), rules), ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = ctxasm::send::SendOptions { concurrency: 4, ..options(&endpoint(&server), &results) };
    send_in_process(&opts, &input).await;
    let stats = server.shutdown().await.unwrap();
    let lines = journal(&results);
    assert_each_once(&lines, n);
    let r7 = lines.iter().find(|l| l["custom_id"] == "req-0007").unwrap();
    assert_eq!((r7["status"].as_u64(), r7["attempts"].as_u64()), (Some(200), Some(2)));
    let arrivals = messages_arrivals(&stats);
    assert_eq!(arrivals.len(), n + 1);
    // The 429 came early (request 7 of 40): once the client reads it,
    // nothing is sent for 2 s. On paused time no time passes between a
    // send, its arrival and the client reading the reply, so machine load
    // cannot let other workers' sends slip in: after the 429 (≤ 4 + 7
    // arrivals) at most the 3 other requests on the wire arrive, then
    // nothing for exactly the retry-after.
    let (i, gap) = arrivals.windows(2).enumerate().map(|(i, w)| (i, w[1] - w[0])).max_by_key(|x| x.1).unwrap();
    assert!(gap >= 2000, "largest gap {gap} ms");
    assert!(i < 12, "the gap follows the 429 (arrival {i})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn final_4xx_are_recorded_once_and_x_should_retry_false_is_final() {
    let dir = tempfile::tempdir().unwrap();
    let n = 20;
    let input = batch_file(dir.path(), n);
    let rules = serde_json::json!([
        {"when": {"last_user_contains": "req-0003"},
         "reply": {"status": 400, "error": {"type": "invalid_request_error", "message": "bad"}}},
        {"when": {"last_user_contains": "req-0005"},
         "reply": {"status": 401, "error": {"type": "authentication_error", "message": "invalid x-api-key"}}},
        {"when": {"last_user_contains": "req-0008"},
         "reply": {"status": 529, "error": {"type": "overloaded_error", "message": "Overloaded"},
                   "headers": {"x-should-retry": "false"}}},
        {"when": {"last_user_contains": "req-0009"},
         "reply": {"status": 400, "error": {"type": "invalid_request_error", "message": "try again"},
                   "headers": {"x-should-retry": "true"}}, "once": true}
    ]);
    let server = MockServer::start(MockConfig { script: script(dir.path(), rules), ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let run = send_in_process(&options(&endpoint(&server), &results), &input).await;
    let stats = server.shutdown().await.unwrap();
    let lines = journal(&results);
    assert_each_once(&lines, n);
    let by_id: BTreeMap<&str, &Value> = lines.iter().map(|l| (l["custom_id"].as_str().unwrap(), l)).collect();
    let get = |id: &str| (by_id[id]["status"].as_u64().unwrap(), by_id[id]["attempts"].as_u64().unwrap());
    assert_eq!(get("req-0003"), (400, 1));
    assert_eq!(by_id["req-0003"]["error"]["error"]["type"], "invalid_request_error");
    assert_eq!(get("req-0005"), (401, 1));
    assert_eq!(get("req-0008"), (529, 1));
    assert_eq!(get("req-0009"), (200, 2));
    assert_eq!(stats.requests, n as u64 + 1);
    assert_eq!((run.summary.ok, run.summary.failed), (17, 3));
    assert_eq!(ctxasm::send::exit_status(&run.summary, 0), 1);
}

/// `ctxasm assemble` of the hello capture, in both formats.
fn assembled(dir: &Path) -> (PathBuf, PathBuf) {
    let transcripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cc-2.1.328/hello/transcripts");
    let batch = dir.join("batch.jsonl");
    let dedup = dir.join("dedup");
    for (format, out) in [("batch", &batch), ("dedup", &dedup)] {
        let st = Command::new(BIN)
            .args(["assemble", "--format", format, "-o", out.to_str().unwrap(), transcripts.to_str().unwrap()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
    (batch, dedup)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dedup_dir_equals_file_and_bodies_go_out_byte_for_byte_streamed() {
    let dir = tempfile::tempdir().unwrap();
    let (batch, dedup) = assembled(dir.path());
    let a = ctxasm::send::input::read_input(&batch).unwrap();
    let b = ctxasm::send::input::read_input(&dedup).unwrap();
    assert!(!a.requests.is_empty() && a.errors.is_empty() && b.errors.is_empty());
    let key = |i: &ctxasm::send::input::Input| {
        i.requests.iter().map(|r| (r.custom_id.clone(), r.body.clone(), r.stream)).collect::<Vec<_>>()
    };
    assert_eq!(key(&a), key(&b));
    assert!(a.requests.iter().all(|r| r.stream), "Claude Code requests stream");

    let record = dir.path().join("record.jsonl");
    let server = MockServer::start(MockConfig { record: Some(record.clone()), ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let run = send_in_process(&options(&endpoint(&server), &results), &dedup).await;
    server.shutdown().await.unwrap();
    assert_eq!(run.summary.ok, a.requests.len() as u64);
    // What the server received is the params bytes, exactly.
    use base64::Engine as _;
    let mut sent: Vec<Vec<u8>> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            base64::engine::general_purpose::STANDARD.decode(v["raw_b64"].as_str().unwrap()).unwrap()
        })
        .collect();
    let mut want: Vec<Vec<u8>> = a.requests.iter().map(|r| r.body.to_vec()).collect();
    sent.sort();
    want.sort();
    assert_eq!(sent, want);
    // The streamed replies were rebuilt into messages with their usage.
    for l in journal(&results) {
        assert_eq!(l["status"], 200);
        assert_eq!(l["response"]["type"], "message");
        assert!(!l["response"]["content"].as_array().unwrap().is_empty(), "{l}");
        assert!(l["usage"]["output_tokens"].as_u64().unwrap() > 0, "{l}");
        assert_eq!(l["usage"], l["response"]["usage"]);
    }
}

#[test]
fn dry_run_output_is_exact_and_needs_no_key() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/send/small.jsonl");
    let out = Command::new(BIN)
        .args(["send", "--dry-run", fixture.to_str().unwrap()])
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Hand-checked: haiku 88 + 101 bytes → 22 + 26 tokens at $1/MTok; opus
    // 4.8 90 bytes → 23 at $5; sonnet 4.5 99 bytes → 25 at $3; the blank
    // line is skipped.
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "model                        requests  est. input tokens  est. input USD
claude-haiku-4-5                    2                 48        0.000048
claude-opus-4-8                     1                 23        0.000115
claude-sonnet-4-5-20250929          1                 25        0.000075
total                               4                 96        0.000238
estimates: input tokens = request body bytes / 4; USD = those tokens at each model's base input price (no cache reads or writes assumed, output not counted)
"
    );
}

#[test]
fn dry_run_of_dedup_dir_equals_file() {
    let dir = tempfile::tempdir().unwrap();
    let (batch, dedup) = assembled(dir.path());
    let run = |p: &Path| Command::new(BIN).args(["send", "--dry-run", p.to_str().unwrap()]).output().unwrap();
    let (a, b) = (run(&batch), run(&dedup));
    assert!(a.status.success() && b.status.success());
    assert_eq!(a.stdout, b.stdout);
    assert!(String::from_utf8_lossy(&a.stdout).contains("claude-"));
}

#[test]
fn usage_and_input_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = batch_file(dir.path(), 3);
    let s = input.to_str().unwrap();
    let run = |args: &[&str], key: bool| {
        let mut c = Command::new(BIN);
        c.args(args);
        if key {
            c.env("ANTHROPIC_API_KEY", "test-key");
        } else {
            c.env_remove("ANTHROPIC_API_KEY");
        }
        c.output().unwrap()
    };
    let results = dir.path().join("r.jsonl");
    let r = results.to_str().unwrap();
    // No key.
    let out = run(&["send", s, "--results", r, "--endpoint", "http://127.0.0.1:9"], false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ANTHROPIC_API_KEY is not set"));
    // No --results.
    assert_eq!(run(&["send", s, "--endpoint", "http://127.0.0.1:9"], true).status.code(), Some(2));
    // Unreadable input.
    assert_eq!(run(&["send", "/nonexistent.jsonl", "--dry-run"], false).status.code(), Some(2));
    // A bad line and a duplicate: named, skipped, exit 2, the rest is read.
    let bad = dir.path().join("bad.jsonl");
    let mut text = std::fs::read_to_string(&input).unwrap();
    text.push_str("{oops\n");
    text.push_str(text.clone().lines().next().unwrap());
    text.push('\n');
    std::fs::write(&bad, text).unwrap();
    let out = run(&["send", bad.to_str().unwrap(), "--dry-run"], false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.jsonl:4: not a batch line"), "{err}");
    assert!(err.contains("bad.jsonl:5: duplicate custom_id \"req-0000\" (first at line 1)"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("claude-haiku-4-5          3  "));
}

#[test]
fn batch_submit_status_results_in_the_journal_format() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = 7;
    let input = batch_file(dir.path(), n);
    let server = rt.block_on(MockServer::start(mock_config())).unwrap();
    let ep = endpoint(&server);
    let state = dir.path().join("state.jsonl");
    let run = |args: &[&str]| {
        Command::new(BIN).args(args).args(["--endpoint", &ep]).env("ANTHROPIC_API_KEY", "test-key").output().unwrap()
    };
    let out = run(&[
        "batch",
        "submit",
        input.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--max-batch-requests",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).unwrap();
    let counts: Vec<&str> = printed.lines().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(counts, ["3", "3", "1"], "{printed}");
    assert_eq!(std::fs::read_to_string(&state).unwrap().lines().count(), 3);

    // Results before the end are refused.
    let journal_path = dir.path().join("results.jsonl");
    let early = run(&["batch", "results", "--state", state.to_str().unwrap(), "-o", journal_path.to_str().unwrap()]);
    assert_eq!(early.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&early.stderr).contains("has not ended"));

    let out = run(&["batch", "status", "--state", state.to_str().unwrap(), "--wait", "--poll-ms", "50"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let status = String::from_utf8(out.stdout).unwrap();
    assert_eq!(status.lines().count(), 3);
    assert!(status.lines().all(|l| l.contains(" ended ") && l.contains("errored=0")), "{status}");

    let out = run(&["batch", "results", "--state", state.to_str().unwrap(), "-o", journal_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = journal(&journal_path);
    assert_each_once(&lines, n);
    for l in &lines {
        assert_eq!((l["status"].as_u64(), l["attempts"].as_u64()), (Some(200), Some(1)));
        assert_eq!(l["response"]["type"], "message");
        assert!(l["usage"].is_object());
    }
    // Again: nothing is written twice.
    let out = run(&["batch", "results", "--state", state.to_str().unwrap(), "-o", journal_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(journal(&journal_path).len(), n);
    rt.block_on(server.shutdown()).unwrap();
}

fn stream_batch_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join(format!("stream-{n}.jsonl"));
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "{{\"custom_id\":\"req-{i:04}\",\"params\":{{\"model\":\"claude-haiku-4-5\",\"max_tokens\":16,\"stream\":true,\"messages\":[{{\"role\":\"user\",\"content\":\"req-{i:04}\"}}]}}}}\n"
        ));
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Streams cut in the middle (the mock's `drop` fault) are retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_streams_are_retried_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let n = 40;
    let input = stream_batch_file(dir.path(), n);
    let faults = "drop=0.2".parse().unwrap();
    let server = MockServer::start(MockConfig { faults, seed: 3, ..mock_config() }).await.unwrap();
    let results = dir.path().join("results.jsonl");
    let opts = ctxasm::send::SendOptions { max_attempts: 20, ..options(&endpoint(&server), &results) };
    let run = send_in_process(&opts, &input).await;
    let stats = server.shutdown().await.unwrap();
    let lines = journal(&results);
    assert_each_once(&lines, n);
    assert!(stats.dropped > 0);
    assert_eq!(stats.requests, run.summary.attempts);
    for l in &lines {
        assert_eq!(l["status"], 200);
        assert_eq!(l["response"]["content"][0]["type"], "text", "{l}");
        assert!(l["usage"]["output_tokens"].as_u64().unwrap() > 0);
    }
    assert!(lines.iter().any(|l| l["attempts"].as_u64().unwrap() > 1));
}

/// A tiny HTTP/1.1 server answering every POST with the SSE body that
/// `reply(n)` gives for the n-th request (0-based).
async fn sse_server(reply: fn(usize) -> String) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let c = c.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    // Read one request: headers, then content-length bytes.
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    while buf.len() < head_end + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                    }
                    buf.drain(..head_end + len);
                    let body = reply(c.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if sock.write_all(resp.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}"), count)
}

const SSE_START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n";
const SSE_ERROR: &str =
    "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
const SSE_REST: &str = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

/// An `event: error` inside a 200 stream fails the attempt with its type
/// and is retried as its status (overloaded → 529).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_event_in_a_200_stream_is_retried_as_its_status() {
    let dir = tempfile::tempdir().unwrap();
    let input = stream_batch_file(dir.path(), 1);
    // First reply: an overloaded error mid-stream; then a whole message.
    let (ep, count) =
        sse_server(|n| if n == 0 { format!("{SSE_START}{SSE_ERROR}") } else { format!("{SSE_START}{SSE_REST}") }).await;
    let results = dir.path().join("ok.jsonl");
    send_in_process(&options(&ep, &results), &input).await;
    let l = &journal(&results)[0];
    assert_eq!((l["status"].as_u64(), l["attempts"].as_u64()), (Some(200), Some(2)));
    assert_eq!(l["response"]["content"][0]["text"], "Hi");
    assert_eq!(l["usage"], serde_json::json!({"input_tokens": 7, "output_tokens": 5}));
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);

    // Always overloaded: final after --max-attempts, recorded as a 529.
    let (ep, count) = sse_server(|_| format!("{SSE_START}{SSE_ERROR}")).await;
    let results = dir.path().join("err.jsonl");
    let opts = ctxasm::send::SendOptions { max_attempts: 2, ..options(&ep, &results) };
    send_in_process(&opts, &input).await;
    let l = &journal(&results)[0];
    assert_eq!((l["status"].as_u64(), l["attempts"].as_u64()), (Some(529), Some(2)));
    assert_eq!(l["error"]["error"]["type"], "overloaded_error");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 2);
}
