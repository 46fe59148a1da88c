//! Model prices as data: the built-in table (`src/cost/pricing.json`, with
//! its source and date in the file) or a `--pricing FILE` of the same format.
//! The same file holds each model's minimum cacheable prompt length (see
//! [`MinCacheable`]), and this module owns the one model-id normalization
//! every lookup by model goes through. Nothing here reads a transcript or
//! prints; [`Pricing::load`] is the only file read.
//!
//! Prices are USD per million tokens, absolute for each of input, 5-minute
//! cache write, 1-hour cache write, cache read and output: the multipliers
//! (1.25×, 2×, 0.1×) hold on most rows but not on all of them (facts §2b), so
//! nothing is derived.
//!
//! # Long context
//!
//! A row may have a `long_context` tier. Anthropic's rule
//! (`../shared/docs/anthropic-api-facts.md` §2a, "Long context", from the
//! pricing page of 2026-03-13): when a request's input — `input_tokens +
//! cache_creation_input_tokens + cache_read_input_tokens` — is above the
//! threshold (200K for Sonnet 4.5 / 4 with the 1M beta), **every** token of
//! the request, output included, is billed at the tier's prices. ccusage
//! (`../shared/docs/peers.md` §1.5) instead prices only the tokens above 200K,
//! bucket by bucket; ctxasm follows Anthropic. Haiku 5.5's prompt-size tier
//! (above 100K, facts §2b) is the same kind of whole-request tier.
//!
//! # Model ids
//!
//! [`normalize_model_id`] maps the ids found in transcripts and in other
//! tools to the table's ids; table ids and aliases go through the same
//! function when the table is loaded. The rule, in order:
//!
//! 1. trim and ASCII-lowercase;
//! 2. drop a trailing `[…]` (Claude Code's context marker, `…[1m]`);
//! 3. drop everything up to the last `/` (routes: `anthropic/claude-…`);
//! 4. Bedrock: keep what follows the last `anthropic.` (drops the region,
//!    `us.anthropic.`) and drop a trailing `-v<N>` / `-v<N>:<M>`;
//! 5. `@` and `.` become `-` (Vertex `claude-sonnet-4@20250514`, dotted
//!    versions `claude-sonnet-4.5`) — ccusage's `normalized_pricing_key`;
//! 6. drop a trailing `-latest`, then a trailing `-YYYYMMDD` date (exactly 8
//!    digits; other numeric suffixes are versions: `claude-opus-4-1` is not
//!    `claude-opus-4`) — ccusage's `MODEL_DATE_SUFFIX_DIGITS` rule;
//! 7. prefix `claude-` when missing (`sonnet-4-5` is `claude-sonnet-4-5`).
//!
//! The result must then equal a row's id or alias exactly: there is no
//! fuzzy matching, so an unknown model stays unpriced (and is reported)
//! instead of borrowing a neighbour's price.

use super::tokens::TokenCounts;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The built-in table.
const BUILTIN_JSON: &str = include_str!("pricing.json");

/// [`Pricing::table`] of the built-in table.
pub const BUILTIN_TABLE: &str = "the built-in price table";

/// Prices of one tier, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Rates {
    pub input: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
}

impl Rates {
    /// USD for `t` at these rates.
    pub fn cost(&self, t: &TokenCounts) -> f64 {
        (t.input as f64 * self.input
            + t.cache_write_5m as f64 * self.cache_write_5m
            + t.cache_write_1h as f64 * self.cache_write_1h
            + t.cache_read as f64 * self.cache_read
            + t.output as f64 * self.output)
            / 1_000_000.0
    }

    fn check(&self) -> Result<(), String> {
        let all = [
            ("input", self.input),
            ("cache_write_5m", self.cache_write_5m),
            ("cache_write_1h", self.cache_write_1h),
            ("cache_read", self.cache_read),
            ("output", self.output),
        ];
        match all.iter().find(|(_, v)| !v.is_finite() || *v < 0.0) {
            Some((k, v)) => Err(format!("{k} is {v}; prices must be finite and >= 0")),
            None => Ok(()),
        }
    }
}

/// A whole-request tier for large prompts (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongContext {
    /// The tier applies when the request's input tokens (input + cache
    /// writes + cache reads) are above this.
    pub above_input_tokens: u64,
    pub input: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

