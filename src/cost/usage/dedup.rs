//! The rule that counts each request once (ccusage 20.0.24's, as the
//! module docs of `usage` state it): [`dedup_files`] takes the usage lines
//! of files in path order and keeps one request per streamed message,
//! copy or sidechain replay.
//!
//! Works on [`Candidate`]s only: reading the lines is `usage`'s, summing
//! them `report`'s.

use super::{Candidate, FileCandidates, RecordedRequest};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::path::Path;

/// The rule of the module docs over `files` in path order, then line order;
/// not priced.
pub fn dedup_files(mut files: FileCandidates) -> Vec<RecordedRequest> {
    files.sort_by(|a, b| path_bytes(&a.0).cmp(path_bytes(&b.0)));
    dedup(files.into_iter().flat_map(|(_, c)| c))
}

fn path_bytes(p: &Path) -> &[u8] {
    p.as_os_str().as_encoded_bytes()
}

/// ccusage's preference (rule 4): `true` when `new` replaces `kept`.
pub(super) fn preferred(new: &RecordedRequest, kept: &RecordedRequest) -> bool {
    if new.is_sidechain != kept.is_sidechain {
        return kept.is_sidechain;
    }
    new.tokens.total() > kept.tokens.total()
}

fn push_index(list: &mut SmallVec<[usize; 2]>, i: usize) {
    if !list.contains(&i) {
        list.push(i);
    }
}

/// The exact key of rule 2: (message id, request id), and the line session
/// when there is no request id.
type ExactKey = (String, Option<String>, Option<String>);

fn exact_key(c: &Candidate, mid: &str) -> ExactKey {
    let session = c.req.request_id.is_none().then(|| c.line_session.clone());
    (mid.to_string(), c.req.request_id.clone(), session)
}

