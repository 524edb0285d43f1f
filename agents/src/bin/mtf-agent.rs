//! The standalone agent runtime. On its own it carries no policy; `mtf export` appends one.
//! Usage: AGENT [--agent INDEX] [--sample --seed N] [--describe]
//! JSON lines in ({"budget": .., "utilities": [..]}), JSON lines out; see `agents::runtime`.

use agents::runtime::{read_payload, Agent, Draws};
use std::io::{BufRead, Write};
use std::process::ExitCode;

fn fail(msg: &str) -> ExitCode {
    eprintln!("mtf-agent: {msg}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut describe, mut sample, mut seed, mut agent) = (false, false, None::<u64>, None::<usize>);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--describe" => describe = true,
            "--sample" => sample = true,
            "--seed" => match it.next().and_then(|s| s.parse().ok()) {
                Some(s) => seed = Some(s),
                None => return fail("--seed needs a whole number"),
            },
            "--agent" => match it.next().and_then(|s| s.parse().ok()) {
                Some(i) => agent = Some(i),
                None => return fail("--agent needs an agent index"),
            },
            "--help" | "-h" => {
                println!("usage: {} [--agent INDEX] [--sample --seed N] [--describe]\nJSON lines in: {{\"budget\": B/T, \"utilities\": [..]}}; out: {{\"threshold\": .., \"probabilities\": [..]}}", std::env::args().next().unwrap_or_default());
                return ExitCode::SUCCESS;
            }
            other => return fail(&format!("unknown argument `{other}` (see --help)")),
        }
    }
    if sample && seed.is_none() {
        return fail("--sample needs --seed N (reproducible draws)");
    }
    let exe = match std::env::current_exe().and_then(std::fs::read) {
        Ok(b) => b,
        Err(e) => return fail(&format!("cannot read my own executable: {e}")),
    };
    let (manifest, weights) = match read_payload(&exe) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    if describe {
        let mut v = serde_json::to_value(&manifest).expect("serialisable");
        v["observation_size"] = env::world::spec_features(manifest.m).into();
        v["observation"] = serde_json::json!(["budget share B/T", format!("utilities[{}]", manifest.m)]);
        println!("{}", serde_json::to_string_pretty(&v).expect("serialisable"));
        return ExitCode::SUCCESS;
    }
    let slot = match (agent, manifest.agents.len()) {
        (None, 1) => 0,
        (None, _) => {
            return fail(&format!(
                "this file holds agents {:?}: choose one with --agent INDEX",
                manifest.agents
            ))
        }
        (Some(i), _) => match manifest.agents.iter().position(|&a| a == i) {
            Some(s) => s,
            None => return fail(&format!("--agent {i}: this file holds agents {:?}", manifest.agents)),
        },
    };
    let policy = Agent::new(&manifest, &weights, slot);
    let mut draws = seed.map(Draws::new);
    let mut stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match stdin.read_until(b'\n', &mut buf) {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(_) => {}
            Err(e) => {
                eprintln!("mtf-agent: reading standard input: {e}");
                return ExitCode::from(1);
            }
        }
        // A line that is not UTF-8 gets an error object, like any other bad line.
        let reply = match std::str::from_utf8(&buf) {
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => policy.answer(line, draws.as_mut().filter(|_| sample).map(Draws::next_unit)),
            Err(e) => serde_json::json!({ "error": format!("the line is not UTF-8 ({e})") }).to_string(),
        };
        if let Err(e) = writeln!(out, "{reply}").and_then(|_| out.flush()) {
            // A closed pipe means the driver is gone: that is the end of the conversation.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("mtf-agent: writing standard output: {e}");
            return ExitCode::from(1);
        }
    }
}
