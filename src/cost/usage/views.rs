//! The views of the bill ccusage users know (`ctxasm cost daily|monthly|
//! session|blocks`): the recorded usage, counted and priced as
//! [`RecordedReport`](super::RecordedReport) counts it, grouped per day or
//! per month in a time zone, per session, or per 5-hour billing block;
//! filtered by date (in that zone) and project; each row with its
//! per-model breakdown.
//!
//! Billing blocks, as ccusage 20.0.24 draws them (its `blocks --json` on
//! the public corpus gives the same blocks, `tests/it/cost_views.rs`):
//! requests in time order; a block starts at the hour (UTC) of its first
//! request and spans `block_ms` (5 hours); a request more than `block_ms`
//! after its block's start, or after the block's last request, starts a
//! new block; when the pause after the last request is longer than
//! `block_ms`, a gap row spans from `block_ms` after that request to the
//! next one. A block is active while `now` is before its end and less
//! than `block_ms` after its last request.
//!
//! Sums only; nothing is printed here.

use super::report::{PricingInfo, ReqView, Stamp, UsageSum};
use crate::cost::pricing::Pricing;
use crate::diag::Diagnostic;
use crate::time::{format_rfc3339_ms, parse_rfc3339_ms};
use jiff::civil::Date;
use jiff::tz::TimeZone;
use serde::Serialize;
use std::collections::BTreeMap;

/// Which view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ViewKind {
    Daily,
    Monthly,
    Session,
    Blocks,
}

/// Five hours: a billing block (ccusage's default `--session-length`).
pub const BLOCK_MS: i64 = 5 * 3600 * 1000;

/// What to show.
#[derive(Debug, Clone)]
pub struct ViewOptions {
    pub kind: ViewKind,
    /// Days and months, and `since`/`until`, are dates in this zone.
    pub tz: TimeZone,
    /// First and last date kept (inclusive).
    pub since: Option<Date>,
    pub until: Option<Date>,
    /// Only this project (the directory name under the projects root).
    pub project: Option<String>,
    pub block_ms: i64,
    /// The instant a block is judged active against (ms since the epoch).
    pub now_ms: i64,
}

/// A billing block's own fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockInfo {
    pub start: String,
    /// `start` + the block length; a gap's: the next request's instant.
    pub end: String,
    /// The block's last request (`None` for a gap).
    pub actual_end: Option<String>,
    pub gap: bool,
    pub active: bool,
}

/// One row of a view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewRow {
    /// `2025-06-14`, `2025-06`, a session id, or a block's start instant
    /// (`gap-` before it for a gap).
    pub key: String,
    /// The session's project (session view).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    /// Models in order of first use.
    pub models: Vec<String>,
    #[serde(flatten)]
    pub usage: UsageSum,
    pub by_model: BTreeMap<String, UsageSum>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<BlockInfo>,
}

/// A view of the recorded usage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageView {
    pub view: ViewKind,
    /// The zone's IANA name (or its fixed offset).
    pub timezone: String,
    pub since: Option<String>,
    pub until: Option<String>,
    pub project: Option<String>,
    pub rows: Vec<ViewRow>,
    /// The rows' sum.
    pub total: UsageSum,
    /// Requests left out because they have no timestamp (no day, month or
    /// block); the session view keeps them.
    pub without_timestamp: u64,
    pub pricing: PricingInfo,
    pub diagnostics: Vec<Diagnostic>,
}

/// A row being summed.
#[derive(Debug, Default)]
struct Acc {
    project: Option<String>,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    models: Vec<String>,
    usage: UsageSum,
    by_model: BTreeMap<String, UsageSum>,
}

impl Acc {
    fn add(&mut self, r: &ReqView<'_>, ms: Option<i64>) {
        if let Some(ms) = ms {
            self.first_ms = Some(self.first_ms.map_or(ms, |f| f.min(ms)));
            self.last_ms = Some(self.last_ms.map_or(ms, |l| l.max(ms)));
        }
        let model = r.model.unwrap_or("unknown");
        if !self.models.iter().any(|m| m == model) {
            self.models.push(model.to_string());
        }
        self.usage.add(r);
        match self.by_model.get_mut(model) {
            Some(m) => m.add(r),
            None => self.by_model.entry(model.to_string()).or_default().add(r),
        }
    }

