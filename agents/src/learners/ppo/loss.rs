//! PPO's pure pieces, each tested against a hand computation: GAE, advantage
//! normalisation, the clipped surrogate and the value loss, and the per-agent gradient clip.

use burn::module::ParamId;
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

/// GAE over one agent's rollout of `T` rounds: `values` has `T + 1` entries (the last is the
/// bootstrap `V(s_T)`). Returns (advantages, returns).
pub fn gae(rewards: &[f32], values: &[f32], gamma: f32, lambda: f32) -> (Vec<f32>, Vec<f32>) {
    let t = rewards.len();
    assert_eq!(values.len(), t + 1, "values carry the bootstrap");
    let mut adv = vec![0.0; t];
    let mut next = 0.0;
    for s in (0..t).rev() {
        let delta = rewards[s] + gamma * values[s + 1] - values[s];
        next = delta + gamma * lambda * next;
        adv[s] = next;
    }
    let ret = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    (adv, ret)
}

/// Advantages normalised to mean 0 and (unbiased) standard deviation 1, as CleanRL does.
pub fn normalise(adv: &[f32]) -> Vec<f32> {
    let n = adv.len() as f32;
    let mean = adv.iter().sum::<f32>() / n;
    let var = adv.iter().map(|a| (a - mean).powi(2)).sum::<f32>() / (n - 1.0).max(1.0);
    adv.iter().map(|a| (a - mean) / (var.sqrt() + 1e-8)).collect()
}

/// The actors' loss terms, each a mean over the minibatch summed over agents: the clipped
/// surrogate `max(-A ratio, -A clip(ratio, 1 - eps, 1 + eps))` and the entropy.
///
/// # Shapes
/// every input `[n, batch, 1]`
pub fn policy_losses(new_logp: Tensor<3>, old_logp: Tensor<3>, adv: Tensor<3>, entropy: Tensor<3>, clip: f32) -> (Tensor<1>, Tensor<1>) {
    let ratio = (new_logp - old_logp).exp();
    let pg1 = -adv.clone() * ratio.clone();
    let pg2 = -adv * ratio.clamp(1.0 - clip, 1.0 + clip);
    let pg = pg1.max_pair(pg2).mean_dim(1).sum();
    let ent = entropy.mean_dim(1).sum();
    (pg, ent)
}

/// The critics' loss `0.5 (V - R)^2`, a mean over the minibatch summed over agents.
///
/// # Shapes
/// both inputs `[n, batch, 1]`
pub fn value_loss(value: Tensor<3>, ret: Tensor<3>) -> Tensor<1> {
    ((value - ret).powi_scalar(2) * 0.5).mean_dim(1).sum()
}

/// Advantages normalised as [`normalise`] does over the rows where `live`; the others 0.
pub fn normalise_live(adv: &[f32], live: &[f32]) -> Vec<f32> {
    let rows: Vec<f32> = adv.iter().zip(live).filter(|(_, &l)| l > 0.5).map(|(&a, _)| a).collect();
    if rows.is_empty() {
        return vec![0.0; adv.len()];
    }
    let mut normalised = normalise(&rows).into_iter();
    adv.iter()
        .zip(live)
        .map(|(_, &l)| {
            if l > 0.5 {
                normalised.next().expect("one per live row")
            } else {
                0.0
            }
        })
        .collect()
}

/// [`policy_losses`] over the rows where `mask` is 1 (an agent's mean over its live rows; an
/// agent with none adds 0).
///
/// # Shapes
/// every input `[n, batch, 1]`
pub fn policy_losses_masked(
    new_logp: Tensor<3>,
    old_logp: Tensor<3>,
    adv: Tensor<3>,
    entropy: Tensor<3>,
    clip: f32,
    mask: Tensor<3>,
) -> (Tensor<1>, Tensor<1>) {
    let count = mask.clone().sum_dim(1).clamp_min(1.0);
    let ratio = (new_logp - old_logp).exp();
    let pg1 = -adv.clone() * ratio.clone();
    let pg2 = -adv * ratio.clamp(1.0 - clip, 1.0 + clip);
    let pg = (pg1.max_pair(pg2) * mask.clone()).sum_dim(1).div(count.clone()).sum();
    let ent = (entropy * mask).sum_dim(1).div(count).sum();
    (pg, ent)
}

