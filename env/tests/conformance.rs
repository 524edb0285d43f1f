//! PettingZoo-style conformance (parallel_api_test and the seed test) over every config in
//! `configs/` — every world through the one trait (`env::worlds::World`: the queue and
//! valuation worlds, the market, Gavel's cluster), the queue world's own API besides, and the
//! seam playing what the queue world and the market play natively, bit for bit — and
//! determinism across thread counts.

use env::config::ScenarioFile;
use env::eval::evaluate;
use env::policy::Fixed;
use env::world::{ActionError, ClusterEnv};
use std::path::{Path, PathBuf};

fn configs() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            // Sweeps are not scenarios.
            if p.is_dir() && p.file_name().unwrap() != "sweeps" {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs"), &mut out);
    out.sort();
    assert!(out.len() >= 10, "configs went missing: {out:?}");
    out
}

/// The world a config declares (`env.world`, read by the seam's one reader).
fn world(path: &Path) -> String {
    env::registry::world_name(&env::config::read_table(path, &[]).unwrap())
}

/// Small overrides for a config, so an episode takes milliseconds.
fn small(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    if ["queues", "valuations"].contains(&world(path).as_str()) {
        vec!["env.rounds=25".into()]
    } else if text.contains("[env.generate]") {
        [
            "env.generate.jobs=30",
            "env.window=[5,25]",
            "env.cluster.0.count=4",
            "env.cluster.1.count=4",
            "env.cluster.2.count=4",
        ]
        .map(String::from)
        .to_vec()
    } else {
        Vec::new()
    }
}

/// One episode of a seam world with levels drawn from a stream: the parallel API's checks
/// (live ids ascending and within `possible`, rows inside the layout, one reward and one
/// termination per agent that acted, terminated agents gone), as a bit trace.
fn seam_trajectory(w: &mut dyn env::worlds::World, seed: u64) -> Vec<u64> {
    let mut rng = env::rng::stream(seed, "test-actions", 0);
    let layout = w.layout().clone();
    let k = w.levels().len();
    let mut trace = Vec::new();
    w.reset(seed);
    let mut rounds = 0;
    while !w.done() {
        let live = w.live().to_vec();
        assert!(live.windows(2).all(|p| p[0] < p[1]), "live ids ascend");
        assert!(live.iter().all(|&i| i < w.possible()));
        let mut obs = vec![0.0f32; live.len() * layout.dim()];
        w.observe(&mut obs);
        for row in obs.chunks_exact(layout.dim()) {
            assert!(layout.contains(row), "{row:?} outside {layout:?}");
        }
        trace.extend(obs.iter().map(|x| u64::from(x.to_bits())));
        let actions: Vec<usize> = live
            .iter()
            .map(|_| (env::rng::unit(rand::Rng::next_u64(&mut rng)) * k as f64) as usize)
            .collect();
        let r = w.step(&actions).unwrap();
        assert_eq!(r.agents, &live[..], "the agents that acted are the live ones");
        assert_eq!((r.rewards.len(), r.terminated.len()), (live.len(), live.len()));
        trace.extend(r.rewards.iter().map(|x| x.to_bits()));
        let gone: Vec<usize> = live.iter().zip(r.terminated).filter(|(_, &t)| t).map(|(&i, _)| i).collect();
        assert!(w.live().iter().all(|i| !gone.contains(i)), "a terminated agent stays gone");
        rounds += 1;
        assert!(rounds < 1_000_000, "an episode ends");
    }
    assert!(w.live().is_empty());
    assert!(w.step(&[]).is_err(), "stepping a finished episode is an error");
    trace.extend(w.figures().iter().map(|x| x.to_bits()));
    trace
}