    fn row(self, key: String, block: Option<BlockInfo>) -> ViewRow {
        ViewRow {
            key,
            project: self.project,
            first_timestamp: self.first_ms.map(|ms| format_rfc3339_ms(ms, true)),
            last_timestamp: self.last_ms.map(|ms| format_rfc3339_ms(ms, true)),
            models: self.models,
            usage: self.usage,
            by_model: self.by_model,
            block,
        }
    }
}

fn ms_of(stamp: Stamp<'_>) -> Option<i64> {
    match stamp {
        Stamp::None => None,
        Stamp::Text(t) => parse_rfc3339_ms(t),
        Stamp::Ms(ms) => Some(ms),
    }
}

/// The date of instant `ms` in `tz`.
fn date_in(ms: i64, tz: &TimeZone) -> Option<Date> {
    jiff::Timestamp::from_millisecond(ms).ok().map(|t| tz.to_datetime(t).date())
}

/// A row's key while summing: no string is made per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Key<'r> {
    Day(Date),
    Month(i16, i8),
    /// (project, session id)
    Session(&'r str, &'r str),
}

impl Key<'_> {
    fn text(self) -> String {
        match self {
            Key::Day(d) => d.to_string(),
            Key::Month(y, m) => format!("{y:04}-{m:02}"),
            Key::Session(_, sid) => sid.to_string(),
        }
    }
}

