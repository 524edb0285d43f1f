//! Wrappers: a policy or a learner with part of what it does changed. As PettingZoo's
//! `BaseParallelWrapper` forwards what a wrapper does not override, a layer here overrides
//! only what it changes: every method of [`PolicyLayer`] and [`LearnerLayer`] forwards to the
//! wrapped value by default, and [`Layered`] and [`LayeredLearner`] are the only
//! implementations of `Policy` and `Learner` for wrappers, so a wrapper cannot forget to forward
//! a method. A method added to `Policy` or `Learner` must be added here too, to the layer traits
//! (with its forwarding default) and to these two implementations: the compiler asks for it
//! when the method has no default, and `a_layer_that_overrides_nothing_forwards_everything`
//! checks every method reaches the wrapped value.
//!
//! [`OnlineLearning`] is not a wrapper but an adapter: a policy that keeps learning while it is
//! evaluated.

use super::base::{Learner, Losses, Policy, Transition};
use env::world::{ClusterEnv, Observations};
use std::ops::DerefMut;

/// A change to part of what a policy does; what it does not override goes to the policy it
/// wraps.
pub trait PolicyLayer: Clone + Send + 'static {
    /// See [`Policy::begin_episode`].
    fn begin_episode(&mut self, inner: &mut dyn Policy, seed: u64) {
        inner.begin_episode(seed);
    }

    /// See [`Policy::act`].
    fn act(&mut self, inner: &mut dyn Policy, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        inner.act(obs, budgets, greedy, actions);
    }

    /// See [`Policy::after_step`].
    fn after_step(&mut self, inner: &mut dyn Policy, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        inner.after_step(env, budgets_before, actions);
    }

    /// See [`Policy::entropy`].
    fn entropy(&self, inner: &dyn Policy) -> Option<f64> {
        inner.entropy()
    }
}

/// A policy with a layer over it. Its forks keep the layer.
pub struct Layered<L> {
    inner: Box<dyn Policy>,
    layer: L,
}

impl<L: PolicyLayer> Layered<L> {
    /// `layer` over `inner`.
    pub fn new(inner: Box<dyn Policy>, layer: L) -> Self {
        Self { inner, layer }
    }
}

impl<L: PolicyLayer> Policy for Layered<L> {
    fn begin_episode(&mut self, seed: u64) {
        self.layer.begin_episode(self.inner.as_mut(), seed);
    }

    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        self.layer.act(self.inner.as_mut(), obs, budgets, greedy, actions);
    }

    fn after_step(&mut self, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        self.layer.after_step(self.inner.as_mut(), env, budgets_before, actions);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(Layered {
            inner: self.inner.fork(),
            layer: self.layer.clone(),
        })
    }

    fn entropy(&self) -> Option<f64> {
        self.layer.entropy(self.inner.as_ref())
    }
}

/// A policy that draws its actions even when evaluation asks for the greedy ones
/// (`sampled:run:DIR`).
#[derive(Clone, Copy, Debug)]
pub struct Sample;

impl PolicyLayer for Sample {
    fn act(&mut self, inner: &mut dyn Policy, obs: Observations<'_>, budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        inner.act(obs, budgets, false, actions);
    }
}

/// Some agents pinned to fixed level indices, whatever the wrapped policy chooses for them.
#[derive(Clone, Debug)]
pub struct Pin(pub Vec<(usize, usize)>);

/// A policy with some agents pinned to fixed level indices: `inner` under a [`Pin`].
pub fn pinned(inner: Box<dyn Policy>, pins: Vec<(usize, usize)>) -> Layered<Pin> {
    Layered::new(inner, Pin(pins))
}

impl PolicyLayer for Pin {
    fn act(&mut self, inner: &mut dyn Policy, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        inner.act(obs, budgets, greedy, actions);
        for &(i, level) in &self.0 {
            actions[i] = level;
        }
    }
}

/// A change to part of what a learner does; what it does not override goes to the learner it
/// wraps. Acting comes in two methods, as in [`Learner`]: a layer that changes how the learner
/// acts overrides both [`LearnerLayer::act`] and [`LearnerLayer::act_many`] (training acts for
/// every environment copy at once through the second).
pub trait LearnerLayer: Send {
    /// See [`Policy::begin_episode`].
    fn begin_episode(&mut self, inner: &mut dyn Learner, seed: u64) {
        inner.begin_episode(seed);
    }

    /// See [`Policy::act`].
    fn act(&mut self, inner: &mut dyn Learner, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        inner.act(obs, budgets, greedy, actions);
    }

    /// See [`Policy::after_step`].
    fn after_step(&mut self, inner: &mut dyn Learner, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        inner.after_step(env, budgets_before, actions);
    }

    /// See [`Policy::fork`]: by default the wrapped learner's acting policy (a layer over a
    /// learner changes how it learns, not how it acts).
    fn fork(&self, inner: &dyn Learner) -> Box<dyn Policy> {
        inner.fork()
    }

