//! Token counts from bytes: the image formula ([`image_tokens`], from an
//! image's header when it has one) and the [`Estimator`], bytes per token
//! by content kind, fitted by non-negative least squares (facts §5: no
//! public tokenizer for current models).
//!
//! Estimates only: pinning them to recorded usage is `pin`'s.

use super::blocks::{BlockKind, ImageAcc, N_KINDS, write_stripped};
use crate::json::Json;

/// Tokens of an image whose size is unknown: the size above which the API
/// scales images down (~1,600 tokens, [VIS] below).
pub const IMAGE_TOKENS_UNKNOWN: u32 = 1600;

/// Tokens of a `width`×`height` image: `width*height/750`, after scaling
/// down (aspect kept) to a long edge of at most 1568 px and at most ~1,600
/// tokens. Source [VIS]: the vision guide, https://docs.claude.com/en/docs/vision
/// "Evaluate image size" (not in the facts file; see the open questions).
pub fn image_tokens(width: u32, height: u32) -> u32 {
    let (w, h) = (f64::from(width), f64::from(height));
    let long = w.max(h);
    let mut scale = if long > 1568.0 { 1568.0 / long } else { 1.0 };
    let at = |s: f64| (w * s) * (h * s) / 750.0;
    if at(scale) > f64::from(IMAGE_TOKENS_UNKNOWN) {
        scale *= (f64::from(IMAGE_TOKENS_UNKNOWN) / at(scale)).sqrt();
    }
    at(scale).ceil().min(f64::from(IMAGE_TOKENS_UNKNOWN)) as u32
}

/// Tokens of an image block: [`image_tokens`] of its size when the base64
/// data's header gives one (PNG, GIF, WebP, JPEG), else
/// [`IMAGE_TOKENS_UNKNOWN`].
pub fn image_block_tokens(block: &Json<'_>) -> u32 {
    image_dims(block).map_or(IMAGE_TOKENS_UNKNOWN, |(w, h)| image_tokens(w, h))
}

/// Width and height of a base64 image block, from the image's header.
pub fn image_dims(block: &Json<'_>) -> Option<(u32, u32)> {
    use base64::Engine;
    let source = block.get("source")?;
    let data = source.get_str("data")?;
    let decode = |n: usize| {
        let part = data.get(..n.min(data.len()) / 4 * 4)?;
        base64::engine::general_purpose::STANDARD.decode(part).ok()
    };
    let head = decode(64)?;
    let be16 = |b: &[u8], i: usize| Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le16 = |b: &[u8], i: usize| Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])));
    let le24 = |b: &[u8], i: usize| Some(u32::from_le_bytes([*b.get(i)?, *b.get(i + 1)?, *b.get(i + 2)?, 0]));
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        let w = u32::from_be_bytes(head.get(16..20)?.try_into().ok()?);
        let h = u32::from_be_bytes(head.get(20..24)?.try_into().ok()?);
        return Some((w, h));
    }
    if head.starts_with(b"GIF8") {
        return Some((le16(&head, 6)?, le16(&head, 8)?));
    }
    if head.starts_with(b"RIFF") && head.get(8..12) == Some(b"WEBP") {
        return match head.get(12..16)? {
            b"VP8 " => Some((le16(&head, 26)? & 0x3fff, le16(&head, 28)? & 0x3fff)),
            b"VP8L" => {
                let b = head.get(21..25)?;
                let (b0, b1, b2, b3) = (u32::from(b[0]), u32::from(b[1]), u32::from(b[2]), u32::from(b[3]));
                Some((1 + (b0 | (b1 & 0x3f) << 8), 1 + (b1 >> 6 | b2 << 2 | (b3 & 0xf) << 10)))
            }
            b"VP8X" => Some((1 + le24(&head, 24)?, 1 + le24(&head, 27)?)),
            _ => None,
        };
    }
    if head.starts_with(b"\xff\xd8") {
        let all = decode(data.len())?;
        let mut i = 2;
        while i + 4 <= all.len() {
            if all[i] != 0xff {
                i += 1;
                continue;
            }
            let m = all[i + 1];
            if m == 0xff || m == 0x01 || (0xd0..=0xd9).contains(&m) {
                i += if m == 0xff { 1 } else { 2 };
                continue;
            }
            let len = be16(&all, i + 2)? as usize;
            if (0xc0..=0xcf).contains(&m) && !matches!(m, 0xc4 | 0xc8 | 0xcc) {
                return Some((be16(&all, i + 7)?, be16(&all, i + 5)?));
            }
            i += 2 + len;
        }
    }
    None
}