/// [`value_loss`] over the rows where `mask` is 1.
///
/// # Shapes
/// every input `[n, batch, 1]`
pub fn value_loss_masked(value: Tensor<3>, ret: Tensor<3>, mask: Tensor<3>) -> Tensor<1> {
    let count = mask.clone().sum_dim(1).clamp_min(1.0);
    ((value - ret).powi_scalar(2) * 0.5 * mask).sum_dim(1).div(count).sum()
}

/// Scale each agent's slice of the gradients of `ids` so that agent's global norm is at most
/// `max_norm`.
pub(super) fn clip_per_agent(grads: &mut GradientsParams, ids: &[ParamId], max_norm: f32) {
    let taken: Vec<(ParamId, Tensor<3>)> = ids.iter().filter_map(|&id| grads.remove::<3>(id).map(|g| (id, g))).collect();
    let Some(sq) = taken
        .iter()
        .map(|(_, g)| g.clone().powi_scalar(2).sum_dim(2).sum_dim(1))
        .reduce(|a, b| a + b)
    else {
        return;
    };
    let scale = (sq.sqrt() + 1e-6).recip().mul_scalar(max_norm).clamp_max(1.0);
    for (id, g) in taken {
        grads.register(id, g * scale.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::nets::{device, scalar};
    use burn::tensor::TensorData;

    fn t3(v: &[f32], n: usize) -> Tensor<3> {
        let b = v.len() / n;
        Tensor::from_data(TensorData::new(v.to_vec(), [n, b, 1]), &device())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn gae_matches_a_hand_computation_and_bootstraps_the_truncation() {
        // gamma 0.9, lambda 0.8, rewards 1, 0, 2, values 0.5, 1.0, -0.5, bootstrap 2.0:
        // delta_2 = 2 + 0.9 * 2.0 + 0.5 = 4.3;          A_2 = 4.3
        // delta_1 = 0 + 0.9 * -0.5 - 1.0 = -1.45;       A_1 = -1.45 + 0.72 * 4.3 = 1.646
        // delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4;          A_0 = 1.4 + 0.72 * 1.646 = 2.58512
        let (adv, ret) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 2.0], 0.9, 0.8);
        for (got, want) in adv.iter().zip([2.58512, 1.646, 4.3]) {
            assert!(close(f64::from(*got), want), "{adv:?}");
        }
        for (got, want) in ret.iter().zip([3.08512, 2.646, 3.8]) {
            assert!(close(f64::from(*got), want), "{ret:?}");
        }
        // Truncation, not termination: the bootstrap value reaches the last advantage.
        let (cut, _) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 0.0], 0.9, 0.8);
        assert!(close(f64::from(adv[2] - cut[2]), 0.9 * 2.0));
        // lambda 0 is the one-step TD error; lambda 1 the discounted return minus V.
        let (td, _) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 2.0], 0.9, 0.0);
        assert!(close(f64::from(td[1]), -1.45));
        let (mc, _) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 2.0], 0.9, 1.0);
        assert!(close(f64::from(mc[0]), 1.0 + 0.0 + 0.81 * 2.0 + 0.729 * 2.0 - 0.5));
    }

    #[test]
    fn the_masked_losses_are_the_plain_ones_over_the_live_rows() {
        // Agent 0: rows 0 and 2 live; agent 1: row 1 only.
        let (new, old) = (
            t3(&[-1.0, -0.3, -0.7, -2.0, -0.2, -0.9], 2),
            t3(&[-1.2, -0.1, -0.5, -1.0, -0.4, -0.3], 2),
        );
        let (adv, ent) = (t3(&[1.5, -4.0, -0.5, 3.0, 2.0, -1.0], 2), t3(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], 2));
        let mask = t3(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], 2);
        let (pg, en) = policy_losses_masked(new.clone(), old.clone(), adv.clone(), ent.clone(), 0.2, mask.clone());
        let pick = |x: &Tensor<3>, rows: &[usize], i: usize| {
            let v = x.clone().into_data().try_to_vec::<f32>().unwrap();
            t3(&rows.iter().map(|&r| v[i * 3 + r]).collect::<Vec<_>>(), 1)
        };
        let (mut want_pg, mut want_en) = (0.0, 0.0);
        for (i, rows) in [(0, vec![0, 2]), (1, vec![1])] {
            let (p, e) = policy_losses(
                pick(&new, &rows, i),
                pick(&old, &rows, i),
                pick(&adv, &rows, i),
                pick(&ent, &rows, i),
                0.2,
            );
            want_pg += scalar(p);
            want_en += scalar(e);
        }
        assert!(close(scalar(pg), want_pg) && close(scalar(en), want_en));
        let vl = value_loss_masked(new.clone(), old.clone(), mask);
        let want = scalar(value_loss(pick(&new, &[0, 2], 0), pick(&old, &[0, 2], 0)))
            + scalar(value_loss(pick(&new, &[1], 1), pick(&old, &[1], 1)));
        assert!(close(scalar(vl), want));
        let n = normalise_live(&[1.0, 9.0, 3.0], &[1.0, 0.0, 1.0]);
        assert_eq!(n[1], 0.0);
        assert_eq!([n[0], n[2]], [normalise(&[1.0, 3.0])[0], normalise(&[1.0, 3.0])[1]]);
    }

    #[test]
    fn normalised_advantages_have_mean_0_and_unbiased_sd_1() {
        assert_eq!(normalise(&[1.0, 2.0, 3.0]), vec![-1.0, 0.0, 1.0]);
    }

    #[test]
    fn each_loss_term_matches_a_hand_computation() {
        // Agent 0: ratios 1.5 and 0.5 (clip 0.2), advantages +1 and -1:
        //   max(-1 * 1.5, -1 * 1.2) = -1.2;  max(+1 * 0.5, +1 * 0.8) = 0.8;  mean -0.2.
        //   values 1 and 3 against returns 2 and 2: 0.5 * 1 each, mean 0.5. Entropy mean 0.4.
        // Agent 1: ratios 1, advantages 2 and 4: mean -3; values = returns; entropy 1.
        // Sums over agents: -3.2, 0.5, 1.4.
        let n = 2;
        let new = t3(&[1.5f32.ln(), 0.5f32.ln(), 0.0, 0.0], n);
        let old = t3(&[0.0; 4], n);
        let adv = t3(&[1.0, -1.0, 2.0, 4.0], n);
        let ent = t3(&[0.3, 0.5, 1.0, 1.0], n);
        let value = t3(&[1.0, 3.0, 7.0, 7.0], n);
        let ret = t3(&[2.0, 2.0, 7.0, 7.0], n);
        let (pg, e) = policy_losses(new, old, adv, ent, 0.2);
        let v = value_loss(value, ret);
        assert!(close(scalar(pg), -3.2));
        assert!(close(scalar(v), 0.5));
        assert!(close(scalar(e), 1.4));
    }

    #[test]
    fn gradient_clipping_is_per_agent() {
        // Agent 0's gradient has norm 5 (3, 4), agent 1's 0.1: with a limit of 1, agent 0's is
        // scaled to norm 1 and agent 1's is left alone.
        let dev = device();
        let id = ParamId::new();
        let mut grads = GradientsParams::new();
        grads.register(
            id,
            Tensor::<3>::from_data(TensorData::new(vec![3.0f32, 4.0, 0.06, 0.08], [2, 1, 2]), &dev),
        );
        clip_per_agent(&mut grads, &[id], 1.0);
        let g = grads.get::<3>(id).unwrap().into_data().try_to_vec::<f32>().unwrap();
        for (got, want) in g.iter().zip([0.6, 0.8, 0.06, 0.08]) {
            assert!(close(f64::from(*got), want), "{g:?}");
        }
    }
}