impl LongContext {
    pub fn rates(&self) -> Rates {
        Rates {
            input: self.input,
            cache_write_5m: self.cache_write_5m,
            cache_write_1h: self.cache_write_1h,
            cache_read: self.cache_read,
            output: self.output,
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    /// The canonical id (normalized form, see the module docs).
    pub id: String,
    /// Other ids for the same prices (also normalized before matching).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub name: String,
    pub input: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
    pub cache_read: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<LongContext>,
    /// Where the row comes from, with its date.
    #[serde(default)]
    pub source: String,
}

impl ModelPrice {
    /// The base rates.
    pub fn rates(&self) -> Rates {
        Rates {
            input: self.input,
            cache_write_5m: self.cache_write_5m,
            cache_write_1h: self.cache_write_1h,
            cache_read: self.cache_read,
            output: self.output,
        }
    }

    /// Whether a request with these tokens is billed at the long-context tier:
    /// its input (input + cache writes + cache reads) is above the tier's
    /// threshold. Anthropic bills the WHOLE request at the tier then
    /// (facts §2a "Long context"); ccusage prices only the tokens above 200K.
    pub fn is_long_context(&self, t: &TokenCounts) -> bool {
        self.long_context.as_ref().is_some_and(|lc| t.total_input() > lc.above_input_tokens)
    }

    /// The rates that apply to a request with these tokens.
    pub fn rates_for(&self, t: &TokenCounts) -> Rates {
        match &self.long_context {
            Some(lc) if self.is_long_context(t) => lc.rates(),
            _ => self.rates(),
        }
    }

    /// USD for one request with these tokens.
    pub fn cost(&self, t: &TokenCounts) -> f64 {
        self.rates_for(t).cost(t)
    }
}

/// A price table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// Where the prices come from.
    #[serde(default)]
    pub source: String,
    /// The date of the table (its newest row).
    #[serde(default)]
    pub date: String,
    #[serde(default)]
    pub unit: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub models: Vec<ModelPrice>,
    /// Minimum cacheable lengths. The simulator's default configuration reads
    /// the built-in table's ([`builtin_min_cacheable`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cacheable: Option<MinCacheable>,
    /// Which table this is, as messages name it: `the built-in price
    /// table`, `the price table FILE` (not part of the format).
    #[serde(skip)]
    pub table: String,
    /// Normalized id or alias → index in `models`.
    #[serde(skip)]
    index: FxHashMap<String, usize>,
}

/// A model asked for by name (`--what-if model=NAME`) that the price table
/// has no row for: an error, never a price of 0.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no price for model {model:?} in {table}{hint}")]
pub struct UnknownModel {
    pub model: String,
    /// The table looked in ([`Pricing::table`]).
    pub table: String,
    /// `; did you mean …?`, or the table's models when none is close.
    pub hint: String,
}

/// Minimum cacheable prompt length by model-id prefix, first-party API
/// (`../shared/docs/anthropic-api-facts.md` §1.3, [PC] at 2026-08-21; the
/// last four rows are the older 2025 docs quoted there). Data, not code
/// (facts §1.3 "Design rule"); the longest matching prefix wins, see
/// [`lookup_min_cacheable`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinCacheable {
    #[serde(default)]
    pub source: String,
    pub by_prefix: Vec<MinCacheableRow>,
}

/// One row of [`MinCacheable`]: a prefix of normalized model ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinCacheableRow {
    pub prefix: String,
    pub tokens: u32,
}

impl MinCacheable {
    /// `(prefix, tokens)` in file order, as [`lookup_min_cacheable`] takes them.
    pub fn pairs(&self) -> Vec<(String, u32)> {
        self.by_prefix.iter().map(|r| (r.prefix.clone(), r.tokens)).collect()
    }
}

/// A `--pricing` file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PricingError {
    #[error("cannot read pricing file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("pricing file {path} is not a valid price table: {message}")]
    Parse { path: String, message: String },
    #[error("pricing file {path}: {message}")]
    Invalid { path: String, message: String },
}

