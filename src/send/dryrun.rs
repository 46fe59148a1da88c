//! `send --dry-run`: what would be sent, per model — requests, estimated
//! input tokens (body bytes / 4, the estimate the limiter starts from) and
//! their cost at the model's base input price from
//! [`crate::cost::pricing::Pricing`]. No cache reads or writes are assumed
//! (a real run that hits the cache costs less, one that writes it more) and
//! output is not counted: the estimate is a bound of the input side only.

use super::input::Input;
use crate::cost::pricing::Pricing;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One model's row.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRow {
    pub model: String,
    pub requests: u64,
    pub input_tokens: u64,
    /// `None` when the model has no price.
    pub cost_usd: Option<f64>,
}

/// Rows by model name.
pub fn estimate(input: &Input, pricing: &Pricing) -> Vec<ModelRow> {
    let mut by: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for r in &input.requests {
        let e = by.entry(&r.model).or_default();
        e.0 += 1;
        e.1 += r.estimated_input_tokens();
    }
    by.into_iter()
        .map(|(model, (requests, input_tokens))| ModelRow {
            model: model.to_string(),
            requests,
            input_tokens,
            cost_usd: pricing.price(model).map(|p| input_tokens as f64 * p.input / 1e6),
        })
        .collect()
}

/// The table `--dry-run` prints.
pub fn render(rows: &[ModelRow]) -> String {
    let width = rows.iter().map(|r| r.model.len()).chain([5]).max().unwrap_or(5);
    let mut o = String::new();
    let _ =
        writeln!(o, "{:<width$}  {:>9}  {:>17}  {:>14}", "model", "requests", "est. input tokens", "est. input USD");
    let cost = |c: Option<f64>| c.map_or_else(|| "unpriced".to_string(), |c| format!("{c:.6}"));
    for r in rows {
        let _ = writeln!(o, "{:<width$}  {:>9}  {:>17}  {:>14}", r.model, r.requests, r.input_tokens, cost(r.cost_usd));
    }
    let requests: u64 = rows.iter().map(|r| r.requests).sum();
    let tokens: u64 = rows.iter().map(|r| r.input_tokens).sum();
    let priced: f64 = rows.iter().filter_map(|r| r.cost_usd).sum();
    let unpriced = rows.iter().any(|r| r.cost_usd.is_none());
    let total = format!("{priced:.6}{}", if unpriced { "+" } else { "" });
    let _ = writeln!(o, "{:<width$}  {:>9}  {:>17}  {:>14}", "total", requests, tokens, total);
    let _ = writeln!(
        o,
        "estimates: input tokens = request body bytes / 4; USD = those tokens at each model's base input price \
         (no cache reads or writes assumed, output not counted){}",
        if unpriced { "; + = some models have no price" } else { "" }
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_table() {
        let text = concat!(
            "{\"custom_id\":\"a\",\"params\":{\"model\":\"claude-haiku-4-5\",\"max_tokens\":1}}\n",
            "{\"custom_id\":\"b\",\"params\":{\"model\":\"claude-haiku-4-5\",\"max_tokens\":2}}\n",
            "{\"custom_id\":\"c\",\"params\":{\"model\":\"mystery\"}}\n",
        );
        let input = super::super::input::parse(bytes::Bytes::from(text), "x");
        let rows = estimate(&input, &Pricing::builtin());
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].requests, 2);
        assert_eq!(rows[0].input_tokens, 22);
        assert_eq!(rows[0].cost_usd, Some(22.0 * 1.0 / 1e6));
        assert_eq!(rows[1].cost_usd, None);
        let t = render(&rows);
        assert_eq!(t.lines().next().unwrap(), "model              requests  est. input tokens  est. input USD");
        assert!(t.contains("total                     3                 27       0.000022+\n"), "{t}");
    }
}
