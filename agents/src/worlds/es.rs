//! Evolution strategies in a world behind the seam: one actor per group of agents (every job
//! of a Gavel world shares one), reading the world's whole observation row, acting greedily.
//! A generation is `2 * pairs` copies of the world; copies `2j` and `2j + 1` replay the same
//! seed (common random numbers: the jobs, their arrivals and the world's draws cancel out of a
//! pair's difference) under `theta + sigma eps_j` and `theta - sigma eps_j`. A group's fitness
//! in a copy is the mean return of its agents there; [`EsCore`] turns the fitnesses into the
//! update (centred ranks, Adam), exactly as the queue world's ES learner does.

use super::{play, Played, RowPolicy};
use crate::learners::base::argmax;
use crate::learners::es::{EsConfig, EsCore, Scratch};
use env::rng::{names, stream_seed};
use env::worlds::World;
use rayon::prelude::*;

/// A population's actors acting greedily (group g plays actor g), optionally perturbed by one
/// pair's noise.
#[derive(Clone)]
pub struct Actors {
    core: EsCore,
    perturb: Option<(usize, f32)>,
    scratch: Scratch,
    logits: Vec<f32>,
}

impl Actors {
    /// The unperturbed actors of `core`.
    pub fn new(core: EsCore) -> Self {
        Self {
            logits: vec![0.0; core.levels()],
            core,
            perturb: None,
            scratch: Scratch::default(),
        }
    }

    /// The actors.
    pub fn core(&self) -> &EsCore {
        &self.core
    }
}

impl RowPolicy for Actors {
    fn act(&mut self, obs: &[f32], dim: usize, _agents: &[usize], groups: &[usize], actions: &mut [usize]) {
        let d = self.core.features();
        let last = self.core.blocks() - 1;
        for ((row, &g), a) in obs.chunks_exact(dim).zip(groups).zip(actions.iter_mut()) {
            self.core
                .logits(g.min(last), &row[..d], self.perturb, &mut self.scratch, &mut self.logits);
            *a = argmax(self.logits.iter().map(|&l| f64::from(l)));
        }
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }
}

/// What ES keeps behind the seam, in every world: an actor per group (`per_class`) reading the
/// whole row, scored by the episode's own rewards; one line naming the key otherwise.
pub fn check(learner: &crate::learners::LearnerSection, err: &crate::learners::ErrorIn<'_>) -> Result<(), env::config::ConfigError> {
    let cfg = &learner.es;
    if learner.reward != crate::learners::LearnerReward::Own {
        // Its fitness is each group's episode return as the world pays it: a difference
        // reward would be accepted and never read.
        return Err(err(
            "learner.reward",
            "behind the seam ES's fitness is the world's own reward over the episode (reward = \"own\"); difference rewards train PPO and the actor-critic".into(),
        ));
    }
    if !cfg.per_class {
        return Err(err(
            "learner.es.per_class",
            "false: here ES keeps one actor per group of agents (per_class = true)".into(),
        ));
    }
    if cfg.features != crate::learners::Features::All {
        return Err(err(
            "learner.es.features",
            "here ES's actors read the agent's whole observation row (features = \"all\")".into(),
        ));
    }
    Ok(())
}

/// Fresh actors for `world`: one per group, reading its whole row, its levels.
pub fn fresh(cfg: &EsConfig, world: &dyn World, seed: u64) -> EsCore {
    EsCore::new(cfg, world.layout().dim(), world.levels().len(), world.group_names().len(), seed)
}

/// Environment copy `k`'s seed in generation `episode` (pairs share one: `k / 2`).
pub fn copy_seed(root: u64, episode: u64, pair: usize) -> u64 {
    crate::train::env_seed(root, episode, pair)
}

/// What a generation did.
#[derive(Clone, Debug)]
pub struct Generation {
    /// Every copy's episode, in copy order.
    pub played: Vec<Played>,
    /// The mean spread of the groups' fitnesses over the population.
    pub spread: f64,
}

/// Play generation `episode` of the training seeded `root` on `threads` workers and update
/// `core` from it. Results do not depend on `threads`: each copy is its own world and policy,
/// collected in copy order.
pub fn generation(core: &mut EsCore, proto: &dyn World, root: u64, episode: u64, pool: &rayon::ThreadPool) -> Generation {
    core.draw_noise(stream_seed(root, names::POLICY_EPISODE, episode));
    let pop = 2 * core.pairs();
    let protos = std::sync::Mutex::new(proto.fork());
    let shared: &EsCore = core;
    let played: Vec<Played> = pool.install(|| {
        (0..pop)
            .into_par_iter()
            .map(|c| {
                let mut world = protos.lock().expect("no panic while forking").fork();
                let mut actors = Actors::new(shared.clone());
                actors.perturb = Some((c / 2, if c % 2 == 0 { 1.0 } else { -1.0 }));
                play(world.as_mut(), &mut actors, copy_seed(root, episode, c / 2))
            })
            .collect()
    });
    let fitness: Vec<Vec<f64>> = (0..core.blocks())
        .map(|b| played.iter().map(|p| p.group_returns[b]).collect())
        .collect();
    let spread = core.update(&fitness);
    Generation { played, spread }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behind_the_seam_es_keeps_an_actor_per_group_reading_the_whole_row() {
        let err = |key: &str, problem: String| env::config::ConfigError {
            file: "t.toml".into(),
            key: key.into(),
            problem,
        };
        let section = |es: EsConfig| crate::learners::LearnerSection {
            kind: crate::learners::LearnerKind::Es,
            es,
            ..Default::default()
        };
        assert!(check(&section(EsConfig::default()), &err).is_ok());
        let difference = crate::learners::LearnerSection {
            reward: crate::learners::LearnerReward::Difference,
            ..section(EsConfig::default())
        };
        assert_eq!(check(&difference, &err).unwrap_err().key, "learner.reward");
        for (cfg, key) in [
            (
                EsConfig {
                    per_class: false,
                    ..EsConfig::default()
                },
                "learner.es.per_class",
            ),
            (
                EsConfig {
                    features: crate::learners::Features::Spec,
                    ..EsConfig::default()
                },
                "learner.es.features",
            ),
        ] {
            assert_eq!(check(&section(cfg), &err).unwrap_err().key, key);
        }
    }

    #[test]
    fn es_finds_each_groups_best_level_in_the_bandit() {
        // Targets 0.3 and 0.7 on levels 0, 0.1, ..., 1: the best fixed levels are 3 and 7.
        let path = std::env::temp_dir().join(format!("mtf-es-bandit-{}.toml", std::process::id()));
        std::fs::write(&path, "[env]\nworld = \"bandit\"\nagents = 4\nrounds = 8\nnoise = 0.05\n").unwrap();
        let world = env::registry::load(&path, &[]).unwrap();
        std::fs::remove_file(&path).ok();
        let cfg = EsConfig {
            pairs: 8,
            sigma: 0.2,
            ..EsConfig::default()
        };
        let mut core = fresh(&cfg, world.as_ref(), 3);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for e in 0..200 {
            generation(&mut core, world.as_ref(), 9, e, &pool);
        }
        let mut a = Actors::new(core);
        let mut actions = vec![0; 2];
        a.act(&[0.0, 0.5, 1.0, 0.5], 2, &[0, 1], &[0, 1], &mut actions);
        assert_eq!(actions, vec![3, 7]);
    }
}
