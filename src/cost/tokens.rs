//! The tokens of one request, by billing category: the one type both the
//! price table (`pricing`) and the usage readers (`usage`, `modeled`) speak,
//! kept apart so that neither has to import the other for it.
//!
//! Pure data: no prices, no I/O.

use crate::model::entry::Usage;
use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// The tokens of one request (or a sum of requests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TokenCounts {
    /// `input_tokens`: uncached input after the last breakpoint.
    pub input: u64,
    /// Cache writes with the 5-minute TTL.
    pub cache_write_5m: u64,
    /// Cache writes with the 1-hour TTL.
    pub cache_write_1h: u64,
    /// `cache_read_input_tokens`.
    pub cache_read: u64,
    /// `output_tokens`.
    pub output: u64,
}

impl TokenCounts {
    /// Every count times `f`, rounded (the same text under another
    /// tokenizer, [`crate::cost::pricing::tokenizer_factor`]).
    pub fn scaled(&self, f: f64) -> Self {
        let s = |n: u64| (n as f64 * f).round() as u64;
        TokenCounts {
            input: s(self.input),
            cache_write_5m: s(self.cache_write_5m),
            cache_write_1h: s(self.cache_write_1h),
            cache_read: s(self.cache_read),
            output: s(self.output),
        }
    }

    /// The counts of a `message.usage` (the TTL split when the line has one,
    /// else every cache write as 5-minute).
    pub fn from_usage(u: &Usage<'_>) -> Self {
        let (cache_write_5m, cache_write_1h) = match (u.cache_creation_5m, u.cache_creation_1h) {
            (None, None) => (u.cache_creation_input_tokens, 0),
            (a, b) => (a.unwrap_or(0), b.unwrap_or(0)),
        };
        TokenCounts {
            input: u.input_tokens,
            cache_write_5m,
            cache_write_1h,
            cache_read: u.cache_read_input_tokens,
            output: u.output_tokens,
        }
    }

    /// All cache writes (`cache_creation_input_tokens`).
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }

    /// The request's whole input: input + cache writes + cache reads.
    pub fn total_input(&self) -> u64 {
        self.input + self.cache_write() + self.cache_read
    }

    /// Every token: the whole input and the output.
    pub fn total(&self) -> u64 {
        self.total_input() + self.output
    }
}

impl Add for TokenCounts {
    type Output = TokenCounts;
    fn add(self, o: TokenCounts) -> TokenCounts {
        TokenCounts {
            input: self.input + o.input,
            cache_write_5m: self.cache_write_5m + o.cache_write_5m,
            cache_write_1h: self.cache_write_1h + o.cache_write_1h,
            cache_read: self.cache_read + o.cache_read,
            output: self.output + o.output,
        }
    }
}

impl AddAssign for TokenCounts {
    fn add_assign(&mut self, o: TokenCounts) {
        *self = *self + o;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_counts_from_usage() {
        let mut u = Usage { input_tokens: 1, cache_creation_input_tokens: 10, output_tokens: 2, ..Usage::default() };
        u.cache_read_input_tokens = 3;
        let t = TokenCounts::from_usage(&u);
        assert_eq!(t, TokenCounts { input: 1, cache_write_5m: 10, cache_write_1h: 0, cache_read: 3, output: 2 });
        u.cache_creation_5m = Some(4);
        u.cache_creation_1h = Some(6);
        let t = TokenCounts::from_usage(&u);
        assert_eq!(
            (t.cache_write_5m, t.cache_write_1h, t.cache_write(), t.total_input(), t.total()),
            (4, 6, 10, 14, 16)
        );
        assert_eq!(t + t, TokenCounts { input: 2, cache_write_5m: 8, cache_write_1h: 12, cache_read: 6, output: 4 });
    }
}