#[test]
fn every_config_of_every_world_conforms_through_the_seam_and_seeds_reproduce() {
    let mut worlds = std::collections::BTreeSet::new();
    for path in configs() {
        let mut w = env::registry::load(&path, &small(&path)).unwrap_or_else(|e| panic!("{e}"));
        let a = seam_trajectory(w.as_mut(), 3);
        // A world that keeps round records says so (`mtf simulate` writes them only then).
        let mut rec = w.fork();
        rec.set_recording(true);
        rec.reset(3);
        let live = rec.live().len();
        rec.step(&vec![0; live]).unwrap();
        assert_eq!(
            rec.round_record().is_some(),
            rec.keeps_round_records(),
            "{}: round_record against keeps_round_records",
            path.display()
        );
        assert_eq!(seam_trajectory(w.as_mut(), 3), a, "{}: reset with the same seed", path.display());
        assert_eq!(seam_trajectory(w.fork().as_mut(), 3), a, "{}: a fork", path.display());
        // Its resolved config builds the same world (what a run directory's config.toml replays).
        let mut again = env::registry::build(w.config(), Path::new("elsewhere/config.toml")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(seam_trajectory(again.as_mut(), 3), a, "{}: its config() again", path.display());
        if w.varies_with_seed() {
            assert_ne!(
                seam_trajectory(w.as_mut(), 4),
                a,
                "{}: another seed gives another episode",
                path.display()
            );
        }
        worlds.insert(world(&path));
    }
    let registered: std::collections::BTreeSet<String> = env::registry::REGISTRY
        .iter()
        .map(|e| e.name.to_string())
        .filter(|n| n != "bandit") // the toy world's configs live in agents' tests
        .collect();
    assert_eq!(worlds, registered, "a config of every world was played");
}

/// The seam plays what the queue world plays: the same actions give the same rewards,
/// observations and figures, bit for bit.
#[test]
fn the_seam_plays_the_queue_world_and_the_market_as_they_play_natively() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    for name in ["quickstart.toml", "auctions/first-price.toml"] {
        let path = root.join(name);
        let set = ["env.rounds=40".to_string()];
        let mut seam = env::registry::load(&path, &set).unwrap();
        let mut native = ClusterEnv::new(ScenarioFile::load(&path, &set).unwrap());
        let (n, k) = (native.n(), native.levels().len());
        assert_eq!(seam.layout().dim(), native.observation_space(0).dim(), "{name}");
        assert_eq!(seam.layout().low, native.observation_space(0).low, "{name}");
        seam.reset(9);
        native.reset(9);
        let mut obs = vec![0.0f32; n * seam.layout().dim()];
        for round in 0..40 {
            seam.observe(&mut obs);
            assert_eq!(&obs[..], native.observations().data, "{name}: observations, round {round}");
            let actions: Vec<usize> = (0..n).map(|i| (i * 7 + round * 3) % k).collect();
            let r = seam.step(&actions).unwrap().rewards.to_vec();
            assert_eq!(&r[..], native.step(&actions).unwrap().rewards, "{name}: rewards, round {round}");
        }
        assert!(seam.done() && native.agents().is_empty());
        // The fairness figures are NaN until a command asks for them (`set_fairness`).
        for fairness in [false, true] {
            seam.set_fairness(fairness);
            let m = env::metrics::EpisodeMetrics::compute(&native, fairness);
            let figures = seam.figures();
            // The queue world's jobs a round per agent of each weight class, as its own
            // evaluation reduces them (its tables' columns, after welfare).
            let classes = env::eval::Summary::of(native.scenario(), std::slice::from_ref(&m)).throughput_by_weight;
            let mut class = 0;
            // Then each class's mean threshold (the queue stack's `threshold_by_weight`), or
            // in the valuation world its mean bid factor (`bid_factor_by_weight`).
            let sc = native.scenario();
            let queues = sc.file.env.world == env::config::World::Queues;
            let level = if queues { "threshold_w" } else { "bid_factor_w" };
            let mut levels = sc.weight_classes().into_iter();
            for (f, x) in seam.metrics().iter().zip(&figures) {
                if f.key.starts_with(level) {
                    let w = levels.next().expect("a figure per class");
                    let of: Vec<f64> = (0..sc.n()).filter(|&i| sc.agents[i].weight == w).map(|i| m.threshold[i]).collect();
                    assert_eq!(f.key, format!("{level}{w}"));
                    assert!(!f.shown, "not a column of the tables");
                    let want = of.iter().sum::<f64>() / of.len() as f64;
                    assert_eq!(x.to_bits(), want.to_bits(), "{name}: {}", f.key);
                    continue;
                }
                let Some(metric) = env::metrics::Metric::named(f.key) else {
                    let (w, want) = classes[class];
                    assert_eq!(
                        (f.key, f.label),
                        (&*format!("throughput_w{w}"), &*format!("jobs/round per agent, w={w}"))
                    );
                    assert_eq!(x.to_bits(), want.mean.to_bits(), "{name}: {}", f.key);
                    class += 1;
                    continue;
                };
                match (metric.of)(&m) {
                    Some(want) => assert_eq!(x.to_bits(), want.to_bits(), "{name}: {}", f.key),
                    None => assert!(x.is_nan() && !fairness, "{name}: {} is {x} with fairness {fairness}", f.key),
                }
            }
            // The figure tables lead with: welfare, or (SPEC 8) the surplus per bidder per item.
            let head = if queues { "welfare" } else { "surplus_per_bidder_item" };
            assert_eq!(seam.metrics()[seam.headline()].key, head, "{name}");
            let defaults = seam.run_defaults();
            assert_eq!(defaults["learner"]["kind"].as_str(), Some("actor_critic"), "{name}");
            assert_eq!(class, if queues { 3 } else { 0 }, "{name}: a figure per weight class");
            assert!(levels.next().is_none(), "{name}: a mean level per weight class");
            if queues {
                assert_eq!(seam.metrics()[1].key, "throughput_w1", "{name}: after welfare");
            }
        }
        assert_eq!(
            seam.group_names(),
            ["w1", "w2", "w4"].map(String::from).to_vec()[..seam.group_names().len()]
        );
    }
    // The market: the seam acts for the tenants whose jobs have not finished; the game for all
    // (a finished tenant's level is never read).
    for name in ["market/duel.toml", "market/gemmini.toml", "market/three-types.toml"] {
        let path = root.join(name);
        let raw = env::market::MarketFile::load_unexpanded(&path, &[]).unwrap();
        let levels = env::market::game::action_levels(&raw, name).unwrap();
        // Every tenant an agent (what the registry builds for a file that marks no learner).
        let mut seam: Box<dyn env::worlds::World> = Box::new(env::market::world::MarketWorld::new(
            raw.clone(),
            levels.clone(),
            toml::Table::new(),
        ));
        let mut game = env::market::game::MarketGame::new(raw, levels.clone());
        seam.reset(5);
        game.reset(5);
        let n = game.agents().len();
        let d = seam.layout().dim();
        let mut round = 0;
        while !seam.done() {
            let live = seam.live().to_vec();
            let mut obs = vec![0.0f32; live.len() * d];
            seam.observe(&mut obs);
            for (row, &i) in obs.chunks_exact(d).zip(&live) {
                assert_eq!(row, &game.observations()[i * d..(i + 1) * d], "{name}: tenant {i}, round {round}");
            }
            let all: Vec<usize> = (0..n).map(|i| (i * 5 + round * 3) % levels.len()).collect();
            let acting: Vec<usize> = live.iter().map(|&i| all[i]).collect();
            let r = seam.step(&acting).unwrap();
            let (agents, rewards, terminated) = (r.agents.to_vec(), r.rewards.to_vec(), r.terminated.to_vec());
            let steps = game.step(&all).unwrap().to_vec();
            for (k, &i) in agents.iter().enumerate() {
                assert_eq!(rewards[k].to_bits(), steps[i].reward.to_bits(), "{name}: tenant {i}, round {round}");
                assert_eq!(terminated[k], steps[i].terminated);
            }
            round += 1;
        }
        assert!(game.over(), "{name}: both episodes end together");
        // The learners' market (what mtf train steps) conforms too: its agents are the
        // learning tenants, live until the end.
        let raw = env::market::MarketFile::load_unexpanded(&path, &[]).unwrap();
        let mut learners = env::market::world::MarketWorld::learners(raw, levels.clone(), toml::Table::new());
        let a = seam_trajectory(&mut learners, 5);
        assert_eq!(seam_trajectory(&mut learners, 5), a, "{name}: the learners' market, again");
        let learning = env::worlds::World::possible(&learners);
        assert!(learning >= 1 && learning < n, "{name}: some tenants learn");
        // ... and it is what the registry builds for these files, which mark learners.
        let built = env::registry::load(&path, &[]).unwrap();
        assert_eq!(built.possible(), learning, "{name}: the registry's market is the learners'");
        assert_eq!(
            seam_trajectory(built.fork().as_mut(), 5),
            seam_trajectory(&mut learners, 5),
            "{name}"
        );
        let m = game.metrics();
        assert_eq!(seam.figures()[0], m.utility.iter().sum::<f64>(), "{name}");
        assert_eq!(seam.figures()[1], m.welfare, "{name}");
    }
}