impl Pricing {
    /// The table shipped with ctxasm (`src/cost/pricing.json`).
    pub fn builtin() -> Pricing {
        // The file is checked by the tests; should it ever fail to parse, an
        // empty table prices nothing (every request is reported unpriced).
        Self::parse(BUILTIN_JSON, "<built-in pricing.json>")
            .unwrap_or_else(|e| Pricing {
                source: String::new(),
                date: String::new(),
                unit: String::new(),
                notes: vec![e.to_string()],
                models: Vec::new(),
                min_cacheable: None,
                table: String::new(),
                index: FxHashMap::default(),
            })
            .with_table(BUILTIN_TABLE)
    }

    fn with_table(mut self, table: &str) -> Pricing {
        self.table = table.to_string();
        self
    }

    /// Read a table from `path` (same format as the built-in one; it replaces
    /// the built-in table, it is not merged with it).
    pub fn load(path: &Path) -> Result<Pricing, PricingError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PricingError::Io { path: shown.clone(), source })?;
        Ok(Self::parse(&text, &shown)?.with_table(&format!("the price table {shown}")))
    }

    /// Parse a table from JSON text; `shown` names it in errors (and is its
    /// [`Pricing::table`]).
    pub fn parse(text: &str, shown: &str) -> Result<Pricing, PricingError> {
        let mut p: Pricing = serde_json::from_str(text)
            .map_err(|e| PricingError::Parse { path: shown.to_string(), message: e.to_string() })?;
        let invalid = |message: String| PricingError::Invalid { path: shown.to_string(), message };
        let mut index = FxHashMap::default();
        for (i, m) in p.models.iter().enumerate() {
            if m.id.trim().is_empty() {
                return Err(invalid(format!("model #{} has an empty id", i + 1)));
            }
            m.rates().check().map_err(|e| invalid(format!("model {}: {e}", m.id)))?;
            if let Some(lc) = &m.long_context {
                lc.rates().check().map_err(|e| invalid(format!("model {} long_context: {e}", m.id)))?;
            }
            for name in std::iter::once(&m.id).chain(&m.aliases) {
                let key = normalize_model_id(name);
                if let Some(&j) = index.get(&key) {
                    let other: &ModelPrice = &p.models[j];
                    return Err(invalid(format!(
                        "model id {name:?} (normalized {key:?}) of {} is already used by {}",
                        m.id, other.id
                    )));
                }
                index.insert(key, i);
            }
        }
        for row in p.min_cacheable.iter().flat_map(|m| &m.by_prefix) {
            // The lookup compares prefixes with normalized ids: any other
            // spelling would never match.
            if row.prefix.is_empty() || normalize_model_id(&row.prefix) != row.prefix {
                return Err(invalid(format!(
                    "min_cacheable prefix {:?} is not a normalized model id (normalized {:?})",
                    row.prefix,
                    normalize_model_id(&row.prefix)
                )));
            }
        }
        p.index = index;
        p.table = shown.to_string();
        Ok(p)
    }

    /// The row for `model` (any spelling [`normalize_model_id`] accepts).
    pub fn price(&self, model: &str) -> Option<&ModelPrice> {
        self.index.get(&normalize_model_id(model)).and_then(|&i| self.models.get(i))
    }

    /// The row for a model the user named: an [`UnknownModel`] error that
    /// names this table and suggests close ids when there is none.
    pub fn lookup(&self, model: &str) -> Result<&ModelPrice, UnknownModel> {
        self.price(model).ok_or_else(|| UnknownModel {
            model: model.to_string(),
            table: if self.date.is_empty() { self.table.clone() } else { format!("{} ({})", self.table, self.date) },
            hint: self.hint(model),
        })
    }

    /// `; did you mean A or B?` with the closest ids (and aliases) when they
    /// are within a few edits of the normalized `model` (at most five),
    /// else `; it has` and every id.
    fn hint(&self, model: &str) -> String {
        let want = normalize_model_id(model);
        let mut close: Vec<(usize, &str)> = self
            .index
            .keys()
            .map(|k| (edit_distance(&want, k), k.as_str()))
            .filter(|&(d, _)| d <= (want.chars().count() / 6).max(2))
            .collect();
        close.sort_unstable();
        // The closest only, at most five.
        let best = close.first().map_or(0, |c| c.0);
        close.retain(|c| c.0 == best);
        close.truncate(5);
        if let Some((&(_, last), rest)) = close.split_last() {
            let names: Vec<&str> = rest.iter().map(|&(_, k)| k).collect();
            return if names.is_empty() {
                format!("; did you mean {last}?")
            } else {
                format!("; did you mean {} or {last}?", names.join(", "))
            };
        }
        if self.models.is_empty() {
            return "; it has no models".to_string();
        }
        let ids: Vec<&str> = self.models.iter().map(|m| m.id.as_str()).collect();
        format!("; it has {} ({})", ids.join(", "), super::format::count(ids.len() as u64, "model"))
    }

    /// USD for one request of `model` with these tokens; `None` when the
    /// model has no price.
    pub fn cost(&self, model: &str, tokens: &TokenCounts) -> Option<f64> {
        self.price(model).map(|p| p.cost(tokens))
    }
}

