//! Every figure of an episode, named once: its key (in `summary.json`, CSV columns,
//! `metrics.jsonl` and sweep objectives), its label and unit (in `mtf simulate`'s table), its
//! column in comparison tables, its TensorBoard tag in training runs, and how to read it off an
//! episode. `eval::Summary` holds one statistic per entry; the tables, the CSV, the training
//! log and the sweep read the list. Adding a figure is one entry here (and its computation in
//! [`super::EpisodeMetrics`] when it is new).

use super::EpisodeMetrics;
use crate::config::World;

/// How a summary shows a figure that its episodes did not compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    /// As `null` (the fairness figures, computed on request).
    Null,
    /// Not at all (a figure of another world).
    Omit,
}

/// A family of per-class or per-agent statistics a table shows after a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Throughput per weight class (`throughput_by_weight`).
    ThroughputByWeight,
    /// The mean bid factor of every agent (`bid_factor`, the valuation world).
    BidFactors,
}

/// One figure of an episode.
#[derive(Debug)]
pub struct Metric {
    /// Its name: the key in `summary.json` and `metrics.jsonl`, the CSV column's stem, the sweep
    /// objective's and the pruner's name.
    pub key: &'static str,
    /// Its row in `mtf simulate`'s table (label and unit), if it has one.
    pub label: Option<&'static str>,
    /// Its column header in comparison tables (`comparison.md`, `comparison.csv`), if it has one.
    pub column: Option<&'static str>,
    /// Its TensorBoard tag in training runs, where it is logged every episode.
    pub tag: Option<&'static str>,
    /// The world the figure belongs to (`None`: every world): tables of the valuation world,
    /// which has no jobs, leave the queue world's figures out, and the other way round.
    pub world: Option<World>,
    /// How a summary shows it when its episodes did not compute it.
    pub absent: Absent,
    /// The family tables show after it.
    pub then: Option<Family>,
    /// Its value in one episode (`None`: the episode did not compute it).
    pub of: fn(&EpisodeMetrics) -> Option<f64>,
}

impl Metric {
    /// The figure named `key`, if there is one.
    pub fn named(key: &str) -> Option<&'static Metric> {
        METRICS.iter().find(|m| m.key == key)
    }

    /// Every key, for messages.
    pub fn keys(of: impl Fn(&Metric) -> bool) -> Vec<&'static str> {
        METRICS.iter().filter(|m| of(m)).map(|m| m.key).collect()
    }
}

fn per_round(total: u64, e: &EpisodeMetrics) -> f64 {
    total as f64 / f64::from(e.rounds.max(1))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let k = s.len();
    if k % 2 == 1 {
        s[k / 2]
    } else {
        (s[k / 2 - 1] + s[k / 2]) / 2.0
    }
}

/// Above this share of the largest entropy, a policy is reported as near-uniform: its greedy
/// action is an argmax of noise.
pub const NEAR_UNIFORM: f64 = 0.9;

/// A figure of the queue world with no table column, tag or family, present in every episode.
const BASE: Metric = Metric {
    key: "",
    label: None,
    column: None,
    tag: None,
    world: Some(World::Queues),
    absent: Absent::Null,
    then: None,
    of: |_| None,
};

/// Weighted social welfare (jobs per round): the headline figure. Its label says it is the
/// weight-weighted mean of the agents' throughputs, not the total ("jobs/round" alone read as
/// the total: issue 40.8).
pub const WELFARE: Metric = Metric {
    key: "welfare",
    label: Some("welfare (weighted mean of agents' jobs/round)"),
    column: Some("welfare"),
    tag: Some("charts/welfare"),
    of: |e| Some(e.welfare),
    ..BASE
};