/// One episode with actions sampled from the action spaces: every observation, reward and
/// info, as bits.
fn trajectory(env: &mut ClusterEnv, seed: u64) -> Vec<u64> {
    let mut rng = env::rng::stream(seed, "test-actions", 0);
    let n = env.n();
    let mut trace = Vec::new();
    let space = env.observation_space(0);
    let (obs, infos) = env.reset(seed);
    assert_eq!(infos.len(), n);
    let dim = obs.dim;
    for i in 0..n {
        assert!(
            space.contains(obs.get(i)),
            "agent {i}: {:?} not in the observation space",
            obs.get(i)
        );
    }
    assert_eq!(obs.data.len(), n * dim);
    trace.extend(obs.data.iter().map(|x| u64::from(x.to_bits())));
    assert_eq!(env.agents(), env.possible_agents());
    let mut rounds = 0;
    loop {
        let actions: Vec<usize> = (0..n).map(|i| env.action_space(i).sample(&mut rng)).collect();
        let step = env.step(&actions).unwrap();
        rounds += 1;
        for k in [
            step.rewards.len(),
            step.terminations.len(),
            step.truncations.len(),
            step.infos.len(),
        ] {
            assert_eq!(k, n, "per-agent outputs must have one entry per agent");
        }
        assert!(step.terminations.iter().all(|t| !t), "nothing terminates early");
        assert!(step.rewards.iter().all(|r| r.is_finite()));
        trace.extend(step.rewards.iter().map(|r| r.to_bits()));
        trace.extend(step.observations.data.iter().map(|x| u64::from(x.to_bits())));
        trace.extend(
            step.infos
                .iter()
                .flat_map(|x| [x.served, x.dropped, x.rejected, x.backlog, u64::from(x.won)]),
        );
        let done = step.truncations.iter().all(|&t| t);
        assert!(step.truncations.iter().all(|&t| t == done), "truncation is simultaneous");
        if done {
            break;
        }
        for i in 0..n {
            assert!(
                space.contains(step.observations.get(i)),
                "agent {i}: {:?}",
                step.observations.get(i)
            );
        }
    }
    assert_eq!(rounds, env.scenario().file.env.rounds);
    assert!(env.agents().is_empty(), "no live agents after truncation");
    assert!(matches!(env.step(&vec![0; n]), Err(ActionError::Done)));
    trace
}

