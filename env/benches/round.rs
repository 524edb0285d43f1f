//! One full environment round (arrivals, placement, expiry, observation, MTF, service, rewards)
//! at 20 agents x 40 accelerators, loads 0.8, p2c — central queues (the default) and
//! per-accelerator queues — and one whole 300-round episode of each.

use criterion::{criterion_group, criterion_main, Criterion};
use env::config::ScenarioFile;
use env::world::ClusterEnv;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

fn scenario(queues: &str, rounds: u32) -> env::config::Scenario {
    let mut table: toml::Table = toml::Table::new();
    for o in [
        format!("env.rounds={rounds}"),
        format!("env.queues=\"{queues}\""),
        "env.agents=[{ count = 20, load = 0.8 }]".into(),
    ] {
        env::config::apply_override(&mut table, &o).unwrap();
    }
    let file: ScenarioFile = env::config::from_table("bench", table).unwrap();
    file.resolve(Path::new("bench")).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("env");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for queues in ["central", "per_accelerator"] {
        let mut world = ClusterEnv::new(scenario(queues, u32::MAX));
        world.set_recording(false);
        world.reset(1);
        let actions = vec![5; world.n()];
        // Warm the queues up to steady state first.
        for _ in 0..200 {
            world.step(&actions).unwrap();
        }
        g.bench_function(format!("round/{queues}/20x40"), |b| {
            b.iter(|| black_box(world.step(black_box(&actions)).unwrap().rewards[0]))
        });
        let sc = scenario(queues, 300);
        let mut episode = ClusterEnv::new(sc);
        g.bench_function(format!("episode300/{queues}/20x40"), |b| {
            b.iter(|| {
                episode.reset(7);
                while !episode.agents().is_empty() {
                    episode.step(&actions).unwrap();
                }
                black_box(episode.totals().served[0])
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
