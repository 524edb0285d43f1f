//! Is a high threshold individually better? Everyone reports level `base`, one agent deviates
//! to each level; print the deviator's mean reward and throughput and the welfare, averaged
//! over seeds. Usage: cargo run --release -p env --example deviation -- CONFIG [AGENT] [BASE]
use env::config::ScenarioFile;
use env::world::ClusterEnv;
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let config = args.get(1).map(String::as_str).unwrap_or("configs/quickstart.toml");
    let agent: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let base: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let sc = ScenarioFile::load(Path::new(config), &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut env = ClusterEnv::new(sc);
    let n = env.n();
    let k = env.levels().len();
    println!(
        "agent {agent} (weight {}) deviates; everyone else at level {base}",
        env.scenario().agents[agent].weight
    );
    println!("level  reward  throughput  welfare");
    for level in 0..k {
        let (mut r, mut t, mut w) = (0.0, 0.0, 0.0);
        let seeds = 16;
        for seed in 0..seeds {
            let mut actions = vec![base; n];
            actions[agent] = level;
            env.reset(1000 + seed);
            while !env.agents().is_empty() {
                env.step(&actions).unwrap();
            }
            let m = env::metrics::EpisodeMetrics::compute(&env, false);
            r += m.reward[agent];
            t += m.throughput[agent];
            w += m.welfare;
        }
        let s = seeds as f64;
        println!("{:5.2}  {:6.3}  {:10.2}  {:7.2}", env.levels()[level], r / s, t / s, w / s);
    }
}
