//! What a learned bid policy sees of a tenant: the features, their names and their length.

use super::{Market, Place};

impl Market {
    /// Length of [`Market::observe`]'s features with `types` accelerator types.
    pub fn obs_dim(types: usize) -> usize {
        6 + 3 * types
    }

    /// Names of [`Market::observe`]'s features, for `types` (named) accelerator types.
    pub fn observe_names(types: &[String]) -> Vec<String> {
        let mut v: Vec<String> = [
            "active",
            "work_left",
            "since_checkpoint",
            "decides",
            "deadline_slack",
            "budget_left",
        ]
        .map(String::from)
        .to_vec();
        for t in types {
            v.extend([format!("price_over_base:{t}"), format!("runs_on:{t}"), format!("speed_share:{t}")]);
        }
        v
    }

    /// Bounds of [`Market::observe`]'s features, `(low, high)`: the deadline's slack may be
    /// negative, a price over its base price is capped at 10, the rest are shares and flags.
    pub fn observe_bounds(types: usize) -> (Vec<f32>, Vec<f32>) {
        let mut low = vec![0.0, 0.0, 0.0, 0.0, -1.0, 0.0];
        let mut high = vec![1.0; 6];
        for _ in 0..types {
            low.extend([0.0, 0.0, 0.0]);
            high.extend([10.0, 1.0, 1.0]);
        }
        (low, high)
    }

    /// What a learned bid policy sees of tenant i before the round is played, each feature
    /// in [-1, 10] (prices over base prices capped at 10, the rest in [-1, 1]): whether its job is in the market (or arrives this round); the share
    /// of its work left; its work since its last checkpoint over the checkpoint interval;
    /// whether it decides this round (it arrives, waits, or is at a checkpoint: its launch
    /// table changes only then); its deadline's slack over the deadline (1 without one); its
    /// budget left over its budget (1 without one); then per type the last price over the
    /// base price, whether it runs there, and its speed there over its best speed.
    pub fn observe(&self, i: usize, out: &mut [f32]) {
        let spec = &self.file.market;
        let (tn, t) = (&spec.tenants[i], &self.tenants[i]);
        let arriving = t.place == Place::Absent && tn.arrival == self.round;
        let active = self.active(i) || arriving;
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let age = f64::from(self.round.saturating_sub(tn.arrival));
        let best = tn.speeds.iter().copied().fold(0.0, f64::max);
        let on = self.running(i, None).map(|(ty, _)| ty);
        out[0] = flag(active);
        out[1] = ((tn.work - t.progress) / tn.work).clamp(0.0, 1.0) as f32;
        out[2] = ((t.progress - t.last_checkpoint) / tn.checkpoint).clamp(0.0, 1.0) as f32;
        out[3] = flag(arriving || t.place == Place::Waiting || (t.decide && self.active(i)));
        out[4] = tn
            .deadline
            .map_or(1.0, |d| ((f64::from(d) - age) / f64::from(d.max(1))).clamp(-1.0, 1.0)) as f32;
        out[5] = tn
            .budget
            .map_or(1.0, |b| if b > 0.0 { ((b - t.spent) / b).clamp(0.0, 1.0) } else { 0.0 }) as f32;
        for (ty, ts) in spec.types.iter().enumerate() {
            let at = 6 + 3 * ty;
            out[at] = if ts.base_price > 0.0 {
                (self.prices[ty] / ts.base_price).min(10.0) as f32
            } else {
                1.0
            };
            out[at + 1] = flag(on == Some(ty));
            out[at + 2] = if best > 0.0 { (tn.speeds[ty] / best) as f32 } else { 0.0 };
        }
    }
}