/// Every figure, in the order tables show them.
pub static METRICS: &[Metric] = &[
    WELFARE,
    Metric {
        key: "throughput",
        label: Some("throughput (jobs/round)"),
        tag: Some("charts/throughput"),
        then: Some(Family::ThroughputByWeight),
        of: |e| Some(e.throughput.iter().sum()),
        ..BASE
    },
    Metric {
        key: "dropped",
        label: Some("dropped (jobs/round)"),
        column: Some("dropped/round"),
        tag: Some("charts/dropped"),
        of: |e| Some(per_round(e.dropped.iter().sum(), e)),
        ..BASE
    },
    Metric {
        key: "rejected",
        label: Some("rejected (jobs/round)"),
        of: |e| Some(per_round(e.rejected.iter().sum(), e)),
        ..BASE
    },
    Metric {
        key: "mean_wait",
        label: Some("mean wait (rounds)"),
        of: |e| Some(mean(&e.mean_wait)),
        ..BASE
    },
    Metric {
        key: "backlog",
        label: Some("backlog (jobs/agent)"),
        of: |e| Some(mean(&e.backlog)),
        ..BASE
    },
    Metric {
        key: "reward",
        label: Some("reward (per agent-round)"),
        tag: Some("charts/mean_reward"),
        world: None,
        of: |e| Some(mean(&e.reward)),
        ..BASE
    },
    Metric {
        key: "tokens_spent",
        label: Some("tokens spent (per round)"),
        tag: Some("mechanism/tokens_spent"),
        world: None,
        of: |e| Some(e.spent.iter().sum()),
        ..BASE
    },
    Metric {
        key: "jain",
        label: Some("Jain's index"),
        column: Some("Jain"),
        of: |e| Some(e.jain),
        ..BASE
    },
    Metric {
        key: "phi_min",
        label: Some("phi min"),
        column: Some("phi min"),
        of: |e| e.fairness.as_ref().map(|f| f.phi.iter().copied().fold(f64::INFINITY, f64::min)),
        ..BASE
    },
    Metric {
        key: "phi_median",
        label: Some("phi median"),
        column: Some("phi median"),
        of: |e| e.fairness.as_ref().map(|f| median(&f.phi)),
        ..BASE
    },
    Metric {
        key: "si_violations",
        label: Some("SI violations (agents)"),
        of: |e| e.fairness.as_ref().map(|f| f.phi.iter().filter(|&&p| p < 1.0).count() as f64),
        ..BASE
    },
    Metric {
        key: "ef_violations",
        label: Some("EF violations (pairs)"),
        column: Some("EF violations"),
        of: |e| e.fairness.as_ref().map(|f| f.ef_violations as f64),
        ..BASE
    },
    Metric {
        key: "pareto",
        label: Some("Pareto (share of rounds)"),
        column: Some("Pareto"),
        of: |e| e.fairness.as_ref().map(|f| f.pareto),
        ..BASE
    },
    Metric {
        key: "revenue_per_item",
        label: Some("revenue (per item)"),
        column: Some("revenue/item"),
        tag: Some("auction/revenue_per_item"),
        world: Some(World::Valuations),
        absent: Absent::Omit,
        of: |e| e.auction.as_ref().map(|a| a.revenue_per_item),
        ..BASE
    },
    Metric {
        key: "surplus_per_bidder_item",
        label: Some("surplus (per bidder per item)"),
        tag: Some("auction/surplus_per_bidder_item"),
        world: Some(World::Valuations),
        absent: Absent::Omit,
        of: |e| e.auction.as_ref().map(|a| a.surplus_per_bidder_item),
        ..BASE
    },
    Metric {
        key: "sold_share",
        label: Some("items sold (share)"),
        column: Some("sold share"),
        tag: Some("auction/sold_share"),
        world: Some(World::Valuations),
        absent: Absent::Omit,
        then: Some(Family::BidFactors),
        of: |e| e.auction.as_ref().map(|a| a.sold_share),
    },
    Metric {
        key: "sched_us",
        label: Some("scheduling time (us/round)"),
        column: Some("sched us"),
        world: None,
        of: |e| Some(e.sched_us),
        ..BASE
    },
    Metric {
        key: "entropy_share",
        label: Some("policy entropy (share of ln K)"),
        column: Some("entropy"),
        world: None,
        absent: Absent::Omit,
        of: |e| e.entropy_share,
        ..BASE
    },
    Metric {
        key: "paid_share",
        world: None,
        of: |e| Some(e.paid_share),
        ..BASE
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tags_are_unique_and_welfare_comes_first() {
        let keys = Metric::keys(|_| true);
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "{keys:?}");
        let tags: Vec<_> = METRICS.iter().filter_map(|m| m.tag).collect();
        let mut t = tags.clone();
        t.sort();
        t.dedup();
        assert_eq!(t.len(), tags.len());
        assert_eq!(METRICS[0].key, "welfare");
        assert_eq!(Metric::named("jain").unwrap().label, Some("Jain's index"));
        assert!(Metric::named("nope").is_none());
    }

    #[test]
    fn figures_of_a_hand_made_episode() {
        let e = EpisodeMetrics {
            rounds: 4,
            throughput: vec![2.0, 4.0],
            dropped: vec![3, 5],
            rejected: vec![0, 2],
            mean_wait: vec![1.0, 2.0],
            backlog: vec![10.0, 20.0],
            reward: vec![0.5, 1.5],
            spent: vec![0.25, 0.75],
            welfare: 3.5,
            fairness: Some(super::super::Fairness {
                phi: vec![0.5, 1.5, 2.0],
                ..Default::default()
            }),
            ..Default::default()
        };
        let value = |k: &str| (Metric::named(k).unwrap().of)(&e);
        assert_eq!(value("throughput"), Some(6.0));
        assert_eq!(value("dropped"), Some(2.0));
        assert_eq!(value("rejected"), Some(0.5));
        assert_eq!(value("mean_wait"), Some(1.5));
        assert_eq!(value("reward"), Some(1.0));
        assert_eq!(value("tokens_spent"), Some(1.0));
        assert_eq!(value("phi_min"), Some(0.5));
        assert_eq!(value("phi_median"), Some(1.5));
        assert_eq!(value("si_violations"), Some(1.0));
        assert_eq!(value("revenue_per_item"), None);
    }
}
