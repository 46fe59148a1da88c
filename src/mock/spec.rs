//! Fault and latency specs (`--fail`, `--latency-ms`) and the per-request
//! draw that applies them.
//!
//! The draw of a request depends only on (seed, xxh3-64 of its raw body, how
//! many times that exact body arrived before): never on concurrency or
//! arrival order, so the same run twice injects the same faults, and a retry
//! of a failed request (same bytes) gets a fresh draw.

use super::MockError;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// One kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Reply with this HTTP status and its error envelope (529
    /// `overloaded_error`, 500 `api_error`, …; facts §3.3).
    Status(u16),
    /// Send the headers and part of the body, then close the connection.
    Drop,
    /// Add [`super::MockConfig::slow_ms`] to the reply's latency.
    Slow,
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Status(s) => write!(f, "{s}"),
            Fault::Drop => f.write_str("drop"),
            Fault::Slow => f.write_str("slow"),
        }
    }
}

/// Faults with their probabilities; at most one fault per request (the
/// probabilities add up to at most 1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    pub entries: Vec<(Fault, f64)>,
}

impl Faults {
    /// The fault for a uniform draw `u` in [0, 1): the entries are laid end
    /// to end from 0 in spec order.
    pub fn pick(&self, u: f64) -> Option<Fault> {
        let mut acc = 0.0;
        for &(fault, p) in &self.entries {
            acc += p;
            if u < acc {
                return Some(fault);
            }
        }
        None
    }

    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|(_, p)| *p <= 0.0)
    }
}

impl fmt::Display for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (fault, p)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{fault}={p}")?;
        }
        Ok(())
    }
}

impl FromStr for Faults {
    type Err = MockError;

    /// `KIND=P[,KIND=P…]`: KIND is an HTTP status 400–599, `drop` or `slow`;
    /// P a probability in [0, 1]. Empty or `none` = no faults.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let mut out = Faults::default();
        if s.is_empty() || s == "none" {
            return Ok(out);
        }
        let err = |part: &str, why: String| MockError::Spec(format!("fault spec `{s}`: `{part}`: {why}"));
        for part in s.split(',') {
            let part = part.trim();
            let Some((kind, p)) = part.split_once('=') else {
                return Err(err(part, "expected KIND=PROBABILITY, e.g. 529=0.05".into()));
            };
            let fault = match kind.trim() {
                "drop" => Fault::Drop,
                "slow" => Fault::Slow,
                k => match k.parse::<u16>() {
                    Ok(code) if (400..=599).contains(&code) => Fault::Status(code),
                    Ok(code) => return Err(err(part, format!("status {code} is not an error status (400–599)"))),
                    Err(_) => {
                        return Err(err(part, format!("unknown fault `{k}` (an HTTP status 400–599, drop or slow)")));
                    }
                },
            };
            let p: f64 = match p.trim().parse() {
                Ok(p) if (0.0..=1.0).contains(&p) => p,
                Ok(_) => return Err(err(part, format!("probability `{}` is not between 0 and 1", p.trim()))),
                Err(_) => return Err(err(part, format!("probability `{}` is not a number", p.trim()))),
            };
            if out.entries.iter().any(|(f, _)| *f == fault) {
                return Err(err(part, format!("`{fault}` is given twice")));
            }
            out.entries.push((fault, p));
        }
        let sum: f64 = out.entries.iter().map(|(_, p)| p).sum();
        if sum > 1.0 + 1e-9 {
            return Err(MockError::Spec(format!("fault spec `{s}`: the probabilities add up to {sum}, more than 1")));
        }
        Ok(out)
    }
}

/// Latency added to every reply, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Latency {
    /// Always this long (`0`, the default, or `50`).
    Fixed(u64),
    /// Uniform in `[lo, hi]` (`20-200`).
    Uniform { lo: u64, hi: u64 },
    /// Exponential with this mean (`exp:40`).
    Exp { mean: f64 },
}

impl Default for Latency {
    fn default() -> Self {
        Latency::Fixed(0)
    }
}

/// No single draw waits longer than this (an exponential's tail is unbounded).
const MAX_LATENCY_MS: f64 = 600_000.0;

impl Latency {
    /// One latency drawn from `rng`.
    pub fn sample(&self, rng: &mut impl Rng) -> Duration {
        match *self {
            Latency::Fixed(ms) => Duration::from_millis(ms),
            Latency::Uniform { lo, hi } => Duration::from_millis(rng.random_range(lo..=hi)),
            Latency::Exp { mean } => {
                let u: f64 = rng.random();
                let ms = (-mean * (1.0 - u).ln()).clamp(0.0, MAX_LATENCY_MS);
                Duration::from_secs_f64(ms / 1000.0)
            }
        }
    }
}

impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Latency::Fixed(ms) => write!(f, "{ms}"),
            Latency::Uniform { lo, hi } => write!(f, "{lo}-{hi}"),
            Latency::Exp { mean } => write!(f, "exp:{mean}"),
        }
    }
}

impl FromStr for Latency {
    type Err = MockError;

