//! AdamW in one pass over each parameter tensor: a burn optimizer for the learners.
//!
//! burn's `AdamW` builds the update from element-wise tensor operations: about 13 full passes
//! over every parameter tensor per step, each allocating its result, plus copy-on-write clones
//! of whole tensors (the profile of the thesis-sized actor-critic put it at half of all
//! training time). This one reads the parameter and gradient once, updates both moments and
//! the parameter in one loop, and keeps the moments as plain vectors in its state, so a step
//! costs one pass plus the copies in and out of the backend's tensors.
//!
//! Same algorithm and defaults as burn's `AdamW` (Loshchilov and Hutter; beta 0.9 / 0.999,
//! epsilon 1e-5 added to the square root of the bias-corrected second moment, decoupled
//! weight decay `p <- p (1 - lr wd)` before the step); the tests check it against burn's own
//! on the same inputs.

use burn::optim::{LearningRate, Optimizer, RecordState, StateSink, StateSource};
use burn::tensor::{Device, Tensor, TensorData};

/// Fused AdamW.
#[derive(Clone, Debug)]
pub struct FusedAdamW {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
}

impl FusedAdamW {
    /// burn's `AdamWConfig` defaults with weight decay `weight_decay`.
    pub fn new(weight_decay: f32) -> Self {
        FusedAdamW {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-5,
            weight_decay,
        }
    }
}

/// One parameter tensor's moments and step count.
#[derive(Clone, Debug)]
pub struct FusedState {
    m: Vec<f32>,
    v: Vec<f32>,
    time: i64,
    shape: Vec<usize>,
}

/// Recorded with burn `AdamW`'s layout (`momentum.moment_1`, `momentum.moment_2`,
/// `momentum.time`), so checkpoints written with burn's optimizer resume with this one and
/// the other way round.
impl RecordState for FusedState {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        let at = burn::optim::join_path(prefix, "momentum");
        out.push_scalar(&at, "time", burn_pack::Scalar::from(self.time as usize));
        out.push_tensor(&at, "moment_1", TensorData::new(self.m.clone(), self.shape.clone()));
        out.push_tensor(&at, "moment_2", TensorData::new(self.v.clone(), self.shape.clone()));
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, _device: &Device) -> Option<Self> {
        let at = burn::optim::join_path(prefix, "momentum");
        let time = usize::try_from(src.take_scalar(&at, "time")?).ok()?;
        let m = src.take_tensor(&at, "moment_1")?;
        let v = src.take_tensor(&at, "moment_2")?;
        let shape = m.shape().to_vec();
        let (m, v) = (m.try_into_vec::<f32>().ok()?, v.try_into_vec::<f32>().ok()?);
        // A moment that is not finite (a tampered or diverged checkpoint) would poison every
        // later step: refused like a malformed state.
        let finite = m.iter().chain(&v).all(|x| x.is_finite());
        (finite && m.len() == v.len()).then_some(FusedState {
            m,
            v,
            time: time as i64,
            shape,
        })
    }
}

impl FusedAdamW {
    /// The update of one tensor in place: `p` the parameters, `g` their gradient.
    pub fn update(&self, lr: f64, p: &mut [f32], g: &[f32], s: &mut FusedState) {
        s.time += 1;
        let t = s.time.min(i64::from(i32::MAX)) as i32;
        let k = Step {
            b1: self.beta_1,
            b2: self.beta_2,
            c1: 1.0 - self.beta_1.powi(t),
            c2: 1.0 - self.beta_2.powi(t),
            eps: self.epsilon,
            lr: lr as f32,
            decay: (1.0 - lr * f64::from(self.weight_decay)) as f32,
        };
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked just above).
            unsafe { k.run_avx(p, g, &mut s.m, &mut s.v) };
            return;
        }
        k.run(p, g, &mut s.m, &mut s.v);
    }
}

/// One step's constants.
struct Step {
    b1: f32,
    b2: f32,
    c1: f32,
    c2: f32,
    eps: f32,
    lr: f32,
    decay: f32,
}

impl Step {
    /// The element-wise update; plain IEEE operations in burn's order (no fused multiply-add),
    /// so the result is the same on every instruction set.
    #[inline(always)]
    fn run(&self, p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32]) {
        for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m.iter_mut()).zip(v.iter_mut()) {
            // From zero moments the first step gives burn's initial moments exactly.
            *m = *m * self.b1 + g * (1.0 - self.b1);
            *v = *v * self.b2 + g * g * (1.0 - self.b2);
            let step = (*m / self.c1) / ((*v / self.c2).sqrt() + self.eps);
            *p = *p * self.decay - step * self.lr;
        }
    }

    /// [`Step::run`] compiled for AVX: 8 lanes instead of SSE's 4, the same results (AVX adds
    /// no fused multiply-add).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx")]
    unsafe fn run_avx(&self, p: &mut [f32], g: &[f32], m: &mut [f32], v: &mut [f32]) {
        self.run(p, g, m, v)
    }
}

