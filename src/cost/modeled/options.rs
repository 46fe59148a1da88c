//! What `ctxasm cost` is asked to model: which sessions share a cache
//! ([`Account`]), the what-ifs as written on the command line ([`WhatIf`],
//! parsed and printed back), and the [`ModelOptions`] of a run.
//!
//! Plain data and its parsing: applying a what-if is `what_if`'s.

use crate::cost::pricing::{Pricing, UnknownModel};
use crate::cost::sim::{Estimator, SimConfig, Ttl};

/// Which sessions share a cache (facts §1.7: per organization / workspace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Account {
    /// Every session under the same projects root (`~/.claude/projects`).
    #[default]
    Root,
    /// Every session of the same project folder.
    Project,
    /// Each session alone.
    Session,
}

impl std::str::FromStr for Account {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "root" => Ok(Account::Root),
            "project" => Ok(Account::Project),
            "session" => Ok(Account::Session),
            other => Err(format!("expected root, project or session, got {other:?}")),
        }
    }
}

/// Where the cache boundary before the messages sits (`--what-if boundary=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// No breakpoint on tools or system: only the messages' breakpoints.
    None,
    /// One more breakpoint on the last tool, so the tool list is cached
    /// apart from the system prompt (facts §1.1 [TUPC]).
    Tools,
}

/// One change to the requests, simulated against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub enum WhatIf {
    /// Every breakpoint with this TTL (`ttl=1h`, `ttl=5m`).
    Ttl(Ttl),
    /// N breakpoints per request (`breakpoints=N`, 0–4), in this order: the
    /// last block of the last user message, the request's tool / system
    /// breakpoints (newest first), the last block of each earlier user
    /// message (newest first).
    Breakpoints(usize),
    /// Every request sent to this model (`model=NAME`): its price, its
    /// minimum cacheable length and its tokenizer (the counts ×1.3 from a
    /// model before Claude 4.7 to one from 4.7 on, ÷1.3 the other way:
    /// `pricing::tokenizer_factor`).
    Model(String),
    /// The system prompt longer by this many bytes (`system-prompt-growth=BYTES`,
    /// negative shrinks it), in tokens by the fitted estimator.
    SystemPromptGrowth(i64),
    /// Each session its own cache (`no-cross-session-cache`); a prefix the
    /// baseline warmed for an unseen writer stays warm (`replay`'s docs).
    NoCrossSessionCache,
    /// `boundary=none|tools`.
    Boundary(Boundary),
}

impl std::str::FromStr for WhatIf {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (k, v) = s.split_once('=').unwrap_or((s, ""));
        let bad = |what: &str| format!("--what-if {s:?}: {what}");
        match (k, v) {
            ("ttl", "1h") => Ok(WhatIf::Ttl(Ttl::OneHour)),
            ("ttl", "5m") => Ok(WhatIf::Ttl(Ttl::FiveMinutes)),
            ("ttl", _) => Err(bad("ttl is 5m or 1h")),
            ("breakpoints", n) => match n.parse::<usize>() {
                Ok(n) if n <= 4 => Ok(WhatIf::Breakpoints(n)),
                _ => Err(bad("breakpoints is 0 to 4 (the API refuses more than 4)")),
            },
            ("model", m) if !m.is_empty() => Ok(WhatIf::Model(m.to_string())),
            ("model", _) => Err(bad("model needs a name")),
            ("system-prompt-growth", b) => b
                .parse::<i64>()
                .map(WhatIf::SystemPromptGrowth)
                .map_err(|_| bad("system-prompt-growth is a number of bytes")),
            ("no-cross-session-cache", "") => Ok(WhatIf::NoCrossSessionCache),
            ("boundary", "none") => Ok(WhatIf::Boundary(Boundary::None)),
            ("boundary", "tools") => Ok(WhatIf::Boundary(Boundary::Tools)),
            ("boundary", _) => Err(bad("boundary is none or tools")),
            _ => Err(bad(
                "expected ttl=1h|5m, breakpoints=N, model=NAME, system-prompt-growth=BYTES, no-cross-session-cache or boundary=none|tools",
            )),
        }
    }
}

impl WhatIf {
    /// Whether `pricing` can price this what-if: `model=NAME` needs a row
    /// for NAME (else every request would cost 0 and the delta be −100 %).
    pub fn check(&self, pricing: &Pricing) -> Result<(), UnknownModel> {
        match self {
            WhatIf::Model(m) => pricing.lookup(m).map(|_| ()),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for WhatIf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WhatIf::Ttl(Ttl::OneHour) => write!(f, "ttl=1h"),
            WhatIf::Ttl(Ttl::FiveMinutes) => write!(f, "ttl=5m"),
            WhatIf::Breakpoints(n) => write!(f, "breakpoints={n}"),
            WhatIf::Model(m) => write!(f, "model={m}"),
            WhatIf::SystemPromptGrowth(b) => write!(f, "system-prompt-growth={b}"),
            WhatIf::NoCrossSessionCache => write!(f, "no-cross-session-cache"),
            WhatIf::Boundary(Boundary::None) => write!(f, "boundary=none"),
            WhatIf::Boundary(Boundary::Tools) => write!(f, "boundary=tools"),
        }
    }
}

