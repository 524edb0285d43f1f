//! A market episode told round by round (what `mtf simulate` prints of a market): every type's
//! price and where each tenant ran each round (for small episodes), then the totals; and the
//! series its figures draw (the price per type over the rounds, the cost per unit of work per
//! tenant). Told through `World::story` (`mtf simulate`).

use super::{MarketFile, MarketMetrics, MarketRound, Place};
use crate::worlds::Series;
use std::fmt::Write;

/// Rounds and tenants up to which the story prints every round.
pub const TABLE_ROUNDS: usize = 60;
/// See [`TABLE_ROUNDS`].
pub const TABLE_TENANTS: usize = 12;

/// The story of an episode of `file` that played `rounds` and ended with `metrics`.
pub fn text(file: &MarketFile, rounds: &[MarketRound], metrics: &MarketMetrics) -> String {
    let types: Vec<&str> = file.market.types.iter().map(|t| t.name.as_str()).collect();
    let tenants: Vec<&str> = file.market.tenants.iter().map(|t| t.name.as_str()).collect();
    // The type of every auctioned accelerator (numbered type by type), for reservations.
    let unit_types: Vec<usize> = file
        .market
        .types
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.on_demand)
        .flat_map(|(ty, t)| std::iter::repeat_n(ty, t.count as usize))
        .collect();
    let m = metrics;
    let mut f = String::new();
    if rounds.len() <= TABLE_ROUNDS && tenants.len() <= TABLE_TENANTS {
        let head: Vec<String> = types
            .iter()
            .map(|t| format!("{t} price"))
            .chain(tenants.iter().map(|t| t.to_string()))
            .collect();
        let _ = writeln!(f, "| round | {} |", head.join(" | "));
        let _ = writeln!(f, "|---|{}", "---|".repeat(head.len()));
        for (r, round) in rounds.iter().enumerate() {
            let cells: Vec<String> = round
                .prices
                .iter()
                .map(|p| format!("{p:.4}"))
                .chain(round.tenants.iter().map(|t| {
                    let at = match (t.place, t.ty) {
                        (Place::Absent, _) => "-".to_string(),
                        (Place::Done, _) => "done".to_string(),
                        (_, Some(ty)) => format!("{} at {:.4}", types[ty], t.price),
                        _ => "waiting".to_string(),
                    };
                    match t.reserved {
                        Some(c) => format!("{at} ({} reserved)", types[unit_types[c]]),
                        None => at,
                    }
                }))
                .collect();
            let _ = writeln!(f, "| {r} | {} |", cells.join(" | "));
        }
    }
    let _ = writeln!(
        f,
        "welfare (value of finished work) {:.4}, {} of {} jobs finished; revenue {:.4}, on demand {:.4}; {} migrations, {:.4} work units lost",
        m.welfare,
        m.finished,
        tenants.len(),
        m.revenue,
        m.on_demand_spend,
        m.migrations,
        m.work_lost
    );
    let util: Vec<String> = types
        .iter()
        .zip(&m.utilisation)
        .filter_map(|(t, u)| u.map(|u| format!("{t} {u:.3}")))
        .collect();
    let _ = writeln!(f, "utilisation: {}", util.join(", "));
    if tenants.len() <= TABLE_TENANTS {
        for (i, name) in tenants.iter().enumerate() {
            let cost = m.cost_per_work[i].map_or("-".into(), |c| format!("{c:.4}"));
            let _ = writeln!(f, "{name}: cost per unit of work {cost}, utility {:.4}", m.utility[i]);
        }
    }
    f
}

/// The figures of an episode: `prices` (each type's exchange price per round) and
/// `cost_per_work` (what each tenant paid per unit of work done, tenants in file order; 0
/// before any work).
pub fn series(file: &MarketFile, metrics: &MarketMetrics) -> Vec<Series> {
    let rounds = metrics.prices.first().map_or(0, Vec::len);
    let prices = Series {
        name: "prices".into(),
        title: "Exchange price per accelerator type".into(),
        x: "round".into(),
        y: "price per hour".into(),
        xs: (0..rounds).map(|r| r as f64).collect(),
        lines: file
            .market
            .types
            .iter()
            .zip(&metrics.prices)
            .map(|(t, p)| (t.name.clone(), p.clone()))
            .collect(),
    };
    let n = metrics.cost_per_work.len();
    let cost = Series {
        name: "cost_per_work".into(),
        title: "Money paid per unit of work, per tenant".into(),
        x: "tenant (file order)".into(),
        y: "cost per unit of work".into(),
        xs: (1..=n).map(|i| i as f64).collect(),
        lines: vec![(
            "cost per unit of work".into(),
            metrics.cost_per_work.iter().map(|c| c.unwrap_or(0.0)).collect(),
        )],
    };
    vec![prices, cost]
}
