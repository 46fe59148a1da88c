//! `ctxasm mock-server`: the library server over loopback with reqwest as
//! the client, and the binary (first line, SIGTERM, record).

use base64::Engine;
use ctxasm::mock::{Faults, Latency, MockConfig, MockServer, load_script};
use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

const MODEL: &str = "claude-sonnet-4-5";

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn start(cfg: MockConfig) -> MockServer {
    MockServer::start(MockConfig { addr: "127.0.0.1:0".parse().unwrap(), ..cfg }).await.unwrap()
}

fn url(s: &MockServer, path: &str) -> String {
    format!("http://{}{path}", s.addr())
}

/// POST `body`; status, headers, JSON reply.
async fn post(c: &reqwest::Client, url: &str, body: &Value) -> (StatusCode, HeaderMap, Value) {
    let r = c.post(url).header("x-api-key", "sk-test-1").body(serde_json::to_vec(body).unwrap()).send().await.unwrap();
    let (status, headers) = (r.status(), r.headers().clone());
    let bytes = r.bytes().await.unwrap();
    (status, headers, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn get(c: &reqwest::Client, url: &str) -> (StatusCode, HeaderMap, Vec<u8>) {
    let r = c.get(url).send().await.unwrap();
    let (status, headers) = (r.status(), r.headers().clone());
    (status, headers, r.bytes().await.unwrap().to_vec())
}

fn ask(text: &str) -> Value {
    json!({"model": MODEL, "max_tokens": 1024, "messages": [{"role": "user", "content": text}]})
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

/// Tokens of one text block by the default estimator: ⌈compact JSON bytes / 4⌉.
fn text_block_tokens(text: &str) -> u64 {
    (serde_json::to_vec(&json!({"type": "text", "text": text})).unwrap().len() as u64).div_ceil(4)
}

/// `(event, data)` of every SSE event.
fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|c| !c.trim().is_empty())
        .map(|chunk| {
            let mut lines = chunk.lines();
            let ev = lines.next().unwrap().strip_prefix("event: ").unwrap().to_string();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            assert!(lines.next().is_none(), "{chunk}");
            (ev, serde_json::from_str(data).unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn non_streaming_reply_shape_and_usage() {
    let s = start(MockConfig::default()).await;
    let c = client();
    let (status, h, v) = post(&c, &url(&s, "/v1/messages"), &ask("hello there")).await;
    assert_eq!(status, 200);
    assert!(h["request-id"].to_str().unwrap().starts_with("req_01"));
    assert_eq!(h["content-type"], "application/json");
    assert_eq!(keys(&v), ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"]);
    assert!(v["id"].as_str().unwrap().starts_with("msg_01"));
    assert_eq!(
        (v["type"].as_str(), v["role"].as_str(), v["model"].as_str()),
        (Some("message"), Some("assistant"), Some(MODEL))
    );
    assert_eq!(v["content"], json!([{"type": "text", "text": "OK."}]));
    assert_eq!((v["stop_reason"].as_str(), v["stop_sequence"].is_null()), (Some("end_turn"), true));
    let u = &v["usage"];
    assert_eq!(
        keys(u),
        ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation", "output_tokens"]
    );
    assert_eq!(keys(&u["cache_creation"]), ["ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"]);
    // No cache_control: the whole prompt (one text block of 35 bytes) is input.
    assert_eq!(text_block_tokens("hello there"), 9);
    assert_eq!(
        *u,
        json!({"input_tokens": 9, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
               "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
               "output_tokens": 32})
    );

    // Unknown path: 404 not_found_error, request_id = the header.
    let r = c.get(url(&s, "/v1/nothing")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let rid = r.headers()["request-id"].to_str().unwrap().to_string();
    let e: Value = serde_json::from_slice(&r.bytes().await.unwrap()).unwrap();
    assert_eq!(
        e,
        json!({"type": "error", "error": {"type": "not_found_error", "message": "Not found"}, "request_id": rid})
    );
    // Invalid body: 400 invalid_request_error naming the field.
    let (status, _, e) = post(&c, &url(&s, "/v1/messages"), &json!({"model": MODEL, "messages": []})).await;
    assert_eq!(status, 400);
    assert_eq!(e["error"], json!({"type": "invalid_request_error", "message": "max_tokens: Field required"}));
    let st = s.shutdown().await.unwrap();
    assert_eq!(
        (st.requests, st.by_status.get(&200), st.by_status.get(&404), st.by_status.get(&400)),
        (3, Some(&1), Some(&1), Some(&1))
    );
    assert_eq!(
        st.arrivals.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>(),
        ["/v1/messages", "/v1/nothing", "/v1/messages"]
    );
}

fn thinking_rules() -> Vec<ctxasm::mock::Rule> {
    load_script(Path::new("tests/fixtures/mock/thinking.scenario.json")).unwrap()
}

fn streamed(text: &str) -> Value {
    let mut b = ask(text);
    b["stream"] = json!(true);
    b
}

/// The thinking scenario's first rule (thinking, text, tool_use), streamed:
/// the events mock_anthropic.py writes for it, written out by hand.
#[tokio::test(flavor = "multi_thread")]
async fn streaming_reply_is_the_python_event_sequence() {
    let s = start(MockConfig { script: thinking_rules(), ..MockConfig::default() }).await;
    let r = client()
        .post(url(&s, "/v1/messages"))
        .body(serde_json::to_vec(&streamed("what year?")).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream; charset=utf-8");
    let events = sse_events(&r.text().await.unwrap());
    let msg = &events[0].1["message"];
    let (id, usage) = (msg["id"].clone(), msg["usage"].clone());
    assert_eq!(usage["output_tokens"], 32);
    let tool_id = events[8].1["content_block"]["id"].clone();
    assert!(tool_id.as_str().unwrap().starts_with("toolu_01"), "{tool_id}");
    let delta = |i: usize, d: Value| {
        ("content_block_delta".to_string(), json!({"type": "content_block_delta", "index": i, "delta": d}))
    };
    let start_ = |i: usize, b: Value| {
        ("content_block_start".to_string(), json!({"type": "content_block_start", "index": i, "content_block": b}))
    };
    let stop = |i: usize| ("content_block_stop".to_string(), json!({"type": "content_block_stop", "index": i}));
    let expected = vec![
        (
            "message_start".to_string(),
            json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": MODEL,
                   "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        start_(0, json!({"type": "thinking", "thinking": "", "signature": ""})),
        delta(0, json!({"type": "thinking_delta", "thinking": "The user wants the date; run date."})),
        delta(0, json!({"type": "signature_delta", "signature": "EqQBCkYIBxgCKkBmock34"})),
        stop(0),
        start_(1, json!({"type": "text", "text": ""})),
        delta(1, json!({"type": "text_delta", "text": "Checking."})),
        stop(1),
        start_(2, json!({"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}})),
        // Python's json.dumps of the input: `, ` and `: ` separators.
        delta(
            2,
            json!({"type": "input_json_delta", "partial_json": "{\"command\": \"date +%Y\", \"description\": \"Year\"}"}),
        ),
        stop(2),
        (
            "message_delta".to_string(),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 32}}),
        ),
        ("message_stop".to_string(), json!({"type": "message_stop"})),
    ];
    assert_eq!(events, expected);
}

/// The same request to `../shared/capture/mock_anthropic.py` gives the
/// same events, ids and usage aside (Python's usage is `len(raw)//4` and 7
/// output tokens).
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs ../shared/capture beside the checkout and python3 (CI has both)"]
async fn streaming_matches_the_python_stand_in() {
    let py = Path::new("../shared/capture/mock_anthropic.py");
    let has_python = std::process::Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(py.exists() && has_python, "../shared/capture/mock_anthropic.py or python3 is not here");
    let dir = tempfile::tempdir().unwrap();
    let scenario: Value =
        serde_json::from_slice(&std::fs::read("tests/fixtures/mock/thinking.scenario.json").unwrap()).unwrap();
    std::fs::write(dir.path().join("rules.json"), serde_json::to_vec(&scenario["rules"]).unwrap()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = std::process::Command::new("python3")
        .arg(py)
        .arg(port.to_string())
        .arg(dir.path().join("log.jsonl"))
        .arg(dir.path().join("rules.json"))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "mock_anthropic.py did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let s = start(MockConfig { script: thinking_rules(), ..MockConfig::default() }).await;
    let c = client();
    let mut runs = Vec::new();
    for base in [format!("http://127.0.0.1:{port}"), format!("http://{}", s.addr())] {
        let mut all = Vec::new();
        // First rule (once), then the default reply.
        for _ in 0..2 {
            let r = c
                .post(format!("{base}/v1/messages?beta=true"))
                .body(serde_json::to_vec(&streamed("what year?")).unwrap());
            let mut events = sse_events(&r.send().await.unwrap().text().await.unwrap());
            for (_, d) in &mut events {
                if let Some(m) = d.get_mut("message") {
                    m["id"] = json!("ID");
                    m["usage"] = json!("USAGE");
                }
                if d["content_block"]["type"] == "tool_use" {
                    d["content_block"]["id"] = json!("TOOL_ID");
                }
                if d["type"] == "message_delta" {
                    d["usage"] = json!("USAGE");
                }
            }
            all.push(events);
        }
        runs.push(all);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(runs[0].len(), 2);
    assert_eq!(runs[0][0].len(), 13);
    assert_eq!(runs[0], runs[1]);
}

#[tokio::test(flavor = "multi_thread")]
async fn count_tokens_counts_the_prompt() {
    let s = start(MockConfig::default()).await;
    let c = client();
    let body = json!({"model": MODEL, "messages": [{"role": "user", "content": "hello there"}]});
    let (status, h, v) = post(&c, &url(&s, "/v1/messages/count_tokens"), &body).await;
    assert_eq!(status, 200);
    assert!(h.contains_key("request-id"));
    assert_eq!(v, json!({"input_tokens": 9}));
    // With a system block and a tool: the sum of the blocks.
    let body = json!({"model": MODEL, "system": "be brief",
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "hello there"}]});
    let tool = serde_json::to_vec(&body["tools"][0]).unwrap().len() as u64;
    let (_, _, v) = post(&c, &url(&s, "/v1/messages/count_tokens"), &body).await;
    assert_eq!(v["input_tokens"], tool.div_ceil(4) + text_block_tokens("be brief") + 9);
    let (status, _, v) = post(&c, &url(&s, "/v1/messages/count_tokens"), &json!({"model": MODEL})).await;
    assert_eq!((status.as_u16(), v["error"]["message"].as_str()), (400, Some("messages: Field required")));
}

/// A growing conversation with cache_control on its last block: the
/// second request reads exactly the first one's prompt from the cache and
/// writes what was added.
#[tokio::test(flavor = "multi_thread")]
async fn second_request_of_a_growing_conversation_reads_the_cache() {
    let s = start(MockConfig::default()).await;
    let c = client();
    let system = json!([{"type": "text", "text": "You are a careful assistant. ".repeat(200), "cache_control": {"type": "ephemeral"}}]);
    let cc = json!({"type": "ephemeral"});
    let first = json!({"model": MODEL, "max_tokens": 100, "system": system, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "question one", "cache_control": cc}]}]});
    let second = json!({"model": MODEL, "max_tokens": 100, "system": system, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "question one"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "OK."}]},
        {"role": "user", "content": [{"type": "text", "text": "question two", "cache_control": cc}]}]});
    let count = |b: &Value| {
        let mut b = b.clone();
        b.as_object_mut().unwrap().remove("max_tokens");
        b
    };
    let (_, _, t1) = post(&c, &url(&s, "/v1/messages/count_tokens"), &count(&first)).await;
    let (_, _, t2) = post(&c, &url(&s, "/v1/messages/count_tokens"), &count(&second)).await;
    let (t1, t2) = (t1["input_tokens"].as_u64().unwrap(), t2["input_tokens"].as_u64().unwrap());
    assert!(t1 > 1024, "above the minimum cacheable length of {MODEL}: {t1}");

    let (_, _, r1) = post(&c, &url(&s, "/v1/messages"), &first).await;
    let u1 = &r1["usage"];
    // Nothing cached yet: everything through the last breakpoint is written (5m).
    assert_eq!((u1["input_tokens"].as_u64(), u1["cache_read_input_tokens"].as_u64()), (Some(0), Some(0)));
    assert_eq!(u1["cache_creation_input_tokens"].as_u64(), Some(t1));
    assert_eq!(u1["cache_creation"]["ephemeral_5m_input_tokens"].as_u64(), Some(t1));

    let (_, _, r2) = post(&c, &url(&s, "/v1/messages"), &second).await;
    let u2 = &r2["usage"];
    let prompt1 = u1["input_tokens"].as_u64().unwrap() + u1["cache_creation_input_tokens"].as_u64().unwrap();
    assert_eq!(u2["cache_read_input_tokens"].as_u64(), Some(prompt1));
    assert_eq!(u2["cache_creation_input_tokens"].as_u64(), Some(t2 - prompt1));
    assert_eq!(
        u2["cache_creation"],
        json!({"ephemeral_5m_input_tokens": t2 - prompt1, "ephemeral_1h_input_tokens": 0})
    );
    assert_eq!(u2["input_tokens"], 0);

    // Another API key (another organization) shares nothing.
    let r = c.post(url(&s, "/v1/messages")).header("x-api-key", "sk-other").body(serde_json::to_vec(&second).unwrap());
    let v: Value = serde_json::from_slice(&r.send().await.unwrap().bytes().await.unwrap()).unwrap();
    assert_eq!(v["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(v["usage"]["cache_creation_input_tokens"].as_u64(), Some(t2));
}

fn header<'h>(h: &'h HeaderMap, k: &str) -> &'h str {
    h.get(k).unwrap_or_else(|| panic!("no {k} header")).to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn rpm_limit_refuses_the_sixth_quick_request() {
    let s = start(MockConfig { rpm: Some(5), ..MockConfig::default() }).await;
    let c = client();
    for i in 0..5 {
        let (status, h, _) = post(&c, &url(&s, "/v1/messages"), &ask("hi")).await;
        assert_eq!(status, 200, "request {i}");
        assert_eq!(header(&h, "anthropic-ratelimit-requests-limit"), "5");
        assert_eq!(header(&h, "anthropic-ratelimit-requests-remaining"), (4 - i).to_string());
        assert!(header(&h, "anthropic-ratelimit-requests-reset").ends_with('Z'));
    }
    let (status, h, e) = post(&c, &url(&s, "/v1/messages"), &ask("hi")).await;
    assert_eq!(status, 429);
    let retry: u64 = header(&h, "retry-after").parse().unwrap();
    // One request comes back every 12 s at 5 per minute.
    assert!((1..=12).contains(&retry), "{retry}");
    assert_eq!(header(&h, "anthropic-ratelimit-requests-limit"), "5");
    assert_eq!(header(&h, "anthropic-ratelimit-requests-remaining"), "0");
    assert!(!h.contains_key("anthropic-ratelimit-input-tokens-limit"));
    assert_eq!(e["type"], "error");
    assert_eq!(e["error"]["type"], "rate_limit_error");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("rate limit for your organization of 5 requests per minute")
    );
    assert_eq!(e["request_id"].as_str(), Some(header(&h, "request-id")));
    let st = s.stats();
    assert_eq!((st.rate_limited, st.by_status.get(&429)), (1, Some(&1)));
}

#[tokio::test(flavor = "multi_thread")]
async fn itpm_limit_names_input_tokens() {
    let s = start(MockConfig { itpm: Some(100), otpm: Some(1000), ..MockConfig::default() }).await;
    let c = client();
    let text = "x".repeat(300);
    // {"type":"text","text":"xx…"}: 325 bytes.
    assert_eq!(text_block_tokens(&text), 82);
    let (status, h, _) = post(&c, &url(&s, "/v1/messages"), &ask(&text)).await;
    assert_eq!(status, 200);
    assert_eq!(header(&h, "anthropic-ratelimit-input-tokens-limit"), "100");
    assert_eq!(header(&h, "anthropic-ratelimit-input-tokens-remaining"), "18");
    assert_eq!(header(&h, "anthropic-ratelimit-output-tokens-remaining"), "968");
    assert_eq!(header(&h, "anthropic-ratelimit-tokens-limit"), "1100");
    let (status, h, e) = post(&c, &url(&s, "/v1/messages"), &ask(&text)).await;
    assert_eq!(status, 429);
    assert!(e["error"]["message"].as_str().unwrap().contains("of 100 input tokens per minute"), "{e}");
    // 82 − 18 = 64 tokens missing at 100/60 per second: 38.4 s.
    assert_eq!(header(&h, "retry-after"), "39");
}

/// Status of each of `n` distinct requests (concurrently), in request order.
async fn statuses(s: &MockServer, n: usize, tag: &str) -> Vec<u16> {
    let c = client();
    let u = url(s, "/v1/messages");
    futures_util::stream::iter(0..n)
        .map(|i| {
            let (c, u) = (c.clone(), u.clone());
            let body = serde_json::to_vec(&ask(&format!("{tag} {i}"))).unwrap();
            async move { c.post(u).body(body).send().await.unwrap().status().as_u16() }
        })
        .buffered(32)
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn faults_are_deterministic_per_seed_and_body() {
    let faults: Faults = "529=0.1".parse().unwrap();
    let run = |seed: u64, n: usize| {
        let faults = faults.clone();
        async move {
            let s = start(MockConfig { faults, seed, ..MockConfig::default() }).await;
            statuses(&s, n, "req").await
        }
    };
    let a = run(7, 2000).await;
    let b = run(7, 2000).await;
    assert_eq!(a, b, "same seed, same statuses");
    let c = run(8, 2000).await;
    assert_ne!(a, c, "another seed, other statuses");
    let share = a.iter().filter(|&&s| s == 529).count() as f64 / a.len() as f64;
    assert!((share - 0.10).abs() <= 0.02, "529 share {share}");
    assert!(a.iter().all(|&s| s == 200 || s == 529));

    // The same body sent again gets a fresh draw (a retry is not doomed).
    let s = start(MockConfig { faults: "529=0.5".parse().unwrap(), seed: 1, ..MockConfig::default() }).await;
    let c = client();
    let mut seen = Vec::new();
    for _ in 0..20 {
        seen.push(post(&c, &url(&s, "/v1/messages"), &ask("same")).await.0.as_u16());
    }
    assert!(seen.contains(&200) && seen.contains(&529), "{seen:?}");
    // An injected 529 is an overloaded_error with x-should-retry.
    let s = start(MockConfig { faults: "529=1".parse().unwrap(), ..MockConfig::default() }).await;
    let (status, h, e) = post(&c, &url(&s, "/v1/messages"), &ask("x")).await;
    assert_eq!((status.as_u16(), header(&h, "x-should-retry")), (529, "true"));
    assert_eq!(e["error"], json!({"type": "overloaded_error", "message": "Overloaded"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn drop_fault_makes_the_client_fail() {
    let s = start(MockConfig { faults: "drop=1".parse().unwrap(), ..MockConfig::default() }).await;
    let c = client();
    for body in [ask("hi"), streamed("hi")] {
        let got = async {
            let r = c.post(url(&s, "/v1/messages")).body(serde_json::to_vec(&body).unwrap()).send().await?;
            r.bytes().await
        }
        .await;
        assert!(got.is_err(), "a dropped reply must be an error, got {got:?}");
    }
    let st = s.shutdown().await.unwrap();
    assert_eq!((st.requests, st.dropped), (2, 2));
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_fault_and_latency_delay_the_reply() {
    let s = start(MockConfig {
        faults: "slow=1".parse().unwrap(),
        slow_ms: 300,
        latency: Latency::Fixed(100),
        ..MockConfig::default()
    })
    .await;
    let t = Instant::now();
    let (status, _, _) = post(&client(), &url(&s, "/v1/messages"), &ask("hi")).await;
    assert_eq!(status, 200);
    assert!(t.elapsed() >= Duration::from_millis(400), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread")]
async fn record_has_one_line_per_request_without_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    let s = start(MockConfig { record: Some(path.clone()), ..MockConfig::default() }).await;
    let c = client();
    let bodies: Vec<Vec<u8>> = vec![
        serde_json::to_vec(&ask("one")).unwrap(),
        // Not compact: raw_b64 keeps the bytes as sent.
        b"{ \"model\": \"m\",\n \"max_tokens\": 5, \"messages\": [] }".to_vec(),
        b"not json".to_vec(),
    ];
    for b in &bodies {
        c.post(url(&s, "/v1/messages?beta=true"))
            .header("x-api-key", "sk-secret")
            .header("authorization", "Bearer secret")
            .header("anthropic-version", "2023-06-01")
            .body(b.clone())
            .send()
            .await
            .unwrap();
    }
    get(&c, &url(&s, "/v1/messages/batches/nope")).await;
    s.shutdown().await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(keys(l), ["method", "path", "headers", "raw_b64", "body", "reply_rule"]);
        let h = l["headers"].as_object().unwrap();
        assert!(
            !h.keys().any(|k| k.eq_ignore_ascii_case("x-api-key") || k.eq_ignore_ascii_case("authorization")),
            "{h:?}"
        );
        assert!(!text.contains("secret"));
        let raw = base64::engine::general_purpose::STANDARD.decode(l["raw_b64"].as_str().unwrap()).unwrap();
        if i < 3 {
            assert_eq!(raw, bodies[i]);
            assert_eq!(l["path"], "/v1/messages?beta=true");
            assert_eq!(l["headers"]["anthropic-version"], "2023-06-01");
        }
    }
    assert_eq!(lines[0]["body"], ask("one"));
    assert_eq!(lines[1]["body"]["max_tokens"], 5);
    assert!(lines[2]["body"].is_null());
    assert_eq!((lines[3]["method"].as_str(), lines[3]["raw_b64"].as_str()), (Some("GET"), Some("")));
    // The captures' format: the same keys as a wire.jsonl line.
    let wire = std::fs::read_to_string("tests/fixtures/cc-2.1.328/thinking/wire.jsonl").unwrap();
    let first: Value = serde_json::from_str(wire.lines().next().unwrap()).unwrap();
    let mut a = keys(&first);
    let mut b = keys(&lines[0]);
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[tokio::test(flavor = "multi_thread")]
async fn script_rules_pick_the_right_replies() {
    let s = start(MockConfig { script: thinking_rules(), ..MockConfig::default() }).await;
    let c = client();
    let u = url(&s, "/v1/messages");
    // Rule 0 (once, not a tool result): thinking, text, tool_use.
    let (_, _, v) = post(&c, &u, &ask("what year is it?")).await;
    let types: Vec<&str> = v["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["thinking", "text", "tool_use"]);
    assert_eq!(v["stop_reason"], "tool_use");
    let tool = &v["content"][2];
    assert_eq!(
        (tool["name"].as_str(), &tool["input"]),
        (Some("Bash"), &json!({"command": "date +%Y", "description": "Year"}))
    );
    let tool_id = tool["id"].as_str().unwrap().to_string();
    assert!(tool_id.starts_with("toolu_01"));
    // Used once: the same question now gets the default reply.
    let (_, _, v) = post(&c, &u, &ask("what year is it?")).await;
    assert_eq!(v["content"], json!([{"type": "text", "text": "OK."}]));
    // Rule 1: the last user message is a tool result.
    let body = json!({"model": MODEL, "max_tokens": 100, "messages": [
        {"role": "user", "content": "what year is it?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "2026"}]}]});
    let (_, _, v) = post(&c, &u, &body).await;
    assert_eq!(v["content"][1], json!({"type": "text", "text": "It is the current year."}));
    assert_eq!(v["content"][0]["thinking"], "Got it.");
    assert_eq!(v["stop_reason"], "end_turn");

    // has_tool, last_user_contains, a status rule with headers, usage override.
    let rules = ctxasm::mock::script::parse_rules(&json!([
        {"when": {"has_tool": "Grep"}, "reply": {"blocks": [{"type": "text", "text": "grep it"}], "usage": {"output_tokens": 3}}},
        {"when": {"last_user_contains": "fail"}, "reply": {"status": 503, "error": {"type": "api_error", "message": "down"}, "headers": {"x-test": "1"}}},
    ]))
    .unwrap();
    let s = start(MockConfig { script: rules, ..MockConfig::default() }).await;
    let u = url(&s, "/v1/messages");
    let mut with_tool = ask("search");
    with_tool["tools"] = json!([{"name": "Grep", "input_schema": {"type": "object"}}]);
    let (_, _, v) = post(&c, &u, &with_tool).await;
    assert_eq!((v["content"][0]["text"].as_str(), v["usage"]["output_tokens"].as_u64()), (Some("grep it"), Some(3)));
    let (_, _, v) = post(&c, &u, &ask("search")).await;
    assert_eq!(v["content"][0]["text"], "OK.");
    let (status, h, e) = post(&c, &u, &ask("please fail")).await;
    assert_eq!((status.as_u16(), header(&h, "x-test")), (503, "1"));
    assert_eq!(e["error"], json!({"type": "api_error", "message": "down"}));
    assert_eq!(e["request_id"].as_str(), Some(header(&h, "request-id")));

    // A bad script names its file and the rule.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("rules.json");
    std::fs::write(&bad, r#"[{"reply": {"blocks": []}}, {"when": {"last_user": "x"}, "reply": {"blocks": []}}]"#)
        .unwrap();
    let e = load_script(&bad).unwrap_err().to_string();
    assert!(e.contains("rules.json: rule 1: unknown key when.last_user"), "{e}");
    std::fs::write(&bad, "[{").unwrap();
    let e = load_script(&bad).unwrap_err().to_string();
    assert!(e.contains("rules.json: invalid JSON") && e.contains("line 1"), "{e}");
}

/// Every captured request of the 14 Claude Code 2.1.328 scenarios, replayed
/// in order with the scenario's rules: the same rule answers it as
/// answered it in the capture (`reply_rule` of wire.jsonl), and the record
/// holds the bytes as sent.
#[tokio::test(flavor = "multi_thread")]
async fn captured_requests_get_the_captured_rules() {
    let c = client();
    let mut n = 0;
    let mut dirs: Vec<_> = std::fs::read_dir("tests/fixtures/cc-2.1.328").unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for dir in dirs {
        let rules = load_script(&dir.join("scenario.json")).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let rec = tmp.path().join("rec.jsonl");
        let s = start(MockConfig { script: rules, record: Some(rec.clone()), ..MockConfig::default() }).await;
        let wire = std::fs::read_to_string(dir.join("wire.jsonl")).unwrap();
        let mut sent = Vec::new();
        for line in wire.lines() {
            let w: Value = serde_json::from_str(line).unwrap();
            let raw = base64::engine::general_purpose::STANDARD.decode(w["raw_b64"].as_str().unwrap()).unwrap();
            let r = c.post(url(&s, w["path"].as_str().unwrap())).body(raw.clone()).send().await.unwrap();
            assert_eq!(r.status(), 200, "{dir:?}");
            let events = sse_events(&r.text().await.unwrap());
            assert_eq!(events.last().unwrap().0, "message_stop");
            sent.push((raw, w["reply_rule"].clone()));
            n += 1;
        }
        s.shutdown().await.unwrap();
        let recorded: Vec<Value> =
            std::fs::read_to_string(&rec).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(recorded.len(), sent.len());
        for (r, (raw, rule)) in recorded.iter().zip(&sent) {
            assert_eq!(&base64::engine::general_purpose::STANDARD.decode(r["raw_b64"].as_str().unwrap()).unwrap(), raw);
            assert_eq!(&r["reply_rule"], rule, "{dir:?}");
        }
    }
    assert_eq!(n, 29);
}

fn batch_req(id: &str, text: &str) -> Value {
    json!({"custom_id": id, "params": ask(text)})
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_lifecycle() {
    let s = start(MockConfig { batch_delay: Duration::from_millis(300), ..MockConfig::default() }).await;
    let c = client();
    let create = url(&s, "/v1/messages/batches");
    let body = json!({"requests": [batch_req("a", "one"), batch_req("b-2", "two"), batch_req("c_3", "three")]});
    let (status, _, b) = post(&c, &create, &body).await;
    assert_eq!(status, 200);
    let id = b["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("msgbatch_"));
    assert_eq!((b["type"].as_str(), b["processing_status"].as_str()), (Some("message_batch"), Some("in_progress")));
    assert_eq!(
        b["request_counts"],
        json!({"processing": 3, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
    );
    assert!(b["ended_at"].is_null() && b["results_url"].is_null());
    let created = ctxasm::time::parse_timestamp_ms(b["created_at"].as_str().unwrap()).unwrap();
    let expires = ctxasm::time::parse_timestamp_ms(b["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!(expires - created, 24 * 3600 * 1000);
    let (status, _, _) = get(&c, &url(&s, &format!("/v1/messages/batches/{id}/results"))).await;
    assert_eq!(status, 400);

    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, _, b) = get(&c, &url(&s, &format!("/v1/messages/batches/{id}"))).await;
    assert_eq!(status, 200);
    let b: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(b["processing_status"], "ended");
    assert_eq!(
        b["request_counts"],
        json!({"processing": 0, "succeeded": 3, "errored": 0, "canceled": 0, "expired": 0})
    );
    assert!(b["ended_at"].is_string());
    let (status, _, jsonl) = get(&c, b["results_url"].as_str().unwrap()).await;
    assert_eq!(status, 200);
    let results: Vec<Value> =
        String::from_utf8(jsonl).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut ids: Vec<&str> = results.iter().map(|r| r["custom_id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["a", "b-2", "c_3"]);
    for r in &results {
        assert_eq!(r["result"]["type"], "succeeded");
        assert_eq!(r["result"]["message"]["content"], json!([{"type": "text", "text": "OK."}]));
        assert!(r["result"]["message"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
    }

    // Cancel before the end: canceling, then ended with every request canceled.
    let s2 = start(MockConfig { batch_delay: Duration::from_secs(60), ..MockConfig::default() }).await;
    let (_, _, b) = post(&c, &url(&s2, "/v1/messages/batches"), &body).await;
    let id = b["id"].as_str().unwrap();
    let (status, _, b) = post(&c, &url(&s2, &format!("/v1/messages/batches/{id}/cancel")), &json!({})).await;
    assert_eq!((status.as_u16(), b["processing_status"].as_str()), (200, Some("canceling")));
    assert!(b["cancel_initiated_at"].is_string());
    let (_, _, b) = get(&c, &url(&s2, &format!("/v1/messages/batches/{id}"))).await;
    let b: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(b["processing_status"], "ended");
    assert_eq!(b["request_counts"]["canceled"], 3);
    let (_, _, jsonl) = get(&c, b["results_url"].as_str().unwrap()).await;
    assert!(String::from_utf8(jsonl).unwrap().lines().all(|l| l.contains(r#""result":{"type":"canceled"}"#)));

    // Bad requests: 400 invalid_request_error naming the position.
    let bad = |reqs: Value| json!({"requests": reqs});
    for (body, needle) in [
        (bad(json!([batch_req("ok", "x"), batch_req("bad id!", "y")])), "requests.1.custom_id"),
        (bad(json!([batch_req("same", "x"), batch_req("same", "y")])), "already used by requests.0"),
        (bad(json!([{"custom_id": "s", "params": streamed("x")}])), "requests.0.params.stream"),
        (bad(json!([])), "at least 1"),
    ] {
        let (status, _, e) = post(&c, &create, &body).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(e["error"]["type"], "invalid_request_error");
        assert!(e["error"]["message"].as_str().unwrap().contains(needle), "{e}");
    }
    let (status, _, e) = get(&c, &url(&s, "/v1/messages/batches/msgbatch_nope")).await;
    let e: Value = serde_json::from_slice(&e).unwrap();
    assert_eq!((status.as_u16(), e["error"]["type"].as_str()), (404, Some("not_found_error")));
}

/// Throughput smoke (debug build, record on): a loop of non-streaming
/// requests, 8 at a time; the record keeps up.
#[tokio::test(flavor = "multi_thread")]
async fn throughput_smoke() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let s = start(MockConfig { record: Some(rec.clone()), ..MockConfig::default() }).await;
    let c = client();
    let u = url(&s, "/v1/messages");
    let n = 2000;
    let t = Instant::now();
    let ok = futures_util::stream::iter(0..n)
        .map(|i| {
            let (c, u) = (c.clone(), u.clone());
            let body = serde_json::to_vec(&ask(&format!("request number {i}"))).unwrap();
            async move { c.post(u).body(body).send().await.unwrap().status() == 200 }
        })
        .buffer_unordered(8)
        .filter(|ok| std::future::ready(*ok))
        .count()
        .await;
    let rate = n as f64 / t.elapsed().as_secs_f64();
    eprintln!("throughput: {rate:.0} requests/s ({n} non-streaming requests, 8 in flight, record on)");
    assert_eq!(ok, n);
    assert!(rate >= 200.0, "{rate}");
    s.shutdown().await.unwrap();
    assert_eq!(std::fs::read_to_string(&rec).unwrap().lines().count(), n);
}

/// The binary: first line `listening on 127.0.0.1:PORT`, serves, and on
/// SIGTERM finishes the request in flight, exits 0, every request recorded.
#[tokio::test(flavor = "multi_thread")]
async fn binary_prints_its_port_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("rec.jsonl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ctxasm"))
        .args(["mock-server", "--addr", "127.0.0.1:0", "--latency-ms", "300", "--record"])
        .arg(&rec)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let addr = first.trim_end().strip_prefix("listening on ").unwrap_or_else(|| panic!("first line: {first:?}"));
    let port: u16 = addr.strip_prefix("127.0.0.1:").unwrap().parse().unwrap();
    assert_ne!(port, 0);
    let c = client();
    let u = format!("http://{addr}/v1/messages");
    for i in 0..4 {
        let (status, _, _) = post(&c, &u, &ask(&format!("n{i}"))).await;
        assert_eq!(status, 200);
    }
    // One more in flight (300 ms latency) when SIGTERM arrives.
    let in_flight = tokio::spawn({
        let (c, u) = (c.clone(), u.clone());
        async move { post(&c, &u, &ask("last")).await.0 }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let killed = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    assert_eq!(in_flight.await.unwrap(), 200);
    let out = tokio::task::spawn_blocking(move || child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("5 requests (200: 5)"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&rec).unwrap().lines().count(), 5);
    // Refused afterwards.
    assert!(c.post(&u).body("{}").send().await.is_err());
}

#[test]
fn binary_rejects_bad_flags_with_status_2() {
    for (args, needle) in [
        (vec!["--fail", "529=0.1,oops=1"], "--fail"),
        (vec!["--latency-ms", "9-1"], "--latency-ms"),
        (vec!["--rpm", "many"], "--rpm"),
        (vec!["--script", "/nonexistent/rules.json"], "--script"),
    ] {
        let out =
            std::process::Command::new(env!("CARGO_BIN_EXE_ctxasm")).arg("mock-server").args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty());
    }
}