    /// `MS` (fixed), `LO-HI` (uniform) or `exp:MEAN` (exponential), in ms.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let err = |why: String| MockError::Spec(format!("latency spec `{t}`: {why}"));
        let ms = |x: &str, what: &str| {
            x.trim().parse::<u64>().map_err(|_| err(format!("{what} `{}` is not a whole number of ms", x.trim())))
        };
        if let Some(mean) = t.strip_prefix("exp:") {
            return match mean.trim().parse::<f64>() {
                Ok(m) if (0.0..=MAX_LATENCY_MS).contains(&m) => Ok(Latency::Exp { mean: m }),
                _ => Err(err(format!("mean `{}` is not a number of ms between 0 and 600000", mean.trim()))),
            };
        }
        if let Some((lo, hi)) = t.split_once('-') {
            let (lo, hi) = (ms(lo, "lower bound")?, ms(hi, "upper bound")?);
            if lo > hi {
                return Err(err(format!("lower bound {lo} is above upper bound {hi}")));
            }
            return Ok(Latency::Uniform { lo, hi });
        }
        if t.is_empty() {
            return Err(err("empty (use 0, 50, 20-200 or exp:40)".into()));
        }
        Ok(Latency::Fixed(ms(t, "value")?))
    }
}

/// What the draw decided for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Draw {
    pub fault: Option<Fault>,
    pub latency: Duration,
}

/// The draw of a request whose raw body hashes to `body_hash` and was seen
/// `seen` times before (see the module doc).
pub fn draw(seed: u64, body_hash: u64, seen: u64, faults: &Faults, latency: &Latency) -> Draw {
    let mut key = [0u8; 24];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&body_hash.to_le_bytes());
    key[16..].copy_from_slice(&seen.to_le_bytes());
    let mut rng = StdRng::seed_from_u64(xxhash_rust::xxh3::xxh3_64(&key));
    let u: f64 = rng.random();
    Draw { fault: faults.pick(u), latency: latency.sample(&mut rng) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_pick() {
        let f: Faults = "529=0.05, 500=0.02,drop=0.01,slow=0.05".parse().unwrap();
        assert_eq!(
            f.entries,
            [(Fault::Status(529), 0.05), (Fault::Status(500), 0.02), (Fault::Drop, 0.01), (Fault::Slow, 0.05)]
        );
        assert_eq!(f.pick(0.0), Some(Fault::Status(529)));
        assert_eq!(f.pick(0.06), Some(Fault::Status(500)));
        assert_eq!(f.pick(0.075), Some(Fault::Drop));
        assert_eq!(f.pick(0.12), Some(Fault::Slow));
        assert_eq!(f.pick(0.13), None);
        assert_eq!(f.to_string(), "529=0.05,500=0.02,drop=0.01,slow=0.05");
        assert!("".parse::<Faults>().unwrap().is_empty());
        assert!("503=0.01".parse::<Faults>().is_ok());
    }

    #[test]
    fn bad_fault_specs_name_the_bad_part() {
        let e = |s: &str| s.parse::<Faults>().unwrap_err().to_string();
        assert!(e("529=0.05,boom=0.1").contains("`boom=0.1`: unknown fault `boom`"), "{}", e("529=0.05,boom=0.1"));
        assert!(e("529").contains("expected KIND=PROBABILITY"));
        assert!(e("529=x").contains("probability `x` is not a number"));
        assert!(e("529=1.5").contains("not between 0 and 1"));
        assert!(e("200=0.1").contains("status 200 is not an error status"));
        assert!(e("529=0.6,500=0.6").contains("add up to"));
        assert!(e("drop=0.1,drop=0.2").contains("given twice"));
    }

    #[test]
    fn latency_parse() {
        assert_eq!("0".parse::<Latency>().unwrap(), Latency::Fixed(0));
        assert_eq!("50".parse::<Latency>().unwrap(), Latency::Fixed(50));
        assert_eq!("20-200".parse::<Latency>().unwrap(), Latency::Uniform { lo: 20, hi: 200 });
        assert_eq!("exp:40".parse::<Latency>().unwrap(), Latency::Exp { mean: 40.0 });
        let e = |s: &str| s.parse::<Latency>().unwrap_err().to_string();
        assert!(e("20-").contains("upper bound ``"), "{}", e("20-"));
        assert!(e("200-20").contains("lower bound 200 is above upper bound 20"));
        assert!(e("fast").contains("value `fast`"));
        assert!(e("exp:-1").contains("mean `-1`"));
    }

    #[test]
    fn draws_depend_on_seed_body_and_count_only() {
        let f: Faults = "529=0.5".parse().unwrap();
        let l = Latency::Uniform { lo: 0, hi: 1000 };
        assert_eq!(draw(1, 42, 0, &f, &l), draw(1, 42, 0, &f, &l));
        let a: Vec<_> = (0..64).map(|n| draw(1, 42, n, &f, &l)).collect();
        let b: Vec<_> = (0..64).map(|n| draw(2, 42, n, &f, &l)).collect();
        assert_ne!(a, b);
        let mean =
            (0..2000).map(|n| draw(7, n, 0, &f, &Latency::Exp { mean: 40.0 }).latency.as_secs_f64()).sum::<f64>()
                / 2000.0;
        assert!((mean - 0.040).abs() < 0.005, "{mean}");
    }
}