    /// See [`Policy::entropy`].
    fn entropy(&self, inner: &dyn Learner) -> Option<f64> {
        inner.entropy()
    }

    /// See [`Learner::learn`].
    fn learn(&mut self, inner: &mut dyn Learner, t: &Transition<'_>) -> Losses {
        inner.learn(t)
    }

    /// See [`Learner::act_many`].
    fn act_many(&mut self, inner: &mut dyn Learner, obs: &[Observations<'_>], budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        inner.act_many(obs, budgets, actions);
    }

    /// See [`Learner::learn_many`].
    fn learn_many(&mut self, inner: &mut dyn Learner, ts: &[Transition<'_>]) -> Losses {
        inner.learn_many(ts)
    }

    /// See [`Learner::seed_group`].
    fn seed_group(&self, inner: &dyn Learner) -> usize {
        inner.seed_group()
    }

    /// See [`Learner::save`].
    fn save(&self, inner: &dyn Learner) -> crate::error::Result<Vec<u8>> {
        inner.save()
    }

    /// See [`Learner::load`].
    fn load(&mut self, inner: &mut dyn Learner, bytes: &[u8]) -> crate::error::Result<()> {
        inner.load(bytes)
    }

    /// See [`Learner::export_weights`].
    fn export_weights(&self, inner: &dyn Learner, agent: usize) -> crate::error::Result<Vec<f32>> {
        inner.export_weights(agent)
    }
}

/// A learner with a layer over it; the learner is owned (`Box<dyn Learner>`) or borrowed
/// (`&mut dyn Learner`).
pub struct LayeredLearner<L, I> {
    inner: I,
    layer: L,
}

impl<'a, L: LearnerLayer, I: DerefMut<Target = dyn Learner + 'a> + Send> LayeredLearner<L, I> {
    /// `layer` over `inner`.
    pub fn new(inner: I, layer: L) -> Self {
        Self { inner, layer }
    }

    /// The wrapped learner, without the layer.
    pub fn inner_mut(&mut self) -> &mut (dyn Learner + 'a) {
        &mut *self.inner
    }
}

impl<'a, L: LearnerLayer, I: DerefMut<Target = dyn Learner + 'a> + Send> Policy for LayeredLearner<L, I> {
    fn begin_episode(&mut self, seed: u64) {
        self.layer.begin_episode(&mut *self.inner, seed);
    }

    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        self.layer.act(&mut *self.inner, obs, budgets, greedy, actions);
    }

    fn after_step(&mut self, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        self.layer.after_step(&mut *self.inner, env, budgets_before, actions);
    }

    fn fork(&self) -> Box<dyn Policy> {
        self.layer.fork(&*self.inner)
    }

    fn entropy(&self) -> Option<f64> {
        self.layer.entropy(&*self.inner)
    }
}

impl<'a, L: LearnerLayer, I: DerefMut<Target = dyn Learner + 'a> + Send> Learner for LayeredLearner<L, I> {
    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        self.layer.learn(&mut *self.inner, t)
    }

    fn act_many(&mut self, obs: &[Observations<'_>], budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        self.layer.act_many(&mut *self.inner, obs, budgets, actions);
    }

    fn learn_many(&mut self, ts: &[Transition<'_>]) -> Losses {
        self.layer.learn_many(&mut *self.inner, ts)
    }

    fn seed_group(&self) -> usize {
        self.layer.seed_group(&*self.inner)
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        self.layer.save(&*self.inner)
    }

    fn non_finite(&self) -> Option<String> {
        self.inner.non_finite()
    }

    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        self.layer.load(&mut *self.inner, bytes)
    }

    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
        self.layer.export_weights(&*self.inner, agent)
    }
}

/// A learner that keeps learning while it is evaluated (Hedge as a no-regret online learner):
/// every episode starts from the learner `initial` builds, and it samples even when asked for
/// greedy actions (sampling is how it plays).
pub struct OnlineLearning {
    /// The learner as it starts each episode.
    pub initial: std::sync::Arc<dyn Fn() -> Box<dyn Learner> + Send + Sync>,
    learner: Option<Box<dyn Learner>>,
    obs: Vec<f32>,
    dim: usize,
}

impl OnlineLearning {
    /// Evaluate learners built by `initial`.
    pub fn new(initial: std::sync::Arc<dyn Fn() -> Box<dyn Learner> + Send + Sync>) -> Self {
        Self {
            initial,
            learner: None,
            obs: Vec::new(),
            dim: 0,
        }
    }
}