/// How to model.
#[derive(Debug, Clone)]
pub struct ModelOptions {
    pub sim: SimConfig,
    pub account: Account,
    pub what_ifs: Vec<WhatIf>,
    /// The pipeline's profile gives the client's prompt text and tools (else
    /// sessions without a recorded shape get the unseen prefix blocks).
    pub prompt_known: bool,
    /// Size of the unseen prefix when no chain of the corpus has a first
    /// request with usage.
    pub unseen_prefix_default: u32,
    /// Whether a chain's first request finds the prefix through its first
    /// tool / system breakpoint in the cache, warmed by the account's
    /// sessions that are not in the corpus (see the module docs).
    pub warm_prefix: WarmPrefix,
    /// Model with this estimator (and, when given, this unseen prefix size
    /// for chains whose first request has no usage) instead of fitting one
    /// on the corpus: the shards of a corpus then model the same way
    /// (`cost --estimator REPORT`).
    pub fixed_estimator: Option<(Estimator, Option<u64>)>,
    /// Keep every request's row in [`CostReport::turns`](super::CostReport::turns)
    /// (`--per-request`, the HTML page's chart). Without, only the rows of
    /// the requests where model and bill disagree most are kept: a row is
    /// ~300 bytes per request of the corpus.
    pub keep_turns: bool,
}

/// See [`ModelOptions::warm_prefix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WarmPrefix {
    /// When the first request's recorded usage shows a cache read; an
    /// excerpt's first request without usage too (the requests before it
    /// wrote its prefix).
    #[default]
    Recorded,
    Always,
    Never,
}

impl std::str::FromStr for WarmPrefix {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "recorded" => Ok(WarmPrefix::Recorded),
            "always" => Ok(WarmPrefix::Always),
            "never" => Ok(WarmPrefix::Never),
            other => Err(format!("expected recorded, always or never, got {other:?}")),
        }
    }
}

/// The unseen prefix of the public corpus's chains, median, rounded
/// (`ctxasm cost ../shared/corpora/public --json`:
/// `estimator.unseen_prefix_median` = 11,482 tokens): what Claude Code
/// 1.0–2.1 sent as tools + system prompt.
pub const UNSEEN_PREFIX_DEFAULT: u32 = 11_500;

impl Default for ModelOptions {
    fn default() -> Self {
        ModelOptions {
            sim: SimConfig::default(),
            account: Account::Root,
            what_ifs: Vec::new(),
            prompt_known: false,
            unseen_prefix_default: UNSEEN_PREFIX_DEFAULT,
            warm_prefix: WarmPrefix::Recorded,
            fixed_estimator: None,
            keep_turns: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_if_parses_and_prints_back() {
        for s in [
            "ttl=1h",
            "ttl=5m",
            "breakpoints=0",
            "breakpoints=4",
            "model=claude-opus-4-8",
            "system-prompt-growth=4000",
            "system-prompt-growth=-200",
            "no-cross-session-cache",
            "boundary=none",
            "boundary=tools",
        ] {
            let w: WhatIf = s.parse().unwrap();
            assert_eq!(w.to_string(), s);
        }
        for bad in ["ttl=2h", "breakpoints=5", "model=", "system-prompt-growth=x", "boundary=mid", "colour=red"] {
            let err = bad.parse::<WhatIf>().unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
        assert_eq!(
            "breakpoints=5".parse::<WhatIf>().unwrap_err(),
            "--what-if \"breakpoints=5\": breakpoints is 0 to 4 (the API refuses more than 4)"
        );
    }

    #[test]
    fn a_model_what_if_needs_a_price() {
        let p = Pricing::builtin();
        let check = |s: &str| s.parse::<WhatIf>().unwrap().check(&p).map_err(|e| e.to_string());
        assert_eq!(check("model=claude-opus-4-8"), Ok(()));
        assert_eq!(check("model=claude-opus-4-8-20260101"), Ok(()));
        assert_eq!(check("ttl=1h"), Ok(()));
        assert_eq!(
            check("model=claude-opus-4-9"),
            Err("no price for model \"claude-opus-4-9\" in the built-in price table (2026-11-09); did you mean \
                 claude-opus-4-1, claude-opus-4-5, claude-opus-4-6, claude-opus-4-7 or claude-opus-4-8?"
                .to_string())
        );
        assert_eq!(
            check("model=sonet-4-5"),
            Err("no price for model \"sonet-4-5\" in the built-in price table (2026-11-09); did you mean \
                 claude-sonnet-4-5?"
                .to_string())
        );
        let e = check("model=gpt-4").unwrap_err();
        assert!(
            e.starts_with(
                "no price for model \"gpt-4\" in the built-in price table (2026-11-09); it has claude-fable-5, \
                 claude-mythos-5, "
            ) && e.ends_with(", claude-3-haiku (24 models)"),
            "{e}"
        );
    }
}