/// The built-in table's minimum cacheable lengths, `(prefix, tokens)`
/// (parsed once; empty should the built-in file ever fail to parse).
pub fn builtin_min_cacheable() -> &'static [(String, u32)] {
    static TABLE: std::sync::OnceLock<Vec<(String, u32)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| Pricing::builtin().min_cacheable.map(|m| m.pairs()).unwrap_or_default())
}

/// The longest `table` prefix of the normalized `model` that ends at a `-`
/// or at the end (`claude-opus-4-1` matches `claude-opus-4-1-20250805`, not
/// `claude-opus-4-10`).
pub fn lookup_min_cacheable(table: &[(impl AsRef<str>, u32)], model: &str) -> Option<u32> {
    let id = normalize_model_id(model);
    table
        .iter()
        .filter(|(p, _)| {
            let p = p.as_ref();
            id.starts_with(p) && matches!(id.as_bytes().get(p.len()), None | Some(b'-'))
        })
        .max_by_key(|(p, _)| p.as_ref().len())
        .map(|(_, n)| *n)
}

/// [`lookup_min_cacheable`] in the built-in table.
pub fn min_cacheable_tokens(model: &str) -> Option<u32> {
    lookup_min_cacheable(builtin_min_cacheable(), model)
}

/// How many more tokens the newer tokenizer makes of the same text: Claude
/// 4.7 and later, Fable and Mythos use it, about 30% more than Sonnet 4.6
/// and earlier (facts §2a "Tokenizer change", §5 "Counts are per model").
pub const NEW_TOKENIZER_FACTOR: f64 = 1.3;

/// `model` counts tokens with the newer tokenizer ([`NEW_TOKENIZER_FACTOR`]):
/// `claude-<family>-<major>-<minor>` at 4.7 or later (a major of 5 or more
/// with any minor), or a Fable or Mythos model. The old naming
/// (`claude-3-5-sonnet`) and unknown ids are the old tokenizer.
pub fn new_tokenizer(model: &str) -> bool {
    let id = normalize_model_id(model);
    let Some(rest) = id.strip_prefix("claude-") else { return false };
    let mut parts = rest.split('-');
    let family = parts.next().unwrap_or("");
    if family == "fable" || family == "mythos" {
        return true;
    }
    if !matches!(family, "opus" | "sonnet" | "haiku") {
        return false;
    }
    let major = parts.next().and_then(|p| p.parse::<u32>().ok());
    // A date (8 digits) is not a minor version.
    let minor = parts.next().filter(|p| p.len() <= 2).and_then(|p| p.parse::<u32>().ok()).unwrap_or(0);
    major.is_some_and(|m| (m, minor) >= (4, 7))
}

/// The factor a request's token counts take when the same text is sent to
/// `to` instead of `from`: 1.3 from the old tokenizer to the new, 1/1.3
/// back, else 1.
pub fn tokenizer_factor(from: &str, to: &str) -> f64 {
    match (new_tokenizer(from), new_tokenizer(to)) {
        (false, true) => NEW_TOKENIZER_FACTOR,
        (true, false) => 1.0 / NEW_TOKENIZER_FACTOR,
        _ => 1.0,
    }
}