/// The estimator's input for one block: serialized bytes (without
/// `cache_control`) in the slot of `kind`, and the image formula's tokens
/// of any image in it in the [`BlockKind::Image`] slot.
pub fn kind_features(block: &Json<'_>, kind: BlockKind) -> [f64; N_KINDS] {
    let mut f = [0.0; N_KINDS];
    let mut images = ImageAcc::default();
    let mut buf = Vec::new();
    write_stripped(&mut buf, block, Some(&mut images));
    if kind != BlockKind::Image {
        f[kind.index()] = buf.len() as f64;
    }
    f[BlockKind::Image.index()] += images.tokens;
    f
}

/// Tokens from bytes, by content kind (facts §5: no public tokenizer for
/// current models; chars/3.5–4 is the usual proxy, reconciled from usage).
/// For [`BlockKind::Image`] the feature is the image formula's tokens, so its
/// entry is a correction factor (1 = the formula as documented).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimator {
    pub bytes_per_token: [f64; N_KINDS],
}

impl Default for Estimator {
    /// 4 bytes per token, images by the formula.
    fn default() -> Self {
        Estimator::uniform(4.0)
    }
}

impl Estimator {
    /// `bytes_per_token` for every byte kind; images by the formula.
    pub fn uniform(bytes_per_token: f64) -> Self {
        let mut b = [bytes_per_token; N_KINDS];
        b[BlockKind::Image.index()] = 1.0;
        Estimator { bytes_per_token: b }
    }

    /// Tokens for a feature vector (see [`kind_features`]), unrounded.
    pub fn estimate_features(&self, f: &[f64; N_KINDS]) -> f64 {
        f.iter().zip(&self.bytes_per_token).map(|(x, b)| if *b > 0.0 { x / b } else { 0.0 }).sum()
    }

    /// Tokens of one block, rounded up.
    pub fn estimate(&self, block: &Json<'_>, kind: BlockKind) -> u32 {
        let t = self.estimate_features(&kind_features(block, kind)).ceil();
        if t.is_finite() { t.clamp(0.0, f64::from(u32::MAX)) as u32 } else { 0 }
    }

    /// `self` as the callback [`blocks_of`](super::blocks_of) takes.
    pub fn tokens_fn(&self) -> impl Fn(&Json<'_>, BlockKind) -> u32 + '_ {
        move |b, k| self.estimate(b, k)
    }

    /// Least-squares fit of tokens-per-feature with every coefficient ≥ 0
    /// (Lawson–Hanson active set on the normal equations, N ≤ 6) from
    /// samples of (features summed over a prompt, its recorded tokens).
    /// A kind that never occurs keeps the default; a kind fitted to 0
    /// tokens gets `f64::INFINITY` bytes per token. The same as adding each
    /// sample to a [`Fit`] in order and solving it.
    pub fn fit(samples: &[([f64; N_KINDS], f64)]) -> Estimator {
        let mut fit = Fit::default();
        for (x, y) in samples {
            fit.add(x, *y);
        }
        fit.solve()
    }
}

/// The normal equations of [`Estimator::fit`], summed one sample at a time:
/// a fit over any number of samples in 6 × 7 numbers, not the samples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Fit {
    g: [[f64; N_KINDS]; N_KINDS],
    rhs: [f64; N_KINDS],
    /// Samples added.
    pub samples: u64,
}

