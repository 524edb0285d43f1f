//! `mtf reproduce thesis [--quick]`: the thesis's chapter 5 evaluation (SPEC 6) regenerated
//! with this harness, each figure and table next to the thesis's claim, in
//! `runs/reproduce-thesis-<timestamp>/index.md`.
//!
//! Learned MTF is the actor-critic trained per scenario and load (briefly with `--quick`);
//! "best fixed" is MTF with threshold 0.0, the best fixed level wherever levels differ
//! (`env/README.md`). Baselines: round robin, stride, Gandiva_fair, Themis, max-throughput.
//!
//! Files: this one plans the run and writes `index.md`; [`load`] the welfare-vs-load figures
//! with the thesis's claims and the deadlines; [`sections`] the other figures and tables (mixed loads,
//! overhead, sharing incentive, envy, the thesis-code preset, the analysis); [`verdict`] the
//! closing paragraphs.

mod load;
mod sections;
mod verdict;

use load::{deadlines, welfare_vs_load};
use sections::{analysis, envy, mixed_loads, overhead, sharing_incentive, thesis_code};
use verdict::verdict;

use crate::config::Source;
use crate::error::user;
use crate::eval::compare::{compare, CompareSpec};
use crate::report::markdown::Table;
use crate::report::plots;
use crate::report::table::Row;
use crate::run;
use crate::train::TrainSpec;
use env::eval::Stat;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What to reproduce, and how.
#[derive(Debug, Clone, Default)]
pub struct ReproduceSpec {
    /// Fewer loads, seeds and training episodes: under 10 minutes on 2 cores.
    pub quick: bool,
    /// Output directory (default `runs/reproduce-thesis-<timestamp>`).
    pub out: Option<PathBuf>,
    /// Worker threads.
    pub threads: usize,
    /// Root seed of every scenario (overrides the configs' `seed`).
    pub seed: Option<u64>,
    /// `--set` overrides applied to every scenario (before the reproduction's own).
    pub set: Vec<String>,
    /// No progress lines on stderr.
    pub quiet: bool,
    /// The thesis configs' folder (default: `configs/thesis` here, or in the executable's
    /// checkout).
    pub configs: Option<PathBuf>,
}

/// What a reproduction wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Reproduced {
    /// The output directory.
    pub out: PathBuf,
    /// Its `index.md`: every figure and table next to the thesis's claim.
    pub index: PathBuf,
    /// Wall time.
    pub seconds: f64,
}

struct Plan {
    loads: Vec<f64>,
    seeds: usize,
    episodes: u64,
    variants: Vec<&'static str>,
    deadlines: Vec<u32>,
    sizes: Vec<usize>,
    overhead_rounds: u32,
    /// Deadlines of the thesis-code preset's sweep.
    code_deadlines: Vec<u32>,
    /// Selection seeds of the analysis.
    select_seeds: usize,
}

const BASELINES: [&str; 5] = ["round_robin", "stride", "gandiva_fair", "themis", "max_throughput"];

/// (config stem, figures, thesis claim, load the claim is at, claimed gap over Themis in %,
/// the setup's agents as a `env.agents` override of the thesis-code preset).
const SETUPS: [(&str, &str, &str, f64, f64, &str); 4] = [
    (
        "equal",
        "Fig. 5.2/5.3",
        "at 60% queue utility MTF exceeds Themis by 152%; on average it outperforms two other schedulers by 39%",
        0.6,
        152.0,
        "[{ count = 20, weight = 1.0 }]",
    ),
    (
        "half-2",
        "Fig. 5.4-5.6",
        "at 60% MTF surpasses Themis by 183%; it outperforms two other schedulers by 43% on average",
        0.6,
        183.0,
        "[{ count = 10, weight = 1.0 }, { count = 10, weight = 2.0 }]",
    ),
    (
        "w124",
        "Fig. 5.7-5.9",
        "at 70% MTF outperforms Themis by 73%; compared to the two other schedulers by 25%",
        0.7,
        73.0,
        "[{ count = 10, weight = 1.0 }, { count = 5, weight = 2.0 }, { count = 5, weight = 4.0 }]",
    ),
    (
        "w128",
        "Fig. 5.10-5.12",
        "at 50% MTF outperforms Themis by 62%; 14% better on average than two other schedulers",
        0.5,
        62.0,
        "[{ count = 10, weight = 1.0 }, { count = 5, weight = 2.0 }, { count = 5, weight = 8.0 }]",
    ),
];

