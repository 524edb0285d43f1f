//! The standalone agent runtime. On its own it carries no policy; `mtf export` appends one.
//! Usage: AGENT [--agent INDEX] [--sample --seed N] [--describe]
//! JSON lines in ({"budget": .., "utilities": [..]}, and the further features the policy reads:
//! see --describe; a world policy, the market's included, reads {"world": [..]}), JSON lines out; see
//! `agents::export::runtime`.

use agents::export::runtime::{load_model, read_line, read_payload, Agent, Draws, LineRead, PolicyForm, MAX_LINE};
use std::io::Write;
use std::process::ExitCode;

fn fail(msg: &str) -> ExitCode {
    eprintln!("mtf-agent: {msg}");
    ExitCode::from(2)
}

/// Print `text` and a newline: a closed pipe (`--describe | head -1`) ends quietly with 0, a
/// failed write (a full disk) with one line and 1.
fn say(text: &str) -> ExitCode {
    match agents::out::println(text) {
        Ok(()) | Err(agents::Error::ClosedPipe) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mtf-agent: {e}");
            ExitCode::from(1)
        }
    }
}

/// What the command line asks for.
#[derive(Default)]
struct Args {
    describe: bool,
    sample: bool,
    seed: Option<u64>,
    agent: Option<usize>,
    help: bool,
}

fn parse() -> Result<Args, lexopt::Error> {
    use lexopt::prelude::*;
    let mut args = Args::default();
    let mut p = lexopt::Parser::from_env();
    while let Some(arg) = p.next()? {
        match arg {
            Long("describe") => args.describe = true,
            Long("sample") => args.sample = true,
            Long("seed") => args.seed = Some(p.value()?.parse()?),
            Long("agent") => args.agent = Some(p.value()?.parse()?),
            Long("help") | Short('h') => args.help = true,
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let Args {
        describe,
        sample,
        seed,
        agent,
        help,
    } = match parse() {
        Ok(a) => a,
        Err(e) => return fail(&format!("{e} (see --help)")),
    };
    if help {
        return say(&format!("usage: {} [--agent INDEX] [--sample --seed N] [--describe]\nJSON lines in: {{\"budget\": B/T, \"utilities\": [..]}} and the inputs --describe lists (a world policy, the market's included: {{\"world\": [..]}}); out: {{\"threshold\": .., \"probabilities\": [..]}} (a bid policy: {{\"bid_factor\": .., ..}})", std::env::args().next().unwrap_or_default()));
    }
    if sample && seed.is_none() {
        return fail("--sample needs --seed N (reproducible draws)");
    }
    let exe = match std::env::current_exe().and_then(std::fs::read) {
        Ok(b) => b,
        Err(e) => return fail(&format!("cannot read my own executable: {e}")),
    };
    let payload = match read_payload(&exe) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let (manifest, weights) = (&payload.manifest, &payload.weights);
    // An ONNX policy's model is loaded (and its shapes checked) before the first line.
    let model = match manifest.form() {
        Ok(PolicyForm::Onnx) => match load_model(&payload) {
            Ok(m) => Some(m),
            Err(e) => return fail(&e),
        },
        _ => None,
    };
    if describe {
        let mut v = serde_json::to_value(manifest).expect("serialisable");
        v["observation_size"] = manifest.input_len().into();
        let mut fields = vec!["budget share B/T".to_string(), format!("utilities[{}]", manifest.m)];
        fields.extend(manifest.inputs.iter().map(|i| match i.as_str() {
            "budgets" => format!("budgets[{}]", manifest.agents_total),
            other => other.to_string(),
        }));
        if let Some(w) = &manifest.world {
            // A world's observation row, in `world`'s order.
            fields = w.features.clone();
        }
        v["observation"] = serde_json::json!(fields);
        return say(&serde_json::to_string_pretty(&v).expect("serialisable"));
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
    let policy = match &model {
        Some(model) => Agent::onnx(manifest, model),
        None => Agent::new(manifest, weights, slot),
    };
    let mut draws = seed.map(Draws::new);
    let mut stdin = std::io::stdin().lock();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut buf = Vec::new();
    loop {
        let too_long = match read_line(&mut stdin, &mut buf, MAX_LINE, true) {
            Ok(LineRead::End) => return ExitCode::SUCCESS,
            Ok(LineRead::Line) => false,
            Ok(LineRead::TooLong) => true,
            Err(e) => {
                eprintln!("mtf-agent: reading standard input: {e}");
                return ExitCode::from(1);
            }
        };
        // A line that is not UTF-8 gets an error object, like any other bad line.
        let reply = match std::str::from_utf8(&buf) {
            _ if too_long => serde_json::json!({ "error": format!("the line is longer than {MAX_LINE} bytes") }).to_string(),
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
