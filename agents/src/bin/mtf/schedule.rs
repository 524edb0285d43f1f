//! `mtf schedule`: one round of a mechanism, JSON in (a file or stdin), JSON out.

use agents::error::user;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    #[arg(long, short, help = format!("Mechanism: {}", scheduler::registry::NAMES.join(", ")))]
    mechanism: String,
    /// Round input JSON file (default: stdin).
    #[arg(long, short)]
    input: Option<PathBuf>,
    #[arg(long, help = format!(
        "Themis fairness knob f in [0, 1] (overrides the input's `fairness`; default {})",
        scheduler::themis::DEFAULT_FAIRNESS
    ))]
    #[arg(value_parser = parse_fairness)]
    fairness: Option<f64>,
}

/// `--fairness`: a number in [0, 1] (checked here, so the flag is named, not the input).
fn parse_fairness(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("expected a number in [0, 1], got `{s}`")),
    }
}

pub(crate) fn run(args: Args) -> agents::Result<ExitCode> {
    let text = match &args.input {
        Some(path) => agents::run::read_text(path, agents::run::MAX_TEXT)?,
        None => {
            // The same limit as --input: an endless stdin is refused at MAX_TEXT, not read to
            // the end of memory.
            let mut bytes = Vec::new();
            std::io::stdin()
                .take(agents::run::MAX_TEXT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| user(format!("stdin: {e}")))?;
            if bytes.len() as u64 > agents::run::MAX_TEXT {
                return Err(user(format!(
                    "stdin: more than the {} bytes a round may have",
                    agents::run::MAX_TEXT
                )));
            }
            String::from_utf8(bytes).map_err(|e| user(format!("stdin: not UTF-8 text ({e})")))?
        }
    };
    let out = agents::eval::schedule::schedule_json(&args.mechanism, &text, args.fairness).map_err(|e| match &args.input {
        Some(path) if e.exit_code() == 2 => user(format!("{}: {e}", path.display())),
        _ => e,
    })?;
    agents::out::println(&format!("{out}"))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) const HELP: &str = "\
One allocation round: reads the SPEC section 3 JSON (stdin by default), writes the result JSON to stdout.

Input, either form:
  utilities form: {\"utilities\": [[u, ..], ..] (n x m, in [0, 1]), ...}
  demand form:    {\"demands\": [d, ..] (n, jobs >= 0), \"rates\": [[r, ..], ..] (n x m, > 0), ...}
Common fields:
  thresholds  n values in [0, 1]          required by mtf
  budgets     n values in [0, 1e15]       required by mtf (tokens)
  weights     n values in [1e-9, 1e9]     default all 1 (bounds keep redistribution finite)
  turn        integer in [0, n)           default 0 (where the cyclic order starts)
Demands are at most 1e15 jobs; rates lie in [1e-9, 1e15].
Optional fields some mechanisms need:
  rates       n x m service rates (with the utilities form): required by stride,
              stride_per_accelerator, gandiva_fair and max_throughput (fastest-first order,
              speed-ups, jobs per accelerator)
  types       m accelerator type labels (gandiva_fair; default: equal rate columns share a type)
  leftovers   what nobody bought: \"round_robin\" (default, SPEC 3.1), \"weighted_random\"
              (SPEC 7: each leftover goes to an agent drawn by weight, using `draws`) or
              \"none\" (they stay idle; mtf and the auctions)
  draws       m uniform numbers in [0, 1), one per accelerator: the random draws of the
              weighted-random leftovers and of the auctions' ties (the scheduler draws none of
              its own); required with \"leftovers\": \"weighted_random\"; without them an
              auction's tie goes to the first tied agent in cyclic order from `turn`
  bids        n x m bids in tokens, in [0, 1e15]: required by second_price and first_price
              (SPEC 8: accelerators sold in index order, each bid capped by the bidder's budget
              at that moment; an agent bids only on accelerators it values above 0)
  reserve     the auctions' reserve price in tokens (default 0)
  redistribute  whether the auctions' payments go back to the agents by weight (default true)
  fairness    Themis's knob f in [0, 1] (default: see --fairness)
  state       state printed by the previous call of a stateful mechanism (stride passes, the
              static partition, gandiva_fair passes, Themis's ideal and served accumulators);
              omit it on the first round

Output: {\"owners\": [agent or null per accelerator], \"budgets\": [..after..], \"turn\": next,
         \"spent\": [tokens per agent], \"paid\": [bought, per accelerator],
         \"prices\": [tokens paid per accelerator] (auctions only),
         \"state\": {..} (stateful mechanisms only)}

The round must be a JSON object; unknown fields are errors. Bad input (bad JSON, ragged
matrices, NaN, values outside the ranges above, a missing field, an unknown mechanism) prints
one line on stderr and exits with 2.";