/// The standard schedulers of the thesis's "1.28x compared to standard approaches".
const STANDARD: [&str; 4] = ["round_robin", "stride", "gandiva_fair", "themis"];

/// Baselines of the thesis-code preset: its own stride variant, queue-blind.
const CODE_BASELINES: [&str; 5] = ["round_robin", "stride_per_accelerator", "stride", "gandiva_fair", "themis"];

/// A measured gap: MTF's welfare over a baseline's, relative (%) and paired.
#[derive(Clone, Debug)]
struct Gap {
    pct: f64,
    diff: Stat,
}

impl Gap {
    fn of(mtf: &Row, base: &Row) -> Self {
        Gap {
            pct: 100.0 * (mtf.summary.welfare().mean / base.summary.welfare().mean - 1.0),
            diff: crate::report::table::welfare_diff(mtf, base),
        }
    }

    fn text(&self) -> String {
        format!("{:+.1}% ({} jobs/round paired)", self.pct, crate::report::table::signed(&self.diff))
    }

    /// At least half the claimed gap, with a paired CI that excludes 0.
    fn reproduces(&self, claimed_pct: f64) -> bool {
        self.pct >= claimed_pct / 2.0 && crate::report::table::significant(&self.diff) && self.diff.mean > 0.0
    }
}