#[test]
fn every_config_conforms_and_seeds_reproduce() {
    for path in configs()
        .into_iter()
        .filter(|p| ["queues", "valuations"].contains(&world(p).as_str()))
    {
        let scenario = ScenarioFile::load(&path, &["env.rounds=25".into()]).unwrap_or_else(|e| panic!("{e}"));
        let mut env = ClusterEnv::new(scenario.clone());
        let a = trajectory(&mut env, 3);
        // Reset reseeds: the same seed again gives the same episode, on this env or a new one.
        assert_eq!(trajectory(&mut env, 3), a, "{}: reset with the same seed", path.display());
        assert_eq!(trajectory(&mut ClusterEnv::new(scenario), 3), a, "{}: a fresh env", path.display());
        assert_ne!(trajectory(&mut env, 4), a, "{}: another seed gives another episode", path.display());
    }
}

#[test]
fn an_action_outside_the_space_is_an_error_not_a_clamp() {
    let scenario = ScenarioFile::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml"), &[]).unwrap();
    let mut env = ClusterEnv::new(scenario);
    env.reset(1);
    let n = env.n();
    let k = env.action_space(0).n;
    let mut actions = vec![0; n];
    actions[2] = k;
    assert_eq!(
        env.step(&actions).unwrap_err(),
        ActionError::OutOfSpace {
            agent: 2,
            action: k,
            levels: k
        }
    );
    assert_eq!(env.step(&[0]).unwrap_err(), ActionError::Count { expected: n, got: 1 });
    // The failed calls changed nothing: the episode continues.
    assert!(env.step(&vec![0; n]).is_ok());
}