/// The normalized form of a model id (the rule is in the module docs). The
/// one normalization of ctxasm: prices, minimum cacheable lengths and the
/// thinking rule of `modeled` all look models up through it.
pub fn normalize_model_id(model: &str) -> String {
    let mut s = model.trim().to_ascii_lowercase();
    // 2. A trailing `[…]` marker.
    if s.ends_with(']')
        && let Some(open) = s.rfind('[')
    {
        s.truncate(open);
    }
    // 3. Routes.
    if let Some(slash) = s.rfind('/') {
        s.drain(..=slash);
    }
    // 4. Bedrock ids.
    if let Some(at) = s.rfind("anthropic.") {
        s.drain(..at + "anthropic.".len());
        strip_bedrock_version(&mut s);
    }
    // 5. Separators.
    let mut s: String = s.chars().map(|c| if c == '@' || c == '.' { '-' } else { c }).collect();
    // 6. `-latest`, then a date.
    if let Some(stem) = s.strip_suffix("-latest") {
        s.truncate(stem.len());
    }
    if let Some((stem, date)) = s.rsplit_once('-')
        && date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit())
    {
        s.truncate(stem.len());
    }
    // 7. The `claude-` prefix.
    if !s.starts_with("claude-") && !s.is_empty() {
        s.insert_str(0, "claude-");
    }
    s
}

