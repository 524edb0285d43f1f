//! An episode's figures from its rounds and totals.

use super::{MarketFile, MarketRound, TenantTotals};
use serde::Serialize;

/// An episode's figures: what the exchange sold, what tenants paid for their work and what
/// the work was worth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MarketMetrics {
    /// Rounds played.
    pub rounds: u32,
    /// Per type: the share of its accelerator-rounds a job ran on (auctioned types; `None` on
    /// demand, which has no fixed size). Reserved, idle accelerators count as unused.
    pub utilisation: Vec<Option<f64>>,
    /// Per type: job-rounds run on it.
    pub job_rounds: Vec<u64>,
    /// Money paid for auctioned accelerators.
    pub revenue: f64,
    /// Money paid on demand.
    pub on_demand_spend: f64,
    /// Per tenant: money paid per unit of work done (`None` before any work).
    pub cost_per_work: Vec<Option<f64>>,
    /// Per tenant: the value of its finished work minus what it paid (quasi-linear).
    pub utility: Vec<f64>,
    /// Moves of running jobs, all tenants.
    pub migrations: u32,
    /// Work units lost to evictions and moves, all tenants.
    pub work_lost: f64,
    /// Value of the finished work, all tenants.
    pub welfare: f64,
    /// Jobs finished.
    pub finished: usize,
    /// Per type, per round: the exchange price.
    pub prices: Vec<Vec<f64>>,
}

impl MarketMetrics {
    /// The figures of an episode of `file` from its rounds and totals ([`Market::run`]).
    pub fn compute(file: &MarketFile, rounds: &[MarketRound], totals: &[TenantTotals]) -> Self {
        let types = &file.market.types;
        let hours = file.market.round_hours;
        let mut job_rounds = vec![0u64; types.len()];
        let (mut revenue, mut on_demand_spend) = (0.0, 0.0);
        for r in rounds {
            for t in &r.tenants {
                if let Some(ty) = t.ty {
                    job_rounds[ty] += 1;
                    if types[ty].on_demand {
                        on_demand_spend += t.price * hours;
                    } else {
                        revenue += t.price * hours;
                    }
                }
            }
        }
        let played = rounds.len() as f64;
        Self {
            rounds: rounds.len() as u32,
            utilisation: types
                .iter()
                .zip(&job_rounds)
                .map(|(t, &j)| (!t.on_demand).then(|| j as f64 / (f64::from(t.count) * played.max(1.0))))
                .collect(),
            job_rounds,
            revenue,
            on_demand_spend,
            cost_per_work: totals.iter().map(|t| (t.progress > 0.0).then(|| t.spent / t.progress)).collect(),
            utility: totals.iter().map(|t| t.earned - t.spent).collect(),
            migrations: totals.iter().map(|t| t.migrations).sum(),
            work_lost: totals.iter().map(|t| t.lost).sum(),
            welfare: totals.iter().map(|t| t.earned).sum(),
            finished: totals.iter().filter(|t| t.finished.is_some()).count(),
            prices: (0..types.len()).map(|ty| rounds.iter().map(|r| r.prices[ty]).collect()).collect(),
        }
    }
}