#[test]
fn metrics_do_not_depend_on_the_thread_count() {
    let scenario = ScenarioFile::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml"),
        &["env.rounds=60".into()],
    )
    .unwrap();
    let seeds = [1, 2, 3, 4];
    let make = Fixed { level: 3 };
    let strip = |mut v: Vec<env::metrics::EpisodeMetrics>| {
        // Scheduling time is a wall-clock measurement, the one figure that is not replayable.
        v.iter_mut().for_each(|m| m.sched_us = 0.0);
        v
    };
    let one = strip(evaluate(&scenario, &seeds, &make, true, 1));
    let two = strip(evaluate(&scenario, &seeds, &make, true, 2));
    assert_eq!(one, two);
    assert_ne!(one[0], one[1]);
}

#[test]
fn the_optional_features_sit_where_the_observation_space_says_and_change_no_dynamics() {
    // quickstart (weights 1/2/4, mmpp) with the burst state, the weight class and the budgets.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    let plain = ScenarioFile::load(&path, &["env.rounds=30".into()]).unwrap();
    let all = ScenarioFile::load(
        &path,
        &[
            "env.rounds=30".into(),
            "env.observe_burst=true".into(),
            "env.observe_weight=true".into(),
            "env.observe_budgets=true".into(),
        ],
    )
    .unwrap();
    let (mut a, mut b) = (ClusterEnv::new(plain), ClusterEnv::new(all));
    let n = a.n();
    assert_eq!(b.observation_space(0).dim(), a.observation_space(0).dim() + 2 + n);
    let _ = trajectory(&mut b, 3);
    a.reset(5);
    b.reset(5);
    let weights: Vec<f64> = b.scenario().agents.iter().map(|x| x.weight).collect();
    for _ in 0..30 {
        let (oa, ob) = (a.observations(), b.observations());
        for i in 0..n {
            // The shared prefix is the same: the extras only append.
            assert_eq!(oa.get(i), &ob.get(i)[..oa.dim]);
            let extra = &ob.get(i)[oa.dim..];
            assert!(extra[0] == 0.0 || extra[0] == 1.0, "burst state {}", extra[0]);
            assert_eq!(f64::from(extra[1]), weights[i] / 4.0, "weight class of agent {i}");
            for j in 0..n {
                assert_eq!(f64::from(extra[2 + j]), f64::from(ob.get(j)[0]), "budget share of agent {j}");
            }
        }
        let actions: Vec<usize> = (0..n).map(|i| (i * 3) % 10).collect();
        let (ra, rb) = (
            a.step(&actions).unwrap().rewards.to_vec(),
            b.step(&actions).unwrap().rewards.to_vec(),
        );
        assert_eq!(ra, rb, "observation switches change no dynamics");
    }
}

