//! What every chart shares: the `<svg>` opening, a "nice" axis and its USD
//! ticks, the legend, even sampling of long series, the x axis of the
//! horizontal bar charts.
//!
//! Drawing primitives only: no report data is read here.

use super::W;
use super::text::{C, E};
use crate::cost::format::fixed;
use std::fmt::Write as _;

pub(super) fn svg_open(o: &mut String, id: &str, h: f64, label: &str) {
    w!(
        o,
        "<svg id=\"{id}\" role=\"img\" aria-label=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\">\n<title>{}</title>\n",
        E(label),
        C(W),
        C(h),
        C(W),
        C(h),
        E(label)
    );
}

/// A step of 1, 2 or 5 × 10ⁿ giving about `n` intervals up to `max`, and
/// the axis top (a multiple of it, ≥ `max`). `(1, 0.25)` without data.
pub(super) fn nice_axis(max: f64, n: usize) -> (f64, f64) {
    if !max.is_finite() || max <= 0.0 {
        return (1.0, 0.25);
    }
    let raw = max / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let step = mag
        * if f <= 1.0 {
            1.0
        } else if f <= 2.0 {
            2.0
        } else if f <= 5.0 {
            5.0
        } else {
            10.0
        };
    let top = (max / step - 1e-9).ceil().max(1.0) * step;
    if step.is_finite() && step > 0.0 && top.is_finite() { (top, step) } else { (1.0, 0.25) }
}

/// A tick label in USD with as many decimals as `step` needs.
pub(super) fn usd_tick(v: f64, step: f64) -> String {
    let d = if step >= 1.0 { 0 } else { (-step.log10().floor()).clamp(0.0, 8.0) as usize };
    format!("${}", fixed(v, d))
}

/// Legend items: label, colour, and `Swatch`.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Swatch {
    Box,
    Line,
    Dashed,
}

pub(super) fn legend(o: &mut String, x: f64, y: f64, items: &[(&str, &str, Swatch)]) {
    let mut x = x;
    for &(label, color, swatch) in items {
        if swatch != Swatch::Box {
            let dash = if swatch == Swatch::Dashed { " stroke-dasharray=\"4 3\"" } else { "" };
            w!(
                o,
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>",
                C(x),
                C(y - 4.0),
                C(x + 18.0),
                C(y - 4.0)
            );
        } else {
            w!(o, "<rect x=\"{}\" y=\"{}\" width=\"18\" height=\"10\" fill=\"{color}\"/>", C(x), C(y - 9.0));
        }
        w!(o, "<text x=\"{}\" y=\"{}\">{}</text>\n", C(x + 24.0), C(y), E(label));
        x += 34.0 + 7.0 * label.chars().count() as f64;
    }
}

/// Indices of at most `max` evenly spaced items of `n` (all when `n ≤ max`).
pub(super) fn sample(n: usize, max: usize) -> Vec<usize> {
    if n <= max || max < 2 {
        return (0..n.min(max.max(1))).collect();
    }
    (0..max).map(|k| k * (n - 1) / (max - 1)).collect()
}

/// The x axis of a horizontal bar chart: grid, ticks, labels.
pub(super) fn x_axis_usd(o: &mut String, x0: f64, x1: f64, y0: f64, y1: f64, axis: (f64, f64)) {
    let (top, step) = axis;
    let n = (top / step).round().clamp(1.0, 20.0) as usize;
    for k in 0..=n {
        let v = step * k as f64;
        let x = x0 + v / top * (x1 - x0);
        w!(o, "<line class=\"gr\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>", C(x), C(y0), C(x), C(y1));
        w!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">{}</text>\n",
            C(x),
            C(y1 + 15.0),
            E(&usd_tick(v, step))
        );
    }
    w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", C(x0), C(y1), C(x1), C(y1));
    w!(o, "<line class=\"ax\" x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", C(x0), C(y0), C(x0), C(y1));
    w!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"lbl\">cost (USD)</text>\n",
        C((x0 + x1) / 2.0),
        C(y1 + 31.0)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_and_samples() {
        assert_eq!(nice_axis(0.0, 5), (1.0, 0.25));
        assert_eq!(nice_axis(f64::NAN, 5), (1.0, 0.25));
        let (top, step) = nice_axis(7.3, 5);
        assert_eq!(step, 2.0);
        assert_eq!(top, 8.0);
        assert_eq!(sample(5, 10), vec![0, 1, 2, 3, 4]);
        let s = sample(10_000, 2000);
        assert_eq!(s.len(), 2000);
        assert_eq!(s.first(), Some(&0));
        assert_eq!(s.last(), Some(&9999));
        assert!(sample(0, 10).is_empty());
    }
}