/// The view of `requests` (in the order the rule keeps them).
pub(super) fn build<'r>(
    requests: impl Iterator<Item = ReqView<'r>>,
    opts: &ViewOptions,
    pricing: &Pricing,
    mut diagnostics: Vec<Diagnostic>,
) -> UsageView {
    diagnostics.sort();
    diagnostics.dedup();
    let mut without_timestamp = 0;
    let mut groups: BTreeMap<Key<'r>, Acc> = BTreeMap::new();
    let mut timed: Vec<(i64, ReqView<'r>)> = Vec::new();
    for r in requests {
        if opts.project.as_deref().is_some_and(|p| p != r.project) {
            continue;
        }
        let ms = ms_of(r.stamp);
        let date = ms.and_then(|ms| date_in(ms, &opts.tz));
        if let Some(d) = date {
            if opts.since.is_some_and(|s| d < s) || opts.until.is_some_and(|u| d > u) {
                continue;
            }
        } else if opts.kind != ViewKind::Session {
            without_timestamp += 1;
            continue;
        } else if opts.since.is_some() || opts.until.is_some() {
            // No date to keep it by.
            without_timestamp += 1;
            continue;
        }
        let key = match (opts.kind, date) {
            (ViewKind::Daily, Some(d)) => Key::Day(d),
            (ViewKind::Monthly, Some(d)) => Key::Month(d.year(), d.month()),
            (ViewKind::Session, _) => Key::Session(r.project, r.session_id),
            (ViewKind::Blocks, _) => {
                if let Some(ms) = ms {
                    timed.push((ms, r));
                }
                continue;
            }
            // No date: counted above.
            _ => continue,
        };
        let acc = groups.entry(key).or_default();
        if opts.kind == ViewKind::Session {
            acc.project.get_or_insert_with(|| r.project.to_string());
        }
        acc.add(&r, ms);
    }
    let mut rows: Vec<ViewRow> = match opts.kind {
        ViewKind::Blocks => blocks(timed, opts),
        ViewKind::Session => {
            let mut rows: Vec<ViewRow> = groups.into_iter().map(|(k, acc)| acc.row(k.text(), None)).collect();
            // By last activity, as ccusage lists sessions.
            rows.sort_by(|a, b| a.last_timestamp.cmp(&b.last_timestamp).then_with(|| a.key.cmp(&b.key)));
            rows
        }
        _ => groups.into_iter().map(|(k, acc)| acc.row(k.text(), None)).collect(),
    };
    let mut total = UsageSum::default();
    for row in &mut rows {
        total.merge(&row.usage);
    }
    UsageView {
        view: opts.kind,
        timezone: opts.tz.iana_name().map_or_else(|| format!("{:?}", opts.tz), str::to_string),
        since: opts.since.map(|d| d.to_string()),
        until: opts.until.map(|d| d.to_string()),
        project: opts.project.clone(),
        rows,
        total,
        without_timestamp,
        pricing: PricingInfo::of(pricing),
        diagnostics,
    }
}

/// The billing blocks of the timed requests (module docs).
fn blocks(mut timed: Vec<(i64, ReqView<'_>)>, opts: &ViewOptions) -> Vec<ViewRow> {
    timed.sort_by_key(|(ms, _)| *ms);
    let len = opts.block_ms.max(1);
    let hour = 3_600_000;
    let mut rows = Vec::new();
    let mut cur: Option<(i64, Acc)> = None;
    let close = |start: i64, acc: Acc, rows: &mut Vec<ViewRow>| {
        let last = acc.last_ms.unwrap_or(start);
        let end = start + len;
        let info = BlockInfo {
            start: format_rfc3339_ms(start, true),
            end: format_rfc3339_ms(end, true),
            actual_end: Some(format_rfc3339_ms(last, true)),
            gap: false,
            active: opts.now_ms < end && opts.now_ms - last < len,
        };
        rows.push(acc.row(info.start.clone(), Some(info)));
    };
    for (ms, r) in &timed {
        if let Some((start, acc)) = &cur {
            let last = acc.last_ms.unwrap_or(*start);
            if ms - start > len || ms - last > len {
                let (start, acc) = cur.take().unwrap_or_default();
                close(start, acc, &mut rows);
                if ms - last > len {
                    let info = BlockInfo {
                        start: format_rfc3339_ms(last + len, true),
                        end: format_rfc3339_ms(*ms, true),
                        actual_end: None,
                        gap: true,
                        active: false,
                    };
                    rows.push(Acc::default().row(format!("gap-{}", info.start), Some(info)));
                }
            }
        }
        let (_, acc) = cur.get_or_insert_with(|| (ms.div_euclid(hour) * hour, Acc::default()));
        acc.add(r, Some(*ms));
    }
    if let Some((start, acc)) = cur {
        close(start, acc, &mut rows);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::tokens::TokenCounts;

    fn req(ts: &'static str, session: &'static str, model: &'static str, input: u64, cost: f64) -> ReqView<'static> {
        ReqView {
            session_id: session,
            project: if session == "s3" { "other" } else { "proj" },
            stamp: Stamp::Text(ts),
            model: Some(model),
            tokens: TokenCounts { input, output: 1, ..TokenCounts::default() },
            cost_usd: Some(cost),
            long_context: false,
        }
    }

    fn opts(kind: ViewKind) -> ViewOptions {
        ViewOptions {
            kind,
            tz: TimeZone::UTC,
            since: None,
            until: None,
            project: None,
            block_ms: BLOCK_MS,
            now_ms: parse_rfc3339_ms("2026-01-01T00:00:00Z").unwrap_or_default(),
        }
    }

    fn sample() -> Vec<ReqView<'static>> {
        vec![
            req("2025-06-14T23:54:55.558Z", "s1", "claude-sonnet-4", 10, 1.0),
            req("2025-06-14T23:10:00Z", "s1", "claude-sonnet-4", 20, 2.0),
            // 4 h 55 min after the block's start (23:00): same block.
            req("2025-06-15T03:55:00Z", "s2", "claude-opus-4", 30, 4.0),
            // 5 h 5 min after the start, 10 min after the last: a new block, no gap.
            req("2025-06-15T04:05:00Z", "s2", "claude-opus-4", 40, 8.0),
            // More than 5 h after the last: a gap, then a block at 15:00.
            req("2025-07-01T15:30:00Z", "s3", "claude-sonnet-4", 50, 16.0),
            ReqView { stamp: Stamp::None, ..req("2025-07-01T15:30:00Z", "s3", "claude-sonnet-4", 60, 32.0) },
        ]
    }

    fn keys(v: &UsageView) -> Vec<(String, u64, f64)> {
        v.rows.iter().map(|r| (r.key.clone(), r.usage.totals.input_tokens, r.usage.totals.cost_usd)).collect()
    }

    #[test]
    fn days_and_months_in_a_zone() {
        let p = &Pricing::builtin();
        let v = build(sample().into_iter(), &opts(ViewKind::Daily), p, Vec::new());
        let want = [("2025-06-14", 30, 3.0), ("2025-06-15", 70, 12.0), ("2025-07-01", 50, 16.0)];
        assert_eq!(keys(&v), want.map(|(k, i, c)| (k.to_string(), i, c)));
        assert_eq!((v.without_timestamp, v.total.totals.input_tokens, v.total.totals.cost_usd), (1, 150, 31.0));
        assert_eq!(v.rows[1].models, ["claude-opus-4"]);
        assert_eq!(v.rows[1].by_model["claude-opus-4"].totals.requests, 2);
        // In New York (UTC-4 in June) the 23:xx UTC requests are the 14th's
        // and the 03:55 one too; 04:05 UTC is 00:05 on the 15th.
        let ny = ViewOptions { tz: TimeZone::get("America/New_York").unwrap(), ..opts(ViewKind::Daily) };
        let v = build(sample().into_iter(), &ny, p, Vec::new());
        let want = [("2025-06-14", 60, 7.0), ("2025-06-15", 40, 8.0), ("2025-07-01", 50, 16.0)];
        assert_eq!(keys(&v), want.map(|(k, i, c)| (k.to_string(), i, c)));
        assert_eq!(v.timezone, "America/New_York");
        let v = build(sample().into_iter(), &opts(ViewKind::Monthly), p, Vec::new());
        assert_eq!(keys(&v), [("2025-06".to_string(), 100, 15.0), ("2025-07".to_string(), 50, 16.0)]);
    }

    #[test]
    fn filters_by_date_and_project() {
        let p = &Pricing::builtin();
        let since = ViewOptions {
            since: Some(jiff::civil::date(2025, 6, 15)),
            until: Some(jiff::civil::date(2025, 6, 30)),
            ..opts(ViewKind::Daily)
        };
        let v = build(sample().into_iter(), &since, p, Vec::new());
        assert_eq!(keys(&v), [("2025-06-15".to_string(), 70, 12.0)]);
        assert_eq!(v.since.as_deref(), Some("2025-06-15"));
        let other = ViewOptions { project: Some("other".into()), ..opts(ViewKind::Session) };
        let v = build(sample().into_iter(), &other, p, Vec::new());
        // The session view keeps the request without a timestamp.
        assert_eq!(keys(&v), [("s3".to_string(), 110, 48.0)]);
        assert_eq!(v.rows[0].project.as_deref(), Some("other"));
        assert_eq!(v.without_timestamp, 0);
    }

    #[test]
    fn sessions_by_last_activity() {
        let v = build(sample().into_iter(), &opts(ViewKind::Session), &Pricing::builtin(), Vec::new());
        assert_eq!(
            keys(&v),
            [("s1".to_string(), 30, 3.0), ("s2".to_string(), 70, 12.0), ("s3".to_string(), 110, 48.0)]
        );
        assert_eq!(v.rows[0].first_timestamp.as_deref(), Some("2025-06-14T23:10:00.000Z"));
        assert_eq!(v.rows[0].last_timestamp.as_deref(), Some("2025-06-14T23:54:55.558Z"));
    }

    #[test]
    fn billing_blocks_and_gaps() {
        let v = build(sample().into_iter(), &opts(ViewKind::Blocks), &Pricing::builtin(), Vec::new());
        assert_eq!(
            keys(&v),
            [
                ("2025-06-14T23:00:00.000Z".to_string(), 60, 7.0),
                ("2025-06-15T04:00:00.000Z".to_string(), 40, 8.0),
                ("gap-2025-06-15T09:05:00.000Z".to_string(), 0, 0.0),
                ("2025-07-01T15:00:00.000Z".to_string(), 50, 16.0),
            ]
        );
        let b: Vec<&BlockInfo> = v.rows.iter().filter_map(|r| r.block.as_ref()).collect();
        assert_eq!(b[0].end, "2025-06-15T04:00:00.000Z");
        assert_eq!(b[0].actual_end.as_deref(), Some("2025-06-15T03:55:00.000Z"));
        assert_eq!((b[2].gap, b[2].end.as_str(), b[2].actual_end.as_deref()), (true, "2025-07-01T15:30:00.000Z", None));
        assert!(b.iter().all(|b| !b.active));
        assert_eq!(v.without_timestamp, 1);
        // Ten minutes after the last request, the last block is active.
        let now = ViewOptions {
            now_ms: parse_rfc3339_ms("2025-07-01T15:40:00Z").unwrap_or_default(),
            ..opts(ViewKind::Blocks)
        };
        let v = build(sample().into_iter(), &now, &Pricing::builtin(), Vec::new());
        let active: Vec<bool> = v.rows.iter().map(|r| r.block.as_ref().is_some_and(|b| b.active)).collect();
        assert_eq!(active, [false, false, false, true]);
    }
}
