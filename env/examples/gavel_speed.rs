//! One episode of a Gavel config, timed: `cargo run --release -p env --example gavel_speed -- CONFIG [--set k=v]...`
use env::registry;
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = &args[0];
    let sets: Vec<String> = args[1..].chunks(2).map(|c| c[1].clone()).collect();
    let mut w = registry::load(Path::new(config), &sets).unwrap();
    let t0 = std::time::Instant::now();
    let mut actions = Vec::new();
    while !w.done() {
        actions.clear();
        actions.resize(w.live().len(), 0);
        w.step(&actions).unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let f = w.figures();
    let names: Vec<&str> = w.metrics().iter().map(|m| m.key).collect();
    println!("{secs:.3} s");
    for (k, v) in names.iter().zip(&f) {
        println!("{k} {v:.4}");
    }
}