/// One thesis-code measurement: (setup, deadline, MTF's policy, gap vs each baseline).
type CodeRow = (&'static str, u32, String, Vec<(String, Gap)>);

/// What the verdict paragraphs are written from, filled as the sections run.
#[derive(Default)]
struct Findings {
    /// (setup, variant, learned MTF vs Themis at the claim load, learned MTF over the mean of
    /// the standard schedulers as a ratio).
    setups: Vec<(&'static str, &'static str, Gap, f64)>,
    /// (setup, deadline, best fixed MTF level, gap vs each of [`CODE_BASELINES`]).
    code: Vec<CodeRow>,
    /// (learned MTF's mean agents with phi < 1, agents, its phi median, the baselines' best
    /// phi median).
    phi: Option<(f64, usize, f64, f64)>,
    /// Learned MTF's EF violations (pairs, mean over seeds).
    envy: Option<Stat>,
    /// The analysis verdict (learned vs best fixed vs headroom, the token scale).
    analysis: Option<String>,
}

/// Where the thesis configs are: `--configs DIR` when given, else `configs/thesis` in the
/// current directory, else beside the executable in its checkout (`target/release/mtf` ->
/// `configs/thesis`). Never the build machine's path: a moved binary looks where it is.
fn configs(given: Option<&Path>) -> crate::error::Result<PathBuf> {
    let mut looked = Vec::new();
    let candidates = match given {
        Some(dir) => vec![dir.to_path_buf()],
        None => {
            let mut c = vec![PathBuf::from("configs/thesis")];
            if let Some(root) = std::env::current_exe()
                .ok()
                .and_then(|e| Some(e.parent()?.parent()?.parent()?.to_path_buf()))
            {
                c.push(root.join("configs/thesis"));
            }
            c
        }
    };
    // The folder holds the setups; its parent the thesis-code preset (as configs/ does).
    for dir in candidates {
        if dir.join("equal.toml").is_file() && dir.join("../thesis-code.toml").is_file() {
            return Ok(dir);
        }
        looked.push(dir.display().to_string());
    }
    Err(user(format!(
        "the thesis configs are missing (looked in {}: each needs equal.toml and ../thesis-code.toml, as configs/thesis has); run from the repository or pass --configs DIR",
        looked.join(", ")
    )))
}

struct Ctx {
    dir: PathBuf,
    /// The thesis configs' folder.
    configs: PathBuf,
    plan: Plan,
    threads: usize,
    seed: Option<u64>,
    set: Vec<String>,
    quiet: bool,
    started: Instant,
    step: usize,
    steps: usize,
    found: Findings,
}

impl Ctx {
    /// The command line's overrides, then the reproduction's.
    fn overrides(&self, set: &[String]) -> Vec<String> {
        self.set.iter().chain(set).cloned().collect()
    }

    fn progress(&mut self, what: &str) {
        self.step += 1;
        if self.quiet {
            return;
        }
        eprintln!(
            "[{}/{}] {:>6.1} s  {what}",
            self.step,
            self.steps,
            self.started.elapsed().as_secs_f64()
        );
    }

    fn compare(
        &self,
        config: &Path,
        policies: &[&str],
        mechanisms: &[&str],
        set: &[String],
        seeds: usize,
    ) -> crate::error::Result<Vec<Row>> {
        let spec = CompareSpec {
            source: Source::new(config, &self.overrides(set), self.seed),
            policies: policies.iter().map(|s| s.to_string()).collect(),
            mechanisms: mechanisms.iter().map(|s| s.to_string()).collect(),
            seeds,
            threads: self.threads,
            baseline: None,
            labels: Vec::new(),
        };
        Ok(compare(&spec)?.rows)
    }

    /// MTF under `mtf_policies`, then every baseline (thresholds only matter to MTF, so the
    /// baselines run once, under an arbitrary fixed level), all on the same seeds.
    fn mtf_and_baselines(&self, config: &Path, mtf_policies: &[&str], set: &[String], seeds: usize) -> crate::error::Result<Vec<Row>> {
        let mut rows = self.compare(config, mtf_policies, &["mtf"], set, seeds)?;
        rows.extend(self.compare(config, &["fixed:0.5"], &BASELINES, set, seeds)?);
        Ok(rows)
    }

    fn train(&self, config: &Path, set: &[String], name: &str) -> crate::error::Result<PathBuf> {
        let out = self.dir.join("train").join(name);
        let mut set = self.overrides(set);
        set.push(format!("train.episodes={}", self.plan.episodes));
        set.push("train.eval_seeds=1".into());
        set.push(format!("train.checkpoint_every={}", self.plan.episodes));
        crate::train::execute(TrainSpec {
            config: Some(config.to_path_buf()),
            name: None,
            set,
            resume: None,
            out: Some(out.clone()),
            seed: self.seed,
            threads: Some(self.threads),
            quiet: true,
            on_episode: None,
            stop: None,
            replicates: None,
            allow_config_change: Vec::new(),
        })?;
        Ok(out)
    }
}

fn pct(a: f64, b: f64) -> String {
    if b.abs() < 1e-12 {
        return "n/a".into();
    }
    let d = 100.0 * (a / b - 1.0);
    // Print a change that rounds to zero as +0.0%, not -0.0%.
    format!("{:+.1}%", if d.abs() < 0.05 { 0.0 } else { d })
}

fn cell(s: &Stat) -> String {
    s.pm(2)
}

fn by_label<'a>(rows: &'a [Row], label: &str) -> &'a Row {
    rows.iter().find(|r| series_label(r) == label).expect("every series is evaluated")
}

fn series_label(r: &Row) -> String {
    if r.mechanism != "mtf" {
        return r.mechanism.clone();
    }
    if r.policy.starts_with("run:") {
        "mtf learned".into()
    } else if r.policy.starts_with("sampled:run:") {
        "mtf learned (sampled)".into()
    } else {
        format!("mtf {}", r.policy)
    }
}

/// Each series minus the max-throughput reference, paired over seeds, per x: the differences
/// the absolute welfare lines hide (they coincide to within a few percent).
fn gap_series(labels: &[String], per_x: &[Vec<Row>]) -> Vec<(String, Vec<Stat>)> {
    labels
        .iter()
        .filter(|l| l.as_str() != "max_throughput")
        .map(|l| {
            let gaps = per_x
                .iter()
                .map(|rows| crate::report::table::welfare_diff(by_label(rows, l), by_label(rows, "max_throughput")))
                .collect();
            (l.clone(), gaps)
        })
        .collect()
}