impl Fit {
    /// One sample: features `x`, recorded tokens `y`.
    pub fn add(&mut self, x: &[f64; N_KINDS], y: f64) {
        for i in 0..N_KINDS {
            self.rhs[i] += x[i] * y;
            for j in 0..N_KINDS {
                self.g[i][j] += x[i] * x[j];
            }
        }
        self.samples += 1;
    }

    /// The estimator of the samples added (see [`Estimator::fit`]).
    pub fn solve(&self) -> Estimator {
        let (g, rhs) = (&self.g, &self.rhs);
        let coef = nnls(g, rhs);
        let default = Estimator::default();
        let mut out = default;
        for k in 0..N_KINDS {
            out.bytes_per_token[k] = if g[k][k] <= 0.0 {
                default.bytes_per_token[k]
            } else if coef[k] > 0.0 {
                1.0 / coef[k]
            } else {
                f64::INFINITY
            };
        }
        out
    }
}

/// Solve `g[set,set] x = rhs[set]` (zeros outside `set`) by Gaussian
/// elimination with partial pivoting; `None` when singular.
fn solve_on(g: &[[f64; N_KINDS]; N_KINDS], rhs: &[f64; N_KINDS], set: &[bool; N_KINDS]) -> Option<[f64; N_KINDS]> {
    let idx: smallvec::SmallVec<[usize; N_KINDS]> = (0..N_KINDS).filter(|&k| set[k]).collect();
    let n = idx.len();
    let mut a = [[0.0; N_KINDS + 1]; N_KINDS];
    for (r, &i) in idx.iter().enumerate() {
        for (c, &j) in idx.iter().enumerate() {
            a[r][c] = g[i][j];
        }
        a[r][n] = rhs[i];
    }
    let scale = (0..n).map(|r| a[r][r].abs()).fold(0.0, f64::max);
    for col in 0..n {
        let piv = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[piv][col].abs() <= 1e-12 * scale {
            return None;
        }
        a.swap(col, piv);
        let pivot = a[col];
        for (r, row) in a.iter_mut().enumerate().take(n) {
            if r != col {
                let f = row[col] / pivot[col];
                for (x, p) in row.iter_mut().zip(&pivot).take(n + 1).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut x = [0.0; N_KINDS];
    for (r, &i) in idx.iter().enumerate() {
        x[i] = a[r][n] / a[r][r];
    }
    Some(x)
}

/// Non-negative least squares from the normal equations `g x = rhs`
/// (Lawson & Hanson 1974, ch. 23).
fn nnls(g: &[[f64; N_KINDS]; N_KINDS], rhs: &[f64; N_KINDS]) -> [f64; N_KINDS] {
    let mut x = [0.0; N_KINDS];
    let mut set = [false; N_KINDS];
    let mut barred = [false; N_KINDS];
    let tol = 1e-12 * rhs.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    for _ in 0..4 * N_KINDS {
        let grad = |x: &[f64; N_KINDS], k: usize| rhs[k] - (0..N_KINDS).map(|j| g[k][j] * x[j]).sum::<f64>();
        let Some(t) = (0..N_KINDS)
            .filter(|&k| !set[k] && !barred[k] && g[k][k] > 0.0 && grad(&x, k) > tol)
            .max_by(|&a, &b| grad(&x, a).total_cmp(&grad(&x, b)))
        else {
            break;
        };
        set[t] = true;
        for _ in 0..4 * N_KINDS {
            let Some(s) = solve_on(g, rhs, &set) else {
                // Collinear with the set: this kind adds nothing.
                set[t] = false;
                barred[t] = true;
                break;
            };
            if (0..N_KINDS).filter(|&k| set[k]).all(|k| s[k] > 0.0) {
                x = s;
                break;
            }
            let alpha =
                (0..N_KINDS).filter(|&k| set[k] && s[k] <= 0.0).map(|k| x[k] / (x[k] - s[k])).fold(1.0f64, f64::min);
            for k in 0..N_KINDS {
                x[k] += alpha * (s[k] - x[k]);
                if set[k] && x[k] <= 1e-15 {
                    set[k] = false;
                    x[k] = 0.0;
                }
            }
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::sim::test_util::*;
    use bumpalo::Bump;

    #[test]
    fn image_tokens_follow_the_vision_formula() {
        assert_eq!(image_tokens(200, 200), 54);
        assert_eq!(image_tokens(1092, 1092), 1590);
        assert_eq!(image_tokens(1000, 1000), 1334);
        assert!(image_tokens(4000, 3000) <= IMAGE_TOKENS_UNKNOWN);
        assert!(image_tokens(4000, 3000) >= IMAGE_TOKENS_UNKNOWN - 2);
        use base64::Engine;
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(1092u32.to_be_bytes());
        png.extend(546u32.to_be_bytes());
        png.extend([8, 6, 0, 0, 0]);
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let bump = Bump::new();
        let img =
            format!(r#"{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"{data}"}}}}"#);
        let img = parse(&bump, &img);
        assert_eq!(image_dims(img), Some((1092, 546)));
        assert_eq!(Estimator::default().estimate(img, BlockKind::Image), 795);
        let jpeg = [0xff, 0xd8, 0xff, 0xe0, 0, 4, 0, 0, 0xff, 0xc0, 0, 11, 8, 0, 100, 0, 200, 3, 0, 0, 0];
        let data = base64::engine::general_purpose::STANDARD.encode(jpeg);
        let j = format!(r#"{{"type":"image","source":{{"type":"base64","data":"{data}"}}}}"#);
        assert_eq!(image_dims(parse(&bump, &j)), Some((200, 100)));
        // An image inside a tool result counts by the formula, the rest by bytes.
        let tr = format!(r#"{{"type":"tool_result","content":[{}]}}"#, img.to_compact_string());
        let f = kind_features(parse(&bump, &tr), BlockKind::ToolResult);
        assert_eq!(f[BlockKind::Image.index()], 795.0);
        assert_eq!(f[BlockKind::ToolResult.index()], r#"{"type":"tool_result","content":[null]}"#.len() as f64);
        let unknown = parse(&bump, r#"{"type":"image","source":{"type":"url","url":"x"}}"#);
        assert_eq!(image_block_tokens(unknown), IMAGE_TOKENS_UNKNOWN);
    }

    #[test]
    fn estimator_default_and_fit() {
        let bump = Bump::new();
        let t = parse(&bump, r#"{"type":"text","text":"hello world"}"#);
        // 36 bytes / 4 = 9 tokens.
        assert_eq!(Estimator::default().estimate(t, BlockKind::Text), 9);
        // tokens = text/4 + tool_use/2.5 + tools/3 exactly; no system data.
        let truth = [0.25, 0.4, 0.0, 1.0, 0.0, 1.0 / 3.0];
        let samples: Vec<([f64; N_KINDS], f64)> = (0..20)
            .map(|i| {
                let i = f64::from(i);
                let x = [100.0 + 37.0 * i, 50.0 * (i % 3.0), 0.0, 0.0, 0.0, 900.0 + 11.0 * i * i];
                (x, x.iter().zip(&truth).map(|(a, b)| a * b).sum())
            })
            .collect();
        let e = Estimator::fit(&samples);
        assert!((e.bytes_per_token[0] - 4.0).abs() < 1e-6, "{e:?}");
        assert!((e.bytes_per_token[1] - 2.5).abs() < 1e-6, "{e:?}");
        assert!((e.bytes_per_token[5] - 3.0).abs() < 1e-6, "{e:?}");
        assert_eq!(e.bytes_per_token[BlockKind::System.index()], 4.0);
        assert_eq!(e.bytes_per_token[BlockKind::Image.index()], 1.0);
        // A kind whose unconstrained coefficient would be negative is held at 0.
        let samples = [([10.0, 10.0, 0.0, 0.0, 0.0, 0.0], 5.0), ([10.0, 0.0, 0.0, 0.0, 0.0, 0.0], 6.0)];
        let e = Estimator::fit(&samples);
        assert_eq!(e.bytes_per_token[1], f64::INFINITY);
        assert!((e.bytes_per_token[0] - 200.0 / 110.0).abs() < 1e-9, "{e:?}");
    }
}
