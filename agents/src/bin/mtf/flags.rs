//! The flags several commands share (INTERFACE's common flags), their parsers, and JSON output:
//! defined once, so a flag means the same on every command that has it.

/// The common flags of INTERFACE: defined once, so they mean the same on every command that has
/// them (simulate, train, compare, sweep, reproduce).
#[derive(clap::Args, Debug)]
pub(crate) struct Common {
    /// Override any config key: key.path=value (repeatable; arrays by index or `*`, e.g.
    /// env.agents.*.load=0.8).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Root seed (overrides the config's `seed`; 0 to 2^63 - 1, a TOML integer).
    #[arg(long, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Worker threads (default 2; results do not depend on it).
    #[arg(long, value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Machine-readable JSON on stdout instead of the report.
    #[arg(long)]
    pub json: bool,
    /// No progress bars or progress lines (also off when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,
}

/// Where evaluation episodes come from and where their run directory goes (simulate, compare).
#[derive(clap::Args, Debug)]
pub(crate) struct Episodes {
    /// Evaluation episodes, seeds derived from the root seed (compare: the same seeds for every
    /// policy and mechanism); at most 100000.
    #[arg(long, default_value_t = 8, value_parser = parse_seeds)]
    pub seeds: usize,
    /// Run directory (default runs/<command>-<config stem>-<timestamp>).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

impl Common {
    /// Threads for commands without a config default.
    pub fn threads_or_default(&self) -> usize {
        self.threads.unwrap_or(2)
    }
}

/// A whole number of `what` in `[1, max]`.
fn bounded(s: &str, max: usize, what: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(t) if (1..=max).contains(&t) => Ok(t),
        _ => Err(format!("expected a whole number of {what} in [1, {max}], got `{s}`")),
    }
}

/// `--threads`: 1 to `config::limits::MAX_THREADS`.
/// A seed: 0 to 2^63 - 1, what a TOML integer holds (a run's config.toml records it; 2^63 and
/// above were refused only after parsing, as a string where an integer was expected).
pub(crate) fn parse_seed(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(v) if v <= i64::MAX as u64 => Ok(v),
        _ => Err(format!("`{s}`: expected an integer from 0 to {} (a TOML integer)", i64::MAX)),
    }
}

pub(crate) fn parse_threads(s: &str) -> Result<usize, String> {
    bounded(s, agents::config::limits::MAX_THREADS, "threads")
}

/// `--seeds` of a paired analysis: 2 (a CI needs two) to `config::limits::MAX_SEEDS`.
pub(crate) fn parse_paired_seeds(s: &str) -> Result<usize, String> {
    match parse_seeds(s)? {
        1 => Err("expected at least 2 seeds (a paired CI needs two), got `1`".into()),
        n => Ok(n),
    }
}

/// `--seeds`: 1 to `config::limits::MAX_SEEDS`.
pub(crate) fn parse_seeds(s: &str) -> Result<usize, String> {
    bounded(s, agents::config::limits::MAX_SEEDS, "seeds")
}

/// The report on stdout: its JSON with the run directory, or its table.
pub(crate) fn report<T: serde::Serialize + std::fmt::Display>(
    done: &T,
    dir: &std::path::Path,
    json: bool,
) -> agents::Result<std::process::ExitCode> {
    if json {
        let mut v = serde_json::to_value(done)?;
        v["run_dir"] = dir.display().to_string().into();
        print_json(&v)?;
    } else {
        agents::out::print(&format!("{done}"))?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// Print JSON as one line.
pub(crate) fn print_json(v: &impl serde::Serialize) -> agents::Result<()> {
    agents::out::println(&serde_json::to_string(v)?)?;
    Ok(())
}