/// Regenerate the thesis's chapter 5 (`mtf reproduce thesis`): run every section, write
/// `index.md` and its figures.
pub fn reproduce(args: &ReproduceSpec) -> crate::error::Result<Reproduced> {
    let plan = if args.quick {
        Plan {
            loads: vec![0.4, 0.6, 0.8],
            seeds: 3,
            episodes: 6,
            variants: vec!["", "-mmpp"],
            deadlines: vec![5, 10, 20],
            sizes: vec![20, 40, 60],
            overhead_rounds: 60,
            code_deadlines: vec![5, 10, 20],
            select_seeds: 3,
        }
    } else {
        Plan {
            loads: vec![0.4, 0.5, 0.6, 0.7, 0.8],
            seeds: 8,
            episodes: 60,
            variants: vec!["", "-mmpp"],
            deadlines: vec![5, 10, 15, 20, 30, 40],
            sizes: vec![20, 30, 40, 50, 60],
            overhead_rounds: 200,
            code_deadlines: vec![5, 10, 20, 40],
            select_seeds: 8,
        }
    };
    let cfg = configs(args.configs.as_deref())?;
    // The episode length every scenario runs with (the configs' own, unless --set changes it).
    let rounds = Source::new(cfg.join("equal.toml"), &args.set, args.seed)
        .load(None)?
        .file
        .env
        .rounds;
    let run_dir = run::RunDir::create(args.out.as_deref(), "reproduce-thesis")?;
    let dir = run_dir.path().to_path_buf();
    let steps = SETUPS.len() * plan.variants.len() * plan.loads.len() + 1 + 2 + 2 + 1 + 1 + 1;
    let mut ctx = Ctx {
        configs: cfg.clone(),
        dir: dir.clone(),
        plan,
        threads: args.threads,
        seed: args.seed,
        set: args.set.clone(),
        quiet: args.quiet,
        started: Instant::now(),
        step: 0,
        steps,
        found: Findings::default(),
    };
    let mut index = String::new();
    let _ = writeln!(
        index,
        "Mode: {}. {} seeds per point, {rounds} rounds per episode, learned MTF = actor-critic trained {} episodes per scenario and load. \
         Welfare is the weighted social welfare in jobs per round (thesis 5.3), mean +- 95% CI over seeds; every row of a table ran on the same seeds (same arrivals). \
         \"Best fixed\" is MTF with threshold 0.0. Where the harness and the thesis differ, the text says so.\n",
        if args.quick { "--quick" } else { "full" },
        ctx.plan.seeds,
        ctx.plan.episodes
    );

    let rows_w124_high = welfare_vs_load(&mut ctx, &cfg, &mut index)?;
    deadlines(&mut ctx, &cfg, &mut index)?;
    mixed_loads(&mut ctx, &cfg, &mut index)?;
    overhead(&mut ctx, &cfg, &mut index)?;
    sharing_incentive(&mut ctx, rows_w124_high, &mut index)?;
    envy(&mut ctx, &cfg, &mut index)?;
    thesis_code(&mut ctx, &mut index)?;
    analysis(&mut ctx, &cfg, &mut index)?;
    let index = format!(
        "# Thesis chapter 5, reproduced with this harness\n\n{}\n{index}",
        verdict(&ctx.found, args.quick)
    );
    let mut index = index;

    let _ = writeln!(index, "---\nWall time: {:.1} s.", ctx.started.elapsed().as_secs_f64());
    run::write_atomic(&dir.join("index.md"), index.as_bytes())?;
    // The thesis-code gaps as data, for the docs script (scripts/docs-figures.sh).
    let code: Vec<serde_json::Value> = ctx
        .found
        .code
        .iter()
        .map(|(setup, deadline, policy, gaps)| {
            let gaps: serde_json::Map<String, serde_json::Value> = gaps
                .iter()
                .map(|(b, g)| (b.clone(), serde_json::json!({ "pct": g.pct, "diff": g.diff })))
                .collect();
            serde_json::json!({ "setup": setup, "deadline": deadline, "policy": policy, "gaps": gaps })
        })
        .collect();
    let findings = serde_json::json!({
        "quick": args.quick,
        "seconds": ctx.started.elapsed().as_secs_f64(),
        "thesis_code": code,
    });
    run::write_atomic(&dir.join("findings.json"), serde_json::to_string_pretty(&findings)?.as_bytes())?;
    Ok(Reproduced {
        index: dir.join("index.md"),
        out: dir,
        seconds: ctx.started.elapsed().as_secs_f64(),
    })
}