/// Levenshtein distance over chars (ids are short: two rows suffice).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Drop Bedrock's `-v<N>` or `-v<N>:<M>` suffix.
fn strip_bedrock_version(s: &mut String) {
    let Some(dash) = s.rfind("-v") else { return };
    let rest = &s[dash + 2..];
    let (major, minor) = match rest.split_once(':') {
        Some((a, b)) => (a, Some(b)),
        None => (rest, None),
    };
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
    if digits(major) && minor.is_none_or(digits) {
        s.truncate(dash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, w5: u64, w1: u64, read: u64, output: u64) -> TokenCounts {
        TokenCounts { input, cache_write_5m: w5, cache_write_1h: w1, cache_read: read, output }
    }

    #[test]
    fn tokenizer_generations() {
        for m in [
            "claude-opus-4-7",
            "claude-opus-4-8-20260101",
            "claude-sonnet-5",
            "claude-opus-5-5",
            "claude-fable-1",
            "claude-mythos-preview",
            "anthropic.claude-opus-4-7-v1:0",
            "claude-haiku-4-7",
        ] {
            assert!(new_tokenizer(m), "{m}");
        }
        for m in [
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-sonnet-4-20250514",
            "claude-opus-4-5-20251101",
            "claude-3-5-sonnet-20241022",
            "claude-haiku-4-5-20251001",
            "gpt-4o",
            "<synthetic>",
        ] {
            assert!(!new_tokenizer(m), "{m}");
        }
        assert_eq!(tokenizer_factor("claude-opus-4-6", "claude-opus-4-8"), 1.3);
        assert_eq!(tokenizer_factor("claude-opus-4-8", "claude-sonnet-4-5"), 1.0 / 1.3);
        assert_eq!(tokenizer_factor("claude-opus-4-6", "claude-sonnet-4-5"), 1.0);
        assert_eq!(tokenizer_factor("claude-opus-4-7", "claude-sonnet-5"), 1.0);
    }

    #[test]
    fn builtin_parses_and_lists_every_documented_model() {
        let p = Pricing::builtin();
        assert!(p.notes.iter().all(|n| !n.contains("not a valid")), "{:?}", p.notes);
        assert!(!p.source.is_empty() && !p.date.is_empty());
        for id in [
            "claude-fable-5",
            "claude-mythos-5",
            "claude-fable-5-1",
            "claude-mythos-5-1",
            "claude-fable-5-2",
            "claude-opus-5-5",
            "claude-opus-5",
            "claude-opus-4-8",
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-opus-4-5",
            "claude-opus-4-1",
            "claude-opus-4",
            "claude-sonnet-5-5",
            "claude-sonnet-5",
            "claude-sonnet-4-6",
            "claude-sonnet-4-5",
            "claude-sonnet-4",
            "claude-haiku-5-5",
            "claude-haiku-4-5",
            "claude-3-5-haiku",
            "claude-3-7-sonnet",
            "claude-3-opus",
            "claude-3-haiku",
        ] {
            let m = p.price(id).unwrap_or_else(|| panic!("{id} missing"));
            assert_eq!(m.id, id);
            assert!(!m.source.is_empty(), "{id} has no source");
        }
        assert_eq!(p.models.len(), 24);
    }

    #[test]
    fn multipliers_hold_where_the_docs_say_so() {
        let p = Pricing::builtin();
        for m in &p.models {
            let r = m.rates();
            assert!((r.cache_write_5m - 1.25 * r.input).abs() < 1e-9 || m.id == "claude-3-haiku", "{}", m.id);
            assert!((r.cache_write_1h - 2.0 * r.input).abs() < 1e-9, "{}", m.id);
            let read_x = r.cache_read / r.input;
            let expected = match m.id.as_str() {
                "claude-fable-5-1" | "claude-mythos-5-1" | "claude-fable-5-2" => 0.025,
                "claude-opus-5-5" => 0.05,
                "claude-3-haiku" => 0.12,
                _ => 0.1,
            };
            assert!((read_x - expected).abs() < 1e-9, "{} read {read_x}", m.id);
        }
    }

    #[test]
    fn normalization() {
        for (raw, want) in [
            ("claude-sonnet-4-20250514", "claude-sonnet-4"),
            ("claude-opus-4-5-20251101", "claude-opus-4-5"),
            ("claude-opus-4-1-20250805", "claude-opus-4-1"),
            ("claude-opus-4-7", "claude-opus-4-7"),
            ("Claude-Sonnet-4.5", "claude-sonnet-4-5"),
            ("claude-sonnet-4-5-20250929[1m]", "claude-sonnet-4-5"),
            ("anthropic/claude-haiku-4-5", "claude-haiku-4-5"),
            ("us.anthropic.claude-sonnet-4-20250514-v1:0", "claude-sonnet-4"),
            ("anthropic.claude-3-5-haiku-20241022-v1:0", "claude-3-5-haiku"),
            ("claude-sonnet-4@20250514", "claude-sonnet-4"),
            ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
            ("sonnet-4-5", "claude-sonnet-4-5"),
            ("opus-5-5", "claude-opus-5-5"),
            ("claude-opus-4-12345678", "claude-opus-4"),
            ("claude-opus-4-123", "claude-opus-4-123"),
            ("<synthetic>", "claude-<synthetic>"),
            ("", ""),
        ] {
            assert_eq!(normalize_model_id(raw), want, "{raw}");
        }
        let p = Pricing::builtin();
        assert_eq!(p.price("claude-opus-4-1-20250805").map(|m| m.id.as_str()), Some("claude-opus-4-1"));
        assert_eq!(p.price("claude-opus-4-20250514").map(|m| m.id.as_str()), Some("claude-opus-4"));
        assert_eq!(p.price("claude-haiku-3-5").map(|m| m.id.as_str()), Some("claude-3-5-haiku"));
        assert!(p.price("<synthetic>").is_none());
        assert!(p.price("claude-opus-4-9").is_none());
        assert!(p.price("gpt-5").is_none());
    }

    #[test]
    fn costs_and_the_whole_request_long_context_rule() {
        let p = Pricing::builtin();
        // Sonnet 4: 1M input + 1M 5m writes + 1M 1h writes + 1M reads + 1M output
        // would be long context; use small counts for the base tier.
        let t = tokens(1000, 2000, 3000, 4000, 500);
        let want = (1000.0 * 3.0 + 2000.0 * 3.75 + 3000.0 * 6.0 + 4000.0 * 0.3 + 500.0 * 15.0) / 1e6;
        assert!((p.cost("claude-sonnet-4-20250514", &t).unwrap() - want).abs() < 1e-12);
        // peers.md §1.5: 150K input + 100K cache read + 1K output on Sonnet 4.
        // Anthropic: all tokens at the tier = 0.9 + 0.06 + 0.0225 = 0.9825;
        // ccusage (marginal per bucket, no bucket above 200K) = 0.495.
        let big = tokens(150_000, 0, 0, 100_000, 1_000);
        assert!(p.price("claude-sonnet-4").unwrap().is_long_context(&big));
        assert!((p.cost("claude-sonnet-4", &big).unwrap() - 0.9825).abs() < 1e-12);
        // Exactly 200K is not above the threshold.
        let edge = tokens(100_000, 50_000, 0, 50_000, 1_000);
        assert!(!p.price("claude-sonnet-4-5").unwrap().is_long_context(&edge));
        assert!((p.cost("claude-sonnet-4-5", &edge).unwrap() - (0.3 + 0.1875 + 0.015 + 0.015)).abs() < 1e-12);
        // 4.6+ has no tier.
        assert!(!p.price("claude-sonnet-4-6").unwrap().is_long_context(&big));
        // Haiku 5.5's 100K tier.
        let h = tokens(100_001, 0, 0, 0, 10);
        assert!((p.cost("claude-haiku-5-5", &h).unwrap() - (100_001.0 * 0.5 + 10.0 * 2.5) / 1e6).abs() < 1e-12);
        assert_eq!(p.cost("claude-unknown-1", &t), None);
    }

    #[test]
    fn load_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.json");
        let e = Pricing::load(&missing).unwrap_err().to_string();
        assert!(e.contains("nope.json") && e.starts_with("cannot read pricing file"), "{e}");
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"{"models":[{"id":"x","input":1}]}"#).unwrap();
        let e = Pricing::load(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.json") && e.contains("missing field"), "{e}");
        std::fs::write(&bad, r#"{"models":[{"id":"x","input":1,"cache_write_5m":1,"cache_write_1h":1,"cache_read":1,"output":1,"typo":2}]}"#).unwrap();
        let e = Pricing::load(&bad).unwrap_err().to_string();
        assert!(e.contains("unknown field `typo`"), "{e}");
        std::fs::write(
            &bad,
            r#"{"models":[{"id":"claude-x","input":-1,"cache_write_5m":1,"cache_write_1h":1,"cache_read":1,"output":1}]}"#,
        )
        .unwrap();
        let e = Pricing::load(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.json") && e.contains("input is -1"), "{e}");
        let row = |id: &str| {
            format!(r#"{{"id":"{id}","input":1,"cache_write_5m":1,"cache_write_1h":1,"cache_read":1,"output":1}}"#)
        };
        std::fs::write(&bad, format!(r#"{{"models":[{},{}]}}"#, row("claude-x-1"), row("x.1"))).unwrap();
        let e = Pricing::load(&bad).unwrap_err().to_string();
        assert!(e.contains("already used by claude-x-1"), "{e}");
        let good = dir.path().join("good.json");
        std::fs::write(&good, format!(r#"{{"models":[{}]}}"#, row("my-model"))).unwrap();
        let p = Pricing::load(&good).unwrap();
        assert_eq!(p.cost("claude-my-model-20260101", &tokens(1_000_000, 0, 0, 0, 0)), Some(1.0));
        // A model asked for by name is looked up in this table, which the
        // error names.
        assert_eq!(p.table, format!("the price table {}", good.display()));
        assert_eq!(p.lookup("my-model-20260101").map(|m| m.id.as_str()), Ok("my-model"));
        assert_eq!(
            p.lookup("claude-opus-4-8").unwrap_err().to_string(),
            format!(
                "no price for model \"claude-opus-4-8\" in the price table {}; it has my-model (1 model)",
                good.display()
            )
        );
        let empty = Pricing::parse(r#"{"models":[],"date":"2026-01-01"}"#, "e.json").unwrap();
        assert_eq!(
            empty.lookup("x").unwrap_err().to_string(),
            "no price for model \"x\" in e.json (2026-01-01); it has no models"
        );
    }

    #[test]
    fn min_cacheable_prefixes_are_normalized_ids() {
        let table = |prefix: &str| {
            format!(r#"{{"models":[],"min_cacheable":{{"by_prefix":[{{"prefix":"{prefix}","tokens":9}}]}}}}"#)
        };
        let p = Pricing::parse(&table("claude-x-1"), "t").unwrap();
        assert_eq!(p.min_cacheable.map(|m| m.pairs()), Some(vec![("claude-x-1".to_string(), 9)]));
        let e = Pricing::parse(&table("Claude-X.1"), "t").unwrap_err().to_string();
        assert!(e.contains("not a normalized model id"), "{e}");
        assert_eq!(builtin_min_cacheable().len(), 21);
    }

    #[test]
    fn builtin_round_trips_through_serde() {
        let p = Pricing::builtin();
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(Pricing::parse(&text, BUILTIN_TABLE).unwrap(), p);
    }
}
