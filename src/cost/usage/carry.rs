//! The usage lines of a shard, carried in its partial report so that a
//! merge runs the rule once over the whole corpus's lines.
//!
//! ccusage's rule is corpus-global and order-dependent (files in path
//! order, a later copy may replace an earlier one): summing the shards'
//! counts would count twice a request copied into sessions of two shards
//! (a resumed or forked session, a copied corpus). Each shard therefore
//! carries its usage lines as they are before the rule (one per streamed
//! message of a file: consecutive copies already collapsed, see `usage`),
//! and `cost merge` runs [`dedup_files`](super::dedup_files) over the
//! lines of every shard: files never split across shards, so that is the
//! rule over the corpus, and the merged recorded report is the one a single
//! run computes, to the last bit.
//!
//! Lines are carried per file, with the file's session and project once;
//! a path that is not UTF-8 is carried lossily (its sort position may then
//! differ from a single run's).

use super::{Candidate, FileCandidates, RecordedRequest};
use crate::cost::tokens::TokenCounts;
use crate::time::parse_rfc3339_ms;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The usage lines of one file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarriedFile {
    /// The path as discovered.
    pub file: String,
    pub session_id: String,
    pub project: String,
    pub lines: Vec<CarriedLine>,
}

/// One usage line: what the rule compares and the report sums.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CarriedLine {
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_sidechain: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The line's `sessionId` when it is not the file's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_session: Option<String>,
    /// input, 5-minute cache writes, 1-hour cache writes, cache reads, output.
    pub tokens: [u64; 5],
}

/// The lines of `files` to carry (files without a usage line left out).
pub fn carry(files: &FileCandidates) -> Vec<CarriedFile> {
    files
        .iter()
        .filter_map(|(path, lines)| {
            let first = &lines.first()?.req;
            Some(CarriedFile {
                file: path.to_string_lossy().into_owned(),
                session_id: first.session_id.clone(),
                project: first.project.clone(),
                lines: lines
                    .iter()
                    .map(|c| {
                        let (r, t) = (&c.req, &c.req.tokens);
                        CarriedLine {
                            line: r.line,
                            timestamp: r.timestamp.clone(),
                            model: r.model.clone(),
                            message_id: r.message_id.clone(),
                            request_id: r.request_id.clone(),
                            is_sidechain: r.is_sidechain,
                            agent_id: r.agent_id.clone(),
                            line_session: (c.line_session != r.session_id).then(|| c.line_session.clone()),
                            tokens: [t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read, t.output],
                        }
                    })
                    .collect(),
            })
        })
        .collect()
}

/// The lines carried back, for [`dedup_files`](super::dedup_files).
pub fn uncarry(files: Vec<CarriedFile>) -> FileCandidates {
    files
        .into_iter()
        .map(|f| {
            let lines = f
                .lines
                .into_iter()
                .map(|l| {
                    let [input, cache_write_5m, cache_write_1h, cache_read, output] = l.tokens;
                    Candidate {
                        line_session: l.line_session.unwrap_or_else(|| f.session_id.clone()),
                        ts_ms: l.timestamp.as_deref().and_then(parse_rfc3339_ms),
                        req: RecordedRequest {
                            session_id: f.session_id.clone(),
                            project: f.project.clone(),
                            agent_id: l.agent_id,
                            file: f.file.clone(),
                            line: l.line,
                            timestamp: l.timestamp,
                            model: l.model,
                            message_id: l.message_id,
                            request_id: l.request_id,
                            is_sidechain: l.is_sidechain,
                            tokens: TokenCounts { input, cache_write_5m, cache_write_1h, cache_read, output },
                            cost_usd: None,
                            long_context: false,
                        },
                    }
                })
                .collect();
            (PathBuf::from(f.file), lines)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_back_as_they_went() {
        let req = |line: u32, side: bool| RecordedRequest {
            session_id: "s1".into(),
            project: "p".into(),
            agent_id: side.then(|| "a1".to_string()),
            file: "/x/p/s1.jsonl".into(),
            line,
            timestamp: Some("2026-01-01T00:00:00.123Z".into()),
            model: Some("claude-opus-4-8".into()),
            message_id: Some(format!("m{line}")),
            request_id: (line > 1).then(|| format!("r{line}")),
            is_sidechain: side,
            tokens: TokenCounts { input: 1, cache_write_5m: 2, cache_write_1h: 3, cache_read: 4, output: line.into() },
            cost_usd: None,
            long_context: false,
        };
        let cand = |line, sid: &str, side| Candidate {
            req: req(line, side),
            line_session: sid.into(),
            ts_ms: parse_rfc3339_ms("2026-01-01T00:00:00.123Z"),
        };
        let files: FileCandidates = vec![
            (PathBuf::from("/x/p/s1.jsonl"), vec![cand(1, "s1", false), cand(2, "other", true)]),
            (PathBuf::from("/x/p/empty.jsonl"), Vec::new()),
        ];
        let carried = carry(&files);
        assert_eq!(carried.len(), 1);
        let json = serde_json::to_string(&carried).unwrap();
        assert!(json.contains(r#""line_session":"other""#) && !json.contains(r#""line_session":"s1""#), "{json}");
        let back = uncarry(serde_json::from_str(&json).unwrap());
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].0, files[0].0);
        for (b, a) in back[0].1.iter().zip(&files[0].1) {
            assert_eq!((&b.req, &b.line_session, b.ts_ms), (&a.req, &a.line_session, a.ts_ms));
        }
    }
}