#[test]
fn the_by_type_block_summarises_the_observation_per_type_and_does_not_grow_with_the_cluster() {
    // quickstart: 20 agents (weights 1/2/4), 40 accelerators half of each catalog type; and the
    // same mix 5x larger. The block has the same length in both and, per type, the cluster
    // share, the rate over the agent's largest (catalog Table 5.1) and the mean utility.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    let load = |scale: usize| {
        let mut o: Vec<String> = vec![
            "env.rounds=20".into(),
            "env.observe_weight=true".into(),
            "env.observe_by_type=true".into(),
        ];
        if scale > 1 {
            let sc = ScenarioFile::load(&path, &[]).unwrap();
            for (k, g) in sc.file.env.agents.iter().enumerate() {
                o.push(format!("env.agents.{k}.count={}", g.count * scale));
            }
            for (k, g) in sc.file.env.cluster.iter().enumerate() {
                o.push(format!("env.cluster.{k}.count={}", g.count * scale));
            }
        }
        ScenarioFile::load(&path, &o).unwrap()
    };
    let (small, large) = (load(1), load(5));
    let width = env::world::by_type_features(&small);
    assert_eq!(width, 2 + 3 * 2 + 1);
    assert_eq!(width, env::world::by_type_features(&large));
    // Speed-up draws give each (agent, accelerator) its own rate: the type's mean is then
    // summed over its accelerators rather than computed once.
    let mut drawn = load(1);
    drawn.file.env.heterogeneity = env::config::Heterogeneity::SpeedupDraw;
    for sc in [small, large, drawn] {
        let cat = sc.file.env.catalog.clone();
        // A twin that skips the utilities (a trainer whose networks read only the block):
        // the same block, rewards and budgets, bit for bit.
        let mut twin = ClusterEnv::new(sc.clone());
        twin.set_utilities_observed(false);
        twin.reset(3);
        let mut e = ClusterEnv::new(sc);
        let (n, m) = (e.n(), e.m());
        let dim = e.observation_space(0).dim();
        assert_eq!(dim, 1 + m + 2 + width);
        e.reset(3);
        for round in 0..20 {
            let o = e.observations();
            let catalog = e.scenario().file.env.heterogeneity == env::config::Heterogeneity::Catalog;
            for i in 0..n {
                let (x, y) = (o.get(i), twin.observations().get(i));
                assert_eq!(
                    &x[dim - width..],
                    &y[dim - width..],
                    "the block without the utilities, round {round}"
                );
                assert_eq!(x[0], y[0]);
                // Catalog rates: the block needs no utility, so none is written; drawn rates:
                // the block sums them, so they are.
                let skipped = y[1..1 + m].iter().all(|&u| u == 0.0);
                assert_eq!(skipped, catalog || x[1..1 + m].iter().all(|&u| u == 0.0), "utilities skipped");
            }
            assert_eq!(e.budgets(), twin.budgets());
            for i in 0..n {
                let x = o.get(i);
                let block = &x[dim - width..];
                assert!(
                    (f64::from(block[0]) - f64::from(x[0]) * n as f64).abs() < 1e-4 * n as f64,
                    "budget x n"
                );
                let app = e.scenario().agents[i].app;
                let tp = &cat.throughput[app];
                let fastest = tp.iter().copied().fold(0.0, f64::max);
                let catalog = e.scenario().file.env.heterogeneity == env::config::Heterogeneity::Catalog;
                for t in 0..2 {
                    let members: Vec<usize> = (0..m).filter(|&c| e.scenario().accelerators[c] == t).collect();
                    let share = members.len() as f64 / m as f64;
                    let fill = members.iter().map(|&c| f64::from(x[1 + c])).sum::<f64>() / members.len() as f64;
                    assert!((f64::from(block[1 + 3 * t]) - share).abs() < 1e-6);
                    let rate = members.iter().map(|&c| e.rates()[i * m + c] / e.max_rates()[i]).sum::<f64>() / members.len() as f64;
                    assert!((f64::from(block[2 + 3 * t]) - rate).abs() < 1e-6, "rate of type {t}");
                    if catalog {
                        assert!((rate - tp[t] / fastest).abs() < 1e-9, "catalog Table 5.1");
                    }
                    assert!((f64::from(block[3 + 3 * t]) - fill).abs() < 1e-6, "fill of type {t}, round {round}");
                }
                assert_eq!(&block[7..], &x[1 + m..3 + m], "backlog and weight class");
            }
            let actions: Vec<usize> = (0..n).map(|i| (i + round) % 10).collect();
            let twin_rewards = twin.step(&actions).unwrap().rewards.to_vec();
            assert_eq!(e.step(&actions).unwrap().rewards, &twin_rewards[..]);
        }
    }
}
