//! Every Gavel policy on Gavel's two reference traces next to Gavel's own numbers
//! (`../shared/gavel/reference/`): `cargo run --release -p env --example gavel_fidelity`.
use env::worlds::World;
use std::path::Path;

fn main() {
    if let Some(p) = std::env::args().nth(1) {
        detail("configs/gavel/small.toml", "small_n100_r0.4_s0", &p);
        return;
    }
    for (config, trace) in [
        ("configs/gavel/small.toml", "small_n100_r0.4_s0"),
        ("configs/gavel/static.toml", "static_n50_s0"),
    ] {
        let reference = std::fs::read_to_string(format!("../shared/gavel/reference/{trace}.summary.csv")).unwrap();
        let jcts = std::fs::read_to_string(format!("../shared/gavel/reference/{trace}.jcts.csv")).unwrap();
        let header: Vec<&str> = jcts.lines().next().unwrap().split(',').collect();
        for line in reference.lines().skip(1) {
            let cells: Vec<&str> = line.split(',').collect();
            let policy = cells[0];
            if scheduler::registry::build(policy, &Default::default()).is_err() {
                continue;
            }
            let path = Path::new(config);
            let table = env::config::read_table(path, &[format!("mechanism.name=\"{policy}\"")]).unwrap();
            let mut w = env::worlds::gavel::GavelWorld::new(env::worlds::gavel::load(table, path).unwrap());
            let t0 = std::time::Instant::now();
            while !w.done() {
                let n = w.live().len();
                w.step(&vec![0; n]).unwrap();
            }
            let secs = t0.elapsed().as_secs_f64();
            let f = w.figures();
            let g = |k: usize| cells[k].parse::<f64>().unwrap();
            let col = header.iter().position(|h| *h == format!("jct_s_{policy}")).unwrap();
            let mut within = 0;
            let mut total = 0;
            // per-job JCTs
            let ours: Vec<f64> = w.jcts().to_vec();
            for l in jcts.lines().skip(1) {
                let c: Vec<&str> = l.split(',').collect();
                let id: usize = c[0].parse().unwrap();
                let theirs: f64 = c[col].parse().unwrap();
                total += 1;
                if (ours[id] - theirs).abs() <= 0.1 * theirs {
                    within += 1;
                }
            }
            println!(
                "{trace:20} {policy:28} avg {:7.3} vs {:7.3} ({:+5.1}%)  makespan {:7.2} vs {:7.2} ({:+5.1}%)  util {:.3} vs {:.3}  rho {:.3} vs {:.3}  jobs within 10%: {within}/{total}  rounds {} vs {}  {:.2}s",
                f[0], g(5), 100.0 * (f[0] / g(5) - 1.0), f[3], g(8), 100.0 * (f[3] / g(8) - 1.0), f[4], g(9), f[7], g(11), f[6], g(10), secs
            );
        }
    }
}

#[allow(dead_code)]
pub fn detail(config: &str, trace: &str, policy: &str) {
    let jcts = std::fs::read_to_string(format!("../shared/gavel/reference/{trace}.jcts.csv")).unwrap();
    let header: Vec<&str> = jcts.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == format!("jct_s_{policy}")).unwrap();
    let path = Path::new(config);
    let table = env::config::read_table(path, &[format!("mechanism.name=\"{policy}\"")]).unwrap();
    let mut w = env::worlds::gavel::GavelWorld::new(env::worlds::gavel::load(table, path).unwrap());
    w.run(0);
    let ours = w.jcts().to_vec();
    for l in jcts.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        let id: usize = c[0].parse().unwrap();
        let theirs: f64 = c[col].parse().unwrap();
        let r = ours[id] / theirs;
        if (r - 1.0).abs() > 0.02 {
            println!("job {id}: ours {:.0} theirs {:.0} ratio {:.3}", ours[id], theirs, r);
        }
    }
}