impl Optimizer for FusedAdamW {
    type State<const D: usize> = FusedState;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<FusedState>,
    ) -> (Tensor<D>, Option<FusedState>) {
        let device = tensor.device();
        let shape = tensor.shape();
        let mut p = tensor.into_data().try_into_vec::<f32>().expect("f32 parameters");
        let g = grad.into_data();
        let g = g.as_slice::<f32>().expect("f32 gradients");
        let mut s = state.filter(|s| s.m.len() == p.len()).unwrap_or_else(|| FusedState {
            m: vec![0.0; p.len()],
            v: vec![0.0; p.len()],
            time: 0,
            shape: shape.to_vec(),
        });
        self.update(lr, &mut p, g, &mut s);
        (Tensor::from_data(TensorData::new(p, shape), &device), Some(s))
    }

    fn to_device<const D: usize>(state: FusedState, _device: &Device) -> FusedState {
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::{Module, Param};
    use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer};

    #[derive(Module, Debug)]
    struct One {
        w: Param<Tensor<2>>,
    }

    fn loss_grads(m: &One, target: &Tensor<2>) -> GradientsParams {
        let loss = (m.w.val() - target.clone()).powi_scalar(2).sum() + m.w.val().sin().sum();
        let mut g = loss.backward();
        GradientsParams::from_module(&mut g, m)
    }

    #[test]
    fn steps_match_burns_adamw() {
        let dev = crate::learners::nets::device();
        let init: Vec<f32> = (0..60).map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0).collect();
        let target = Tensor::<2>::from_data(TensorData::new((0..60).map(|i| (i % 5) as f32).collect::<Vec<_>>(), [6, 10]), &dev);
        let start = || One {
            w: Param::from_tensor(Tensor::from_data(TensorData::new(init.clone(), [6, 10]), &dev).require_grad()),
        };
        let (mut a, mut b) = (start(), start());
        let mut ours: ModuleOptimizer = FusedAdamW::new(0.01).into();
        let mut theirs: ModuleOptimizer = AdamWConfig::new().with_weight_decay(0.01).init();
        for k in 0..25 {
            let lr = 0.05 / (1.0 + k as f64);
            let ga = loss_grads(&a, &target);
            let gb = loss_grads(&b, &target);
            a = ours.step(lr, a, ga);
            b = theirs.step(lr, b, gb);
        }
        let (x, y) = (a.w.val().into_data(), b.w.val().into_data());
        let (x, y) = (x.as_slice::<f32>().unwrap(), y.as_slice::<f32>().unwrap());
        let moved = x.iter().zip(&init).map(|(p, q)| (p - q).abs()).fold(0.0f32, f32::max);
        assert!(moved > 0.1, "the parameters moved ({moved})");
        // The same operations in the same order: the same floats, so switching a learner to
        // this optimizer leaves its results unchanged.
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert_eq!(p.to_bits(), q.to_bits(), "parameter {i}: {p} vs burn's {q}");
        }
    }

    #[test]
    fn burns_optimizer_state_loads_and_continues_identically() {
        let dev = crate::learners::nets::device();
        let target = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, -1.0, 0.5, 2.0], [2, 2]), &dev);
        let w = || One {
            w: Param::from_tensor(Tensor::from_data(TensorData::new(vec![0.3f32, 0.1, -0.7, 1.5], [2, 2]), &dev).require_grad()),
        };
        let mut m = w();
        let mut theirs: ModuleOptimizer = AdamWConfig::new().init();
        for _ in 0..3 {
            let g = loss_grads(&m, &target);
            m = theirs.step(0.02, m, g);
        }
        // A checkpoint written with burn's AdamW resumes under the fused one.
        let bytes = theirs.into_bytes().unwrap();
        let mut ours = ModuleOptimizer::from(FusedAdamW::new(1e-4)).from_bytes(bytes).unwrap();
        let (mut a, mut b) = (m.clone(), m);
        for _ in 0..3 {
            let (ga, gb) = (loss_grads(&a, &target), loss_grads(&b, &target));
            a = ours.step(0.02, a, ga);
            b = theirs.step(0.02, b, gb);
        }
        assert_eq!(a.w.val().into_data(), b.w.val().into_data());
    }

    #[test]
    fn one_step_by_hand() {
        // t = 1: m = 0.1 g, v = 0.001 g^2, corrected m / (sqrt(v) + eps) = g / (|g| + eps).
        let opt = FusedAdamW::new(0.5);
        let mut s = FusedState {
            m: vec![0.0; 2],
            v: vec![0.0; 2],
            time: 0,
            shape: vec![2],
        };
        let mut p = vec![1.0f32, -2.0];
        opt.update(0.1, &mut p, &[0.5, -4.0], &mut s);
        let want = |p0: f32, g: f32| p0 * (1.0 - 0.1 * 0.5) - 0.1 * g / (g.abs() + 1e-5);
        assert!((p[0] - want(1.0, 0.5)).abs() < 1e-6, "{}", p[0]);
        assert!((p[1] - want(-2.0, -4.0)).abs() < 1e-6, "{}", p[1]);
        assert_eq!(s.time, 1);
    }

    #[test]
    fn state_survives_a_record_round_trip() {
        let s = FusedState {
            m: vec![0.5, -1.0, 2.0, 0.25],
            v: vec![1.0, 2.0, 3.0, 4.0],
            time: 7,
            shape: vec![2, 2],
        };
        let mut sink = StateSink::default();
        s.state_flatten("p", &mut sink);
        let mut src = StateSource::new(sink.scalars.into_iter().collect());
        for (name, data) in sink.tensors {
            src.insert_tensor(name, data);
        }
        let back = FusedState::state_unflatten("p", &mut src, &crate::learners::nets::device()).unwrap();
        assert_eq!((back.m, back.v, back.time, back.shape), (s.m, s.v, s.time, s.shape));
    }
}