impl Policy for OnlineLearning {
    fn begin_episode(&mut self, seed: u64) {
        let mut l = (self.initial)();
        l.begin_episode(seed);
        self.learner = Some(l);
    }

    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        self.obs.clear();
        self.obs.extend_from_slice(obs.data);
        self.dim = obs.dim;
        self.learner
            .as_mut()
            .expect("begin_episode first")
            .act(obs, budgets, false, actions);
    }

    fn after_step(&mut self, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        let obs = Observations {
            data: &self.obs,
            dim: self.dim,
        };
        let t = Transition::played(env, obs, budgets_before, actions);
        self.learner.as_mut().expect("begin_episode first").learn(&t);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(OnlineLearning::new(self.initial.clone()))
    }

    fn entropy(&self) -> Option<f64> {
        self.learner.as_ref()?.entropy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use env::policy::Fixed;

    /// Records what reaches it.
    #[derive(Default)]
    struct Probe {
        greedy: Vec<bool>,
        learned: usize,
        episodes: Vec<u64>,
    }

    impl Policy for Probe {
        fn begin_episode(&mut self, seed: u64) {
            self.episodes.push(seed);
        }
        fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
            self.greedy.push(greedy);
            actions.fill(3);
        }
        fn fork(&self) -> Box<dyn Policy> {
            Box::new(Fixed { level: 3 })
        }
        fn entropy(&self) -> Option<f64> {
            Some(1.25)
        }
    }

    impl Learner for Probe {
        fn learn(&mut self, _t: &Transition<'_>) -> Losses {
            self.learned += 1;
            Losses::default()
        }
        fn save(&self) -> crate::error::Result<Vec<u8>> {
            Ok(vec![self.learned as u8])
        }
        fn load(&mut self, _bytes: &[u8]) -> crate::error::Result<()> {
            Ok(())
        }
        fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
            Ok(vec![agent as f32])
        }
    }

    /// A layer that overrides nothing.
    struct Nothing;
    impl LearnerLayer for Nothing {}

    #[test]
    fn a_layer_that_overrides_nothing_forwards_everything() {
        let mut probe = Probe::default();
        let mut l = LayeredLearner::new(&mut probe as &mut dyn Learner, Nothing);
        l.begin_episode(7);
        let mut a = vec![0; 2];
        l.act(Observations { data: &[0.0, 0.0], dim: 1 }, &[0.0; 2], true, &mut a);
        crate::learners::testing::learn_round(&mut l, 1, &[0.0, 0.0], &[0.0, 0.0], &[0, 0], &[0.0, 0.0]);
        let mut many = vec![vec![0; 2]; 2];
        let obs = [0.0f32, 0.0];
        let views = [Observations { data: &obs, dim: 1 }; 2];
        l.act_many(&views, &[&[0.0; 2], &[0.0; 2]], &mut many);
        assert_eq!(many, vec![vec![3, 3]; 2]);
        l.load(&[]).unwrap();
        assert_eq!(l.save().unwrap(), vec![1]);
        assert_eq!(l.export_weights(5).unwrap(), vec![5.0]);
        assert_eq!(l.entropy(), Some(1.25));
        assert_eq!(Layered::new(Box::new(Probe::default()), Sample).entropy(), Some(1.25));
        drop(l);
        // act_many reached the probe's own act_many (its default: one act per copy, drawing).
        assert_eq!(
            (probe.episodes, probe.greedy, probe.learned, a),
            (vec![7], vec![true, false, false], 1, vec![3, 3])
        );
    }

    #[test]
    fn sampled_and_pinned_layers_change_only_what_they_say() {
        let mut p = Layered::new(Box::new(Fixed { level: 2 }), Pin(vec![(1, 4)]));
        let mut a = vec![0; 3];
        p.act(Observations { data: &[0.0; 3], dim: 1 }, &[0.0; 3], true, &mut a);
        assert_eq!(a, vec![2, 4, 2]);
        let mut forked = p.fork();
        forked.act(Observations { data: &[0.0; 3], dim: 1 }, &[0.0; 3], true, &mut a);
        assert_eq!(a, vec![2, 4, 2], "a fork keeps the layer");
        // Sample asks the wrapped policy for draws, whatever the caller asks.
        #[derive(Clone, Default)]
        struct Asked(std::sync::Arc<std::sync::Mutex<Vec<bool>>>);
        impl Policy for Asked {
            fn begin_episode(&mut self, _seed: u64) {}
            fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], greedy: bool, _actions: &mut [usize]) {
                self.0.lock().unwrap().push(greedy);
            }
            fn fork(&self) -> Box<dyn Policy> {
                Box::new(self.clone())
            }
        }
        let asked = Asked::default();
        let mut s = Layered::new(Box::new(asked.clone()), Sample);
        s.act(Observations { data: &[0.0], dim: 1 }, &[0.0], true, &mut a[..1]);
        s.fork().act(Observations { data: &[0.0], dim: 1 }, &[0.0], true, &mut a[..1]);
        assert_eq!(*asked.0.lock().unwrap(), vec![false, false]);
    }
}