/// The rule of the module docs over `lines` in order; each kept request is
/// at the position of its first line.
fn dedup(lines: impl IntoIterator<Item = Candidate>) -> Vec<RecordedRequest> {
    let mut kept: Vec<Candidate> = Vec::new();
    // Exact key / message id → positions in `kept` (ccusage's index lists: a
    // position stays listed under a key its line no longer has, so every hit
    // is checked against the kept line).
    let mut by_key: FxHashMap<ExactKey, SmallVec<[usize; 2]>> = FxHashMap::default();
    let mut by_message: FxHashMap<String, SmallVec<[usize; 2]>> = FxHashMap::default();
    for line in lines {
        let Some(mid) = line.req.message_id.clone() else {
            kept.push(line);
            continue;
        };
        let key = exact_key(&line, &mid);
        let exact = by_key.get(&key).and_then(|list| {
            list.iter().copied().find(|&i| kept[i].req.message_id.is_some() && exact_key(&kept[i], &mid) == key)
        });
        let found = exact.or_else(|| {
            by_message.get(&mid).and_then(|list| {
                list.iter().copied().find(|&i| {
                    let k = &kept[i];
                    k.req.message_id.as_deref() == Some(mid.as_str())
                        && (line.req.is_sidechain || k.req.is_sidechain)
                        && k.line_session == line.line_session
                        && k.ts_ms.is_some()
                        && k.ts_ms == line.ts_ms
                })
            })
        });
        let i = match found {
            Some(i) => {
                if !preferred(&line.req, &kept[i].req) {
                    continue;
                }
                kept[i] = line;
                i
            }
            None => {
                kept.push(line);
                kept.len() - 1
            }
        };
        push_index(by_key.entry(key).or_default(), i);
        push_index(by_message.entry(mid).or_default(), i);
    }
    kept.into_iter().map(|c| c.req).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::tokens::TokenCounts;
    use crate::time::parse_rfc3339_ms;

    const T0: &str = "2026-01-01T00:00:00.000Z";
    const T1: &str = "2026-01-01T01:00:00.000Z";

    /// A usage line: message id, request id, sidechain, input tokens, line,
    /// session, timestamp.
    fn c(mid: Option<&str>, rid: Option<&str>, sc: bool, input: u64, line: u32, sid: &str, ts: &str) -> Candidate {
        Candidate {
            req: RecordedRequest {
                session_id: sid.into(),
                project: "p".into(),
                agent_id: None,
                file: "f".into(),
                line,
                timestamp: Some(ts.into()),
                model: None,
                message_id: mid.map(str::to_string),
                request_id: rid.map(str::to_string),
                is_sidechain: sc,
                tokens: TokenCounts { input, ..TokenCounts::default() },
                cost_usd: None,
                long_context: false,
            },
            line_session: sid.into(),
            ts_ms: parse_rfc3339_ms(ts),
        }
    }

    fn kept(lines: Vec<Candidate>) -> Vec<(u32, u64)> {
        dedup(lines).iter().map(|r| (r.line, r.tokens.input)).collect()
    }

    #[test]
    fn streamed_copies_keep_the_largest_usage_at_the_first_position() {
        let s = "S1";
        let out = kept(vec![
            c(Some("m1"), Some("r1"), false, 5, 1, s, T0),
            c(Some("m2"), Some("r2"), false, 7, 2, s, T0),
            c(Some("m1"), Some("r1"), false, 500, 3, s, T1),
            c(Some("m1"), Some("r1"), false, 500, 4, s, T1),
            c(Some("m1"), Some("r1"), false, 4, 5, s, T1),
            c(None, None, false, 1, 6, s, T0),
            c(None, None, false, 1, 7, s, T0),
            // Same message id, another request id, both main chain: distinct.
            c(Some("m1"), Some("r9"), false, 2, 8, s, T0),
            // Without a request id: one request per session.
            c(Some("m3"), None, false, 3, 9, s, T0),
            c(Some("m3"), None, false, 6, 10, s, T1),
            c(Some("m3"), None, false, 8, 11, "S2", T0),
        ]);
        assert_eq!(out, vec![(3, 500), (2, 7), (6, 1), (7, 1), (8, 2), (10, 6), (11, 8)]);
    }

    /// The cases measured on the ccusage 20.0.24 binary (input tokens of the
    /// lines → what it counts).
    #[test]
    fn ccusage_20_0_24_cases() {
        let (m, r1, r2) = (Some("m1"), Some("r1"), Some("r2"));
        // An exact copy: main chain beats sidechain, whatever the order and size.
        assert_eq!(kept(vec![c(m, r1, true, 100, 1, "S1", T0), c(m, r1, false, 10, 2, "S1", T0)]), [(2, 10)]);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, true, 100, 2, "S1", T0)]), [(1, 10)]);
        // Exact copies collapse across sessions and timestamps.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, false, 20, 2, "S2", T1)]), [(2, 20)]);
        // A sidechain replay (new request id): same session and timestamp only.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 100, 2, "S1", T0)]), [(1, 10)]);
        assert_eq!(kept(vec![c(m, r2, true, 100, 1, "S1", T0), c(m, r1, false, 10, 2, "S1", T0)]), [(2, 10)]);
        assert_eq!(kept(vec![c(m, r1, false, 100, 1, "S1", T0), c(m, r2, true, 10, 2, "S1", T0)]), [(1, 100)]);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 100, 2, "S1", T1)]).len(), 2);
        let t0_no_millis = "2026-01-01T00:00:00Z";
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", t0_no_millis), c(m, r2, true, 20, 2, "S1", T0)]).len(), 1);
        let near = "2026-01-01T00:00:00.001Z";
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S1", near)]).len(), 2);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S2", T0)]).len(), 2);
        assert_eq!(kept(vec![c(m, r1, true, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S1", T0)]), [(2, 20)]);
        assert_eq!(kept(vec![c(m, r1, true, 10, 1, "S1", T0), c(m, r2, true, 20, 2, "S1", T1)]).len(), 2);
        // Same message id, new request id, both main chain: two requests.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r2, false, 100, 2, "S1", T0)]).len(), 2);
        // No request id: by session, any timestamp; main chain wins.
        assert_eq!(kept(vec![c(m, None, false, 10, 1, "S1", T0), c(m, None, false, 20, 2, "S1", T1)]), [(2, 20)]);
        assert_eq!(kept(vec![c(m, None, false, 10, 1, "S1", T0), c(m, None, false, 20, 2, "S2", T0)]).len(), 2);
        assert_eq!(kept(vec![c(m, None, true, 30, 1, "S1", T0), c(m, None, false, 20, 2, "S1", T0)]), [(2, 20)]);
        // Equal totals: the first stays; a later smaller copy does not replace.
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, false, 10, 2, "S1", T0)]), [(1, 10)]);
        assert_eq!(kept(vec![c(m, r1, false, 10, 1, "S1", T0), c(m, r1, false, 5, 2, "S1", T0)]), [(1, 10)]);
    }
}
