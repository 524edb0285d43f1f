//! The analysis as files: `analysis.md` (a verdict paragraph, then one table per part), the
//! CSVs, the figures and `summary.json`.

use super::*;
use crate::report::markdown::Table;
use crate::report::plots;

/// The report: a verdict paragraph, then one table per part with its column legend.
pub fn markdown(a: &Analyzed, config: &Path, figures: &[plots::Figure]) -> String {
    let mut md = format!(
        "# Can learning help? {} (mechanism {}; policies selected on {} seeds, scored on {} held-out seeds, paired)\n\n",
        config.display(),
        a.scenario.file.mechanism.name,
        a.select_seeds.len(),
        a.seeds.len()
    );
    md += &verdict(a);
    md += &format!(
        "\n## 1. Headroom: simple adaptive policies against the best fixed level ({})\n\n",
        a.best_fixed
    );
    // mtf compare ranks levels on the seeds it is given; without this line a reader saw two
    // "best" levels and no reason (issue 40.8).
    md += &format!(
        "The best fixed level is the one with the highest mean welfare on the {} selection seeds, never on the held-out ones it is scored on; `mtf compare` ranks levels on the seeds it is given, so its best row can be a neighbouring level where the two differ by less than the noise.\n\n",
        a.select_seeds.len()
    );
    let mut table = Table::new([
        "class",
        "levels per weight class (bit off / on)",
        "gain on selection seeds",
        "Δ welfare, held out",
    ]);
    for h in &a.headroom {
        let levels: Vec<String> = h
            .levels
            .iter()
            .map(|(w, off, on)| {
                if h.bit == Bit::None {
                    format!("w{w}: {off}")
                } else {
                    format!("w{w}: {off} / {on}")
                }
            })
            .collect();
        table.row([
            h.bit.name().to_string(),
            levels.join(", "),
            format!("{:+.3}", h.select_gain),
            signed(&h.held_out_gain),
        ]);
    }
    md += &table.to_string();
    md += "\nGain on selection seeds: mean welfare (jobs per round) minus the best fixed level's on the seeds the search chose on (never negative). Δ welfare, held out: the same on other seeds, mean and paired 95% CI; * marks a CI that excludes 0.\n";
    md += "\n## 2. Best responses: one agent per weight class deviates from the common best fixed level\n\n";
    let mut table = Table::new([
        "weight",
        "agent",
        "common",
        "deviation",
        "own reward gain",
        "own throughput gain",
        "welfare change",
    ]);
    for b in &a.best_responses {
        table.row([
            b.weight.to_string(),
            b.agent.to_string(),
            b.common.to_string(),
            b.deviation.to_string(),
            signed(&b.own_reward_gain),
            signed(&b.own_throughput_gain),
            signed(&b.welfare_change),
        ]);
    }
    md += &table.to_string();
    md += "\nDeviation: the level that maximises the agent's own reward on the selection seeds while every other agent keeps the common level. Gains and changes: deviation minus common on the held-out seeds, paired 95% CI (reward per round in the scenario's reward units, throughput and welfare in jobs per round).\n";
    if !a.token_scale.is_empty() {
        md += &token_table(a);
    }
    md += &equilibrium_section(a);
    if let Some(r) = &a.run {
        md += &run_section(a, r);
    }
    md += &policies_section(a);
    md += "\n## Every held-out row\n\n";
    md += &crate::report::table::markdown(&a.rows);
    if !figures.is_empty() {
        md += "\n## Figures\n\n";
        md += &plots::markdown_list(figures);
    }
    md
}

/// The policies the analysis found, as specs `mtf simulate --policy`, `mtf compare
/// --policies` and `mtf analyze --baselines` take.
fn policies_section(a: &Analyzed) -> String {
    let mut t = Table::new(["policy", "spec", "Δ welfare vs best fixed, held out"]);
    t.row([
        "best fixed level".to_string(),
        crate::learners::fixed::Levels::All(a.best_fixed).spec(),
        "baseline".into(),
    ]);
    for h in &a.headroom {
        let spec = h.spec.clone().unwrap_or_else(|| "(reads a state bit: no fixed spec)".into());
        t.row([h.bit.name().to_string(), spec, signed(&h.held_out_gain)]);
    }
    let e = &a.equilibrium;
    t.row(["selfish equilibrium".to_string(), e.spec.clone(), signed(&e.vs_best_fixed)]);
    format!(
        "\n## The policies found, as specs\n\n{t}\nPaste a spec into `mtf simulate --policy`, `mtf compare --policies` or `mtf analyze --baselines` (quote it in a shell).\n"
    )
}

fn token_table(a: &Analyzed) -> String {
    let names: Vec<&str> = a.token_scale[0].diffs.iter().map(|(b, _)| b.as_str()).collect();
    let mut md = "\n## 3. The token scale: MTF against the baselines as the token total varies\n\n".to_string();
    let head = ["total tokens", "MTF best fixed", "MTF welfare", "bought share"].map(String::from);
    let mut table = Table::new(head.into_iter().chain(names.iter().map(|b| format!("MTF − {b}"))));
    for p in &a.token_scale {
        let cells = [
            p.total_tokens.to_string(),
            p.best_fixed.to_string(),
            p.mtf_welfare.pm(3),
            format!("{:.3}", p.paid_share.mean),
        ];
        table.row(cells.into_iter().chain(p.diffs.iter().map(|(_, d)| signed(d))));
    }
    md += &table.to_string();
    md += "\nMTF at its best fixed level for each total (selection seeds). Bought share: the share of accelerator-rounds MTF sold for a token; the rest went by its unweighted free phase. MTF − baseline: welfare difference on the held-out seeds, paired 95% CI, jobs per round.\n";
    md
}

/// One paragraph that answers the question, from the numbers (`analysis.md` opens with it).
pub fn verdict(a: &Analyzed) -> String {
    let mut s = String::from("**Verdict.** ");
    if let Some(h) = a
        .headroom
        .iter()
        .max_by(|x, y| x.held_out_gain.mean.total_cmp(&y.held_out_gain.mean))
    {
        s += &format!(
            "The best simple adaptive class here ({}) gains {} jobs per round over the best fixed level {} on held-out seeds ({}). ",
            h.bit.name(),
            signed(&h.held_out_gain),
            a.best_fixed,
            if crate::report::table::significant(&h.held_out_gain) {
                "a real but bounded headroom for learners of such policies"
            } else {
                "not distinguishable from 0: little for a learner to find"
            }
        );
    }
    let selfish: Vec<String> = a
        .best_responses
        .iter()
        .filter(|b| crate::report::table::significant(&b.own_reward_gain) && b.own_reward_gain.mean > 0.0)
        .map(|b| {
            format!(
                "weight {} (to {}, own reward {}, welfare {})",
                b.weight,
                b.deviation,
                signed(&b.own_reward_gain),
                signed(&b.welfare_change)
            )
        })
        .collect();
    s += &if selfish.is_empty() {
        "No weight class gains by deviating alone from the common level: it is stable against selfish learners. ".to_string()
    } else {
        format!("Selfish learners will move: {}. ", selfish.join("; "))
    };
    if let (Some(lo), Some(hi)) = (a.token_scale.first(), a.token_scale.last()) {
        let worst = |p: &TokenPoint| {
            p.diffs
                .iter()
                .min_by(|x, y| x.1.mean.total_cmp(&y.1.mean))
                .map(|(b, d)| format!("{} against {b}", signed(d)))
                .unwrap_or_default()
        };
        s += &format!(
            "The token total matters: at T = {} MTF's worst paired difference is {} (bought share {:.2}); at T = {} it is {} (bought share {:.2}). ",
            lo.total_tokens,
            worst(lo),
            lo.paid_share.mean,
            hi.total_tokens,
            worst(hi),
            hi.paid_share.mean
        );
    }
    if let Some(r) = &a.run {
        match (&r.replicates, r.diffs.first()) {
            (Some(g), _) => {
                if let Some((_, rep)) = g.greedy.first() {
                    s += &format!(
                        "The run group's {} replicates stand at IQM {} against the best fixed level (greedy).",
                        g.runs.len(),
                        rep.cell()
                    );
                }
            }
            (None, Some((_, d))) => s += &format!("The trained run stands at {} against the best fixed level.", signed(d)),
            (None, None) => {}
        }
    }
    s + "\n\n" + &verdict_lines(a).join("\n") + "\n"
}

/// The analysis in three lines: is there headroom, where do selfish learners go, and how many
/// agent-rounds would a learner need to see its best response.
pub fn verdict_lines(a: &Analyzed) -> Vec<String> {
    let mut lines = Vec::new();
    let best = a
        .headroom
        .iter()
        .max_by(|x, y| x.held_out_gain.mean.total_cmp(&y.held_out_gain.mean));
    lines.push(match best {
        Some(h) if crate::report::table::significant(&h.held_out_gain) && h.held_out_gain.mean > 0.0 => format!(
            "- **Headroom:** {} jobs per round over the best fixed level, held out ({}).",
            signed(&h.held_out_gain),
            h.bit.name()
        ),
        _ => "- **No headroom:** no simple adaptive policy beats the best fixed level on held-out seeds.".to_string(),
    });
    let e = &a.equilibrium;
    let profile: Vec<String> = e.levels.iter().map(|(w, l)| format!("w{w} {l}")).collect();
    lines.push(format!(
        "- **Selfish learners should go to** {} ({}; welfare {:.3}, {} against the best fixed level, price of anarchy {:.3}).",
        profile.join(", "),
        if e.converged {
            format!("no class gains by moving, after {} passes", e.passes)
        } else {
            format!("not settled after {} passes", e.passes)
        },
        e.welfare.mean,
        signed(&e.vs_best_fixed),
        e.price_of_anarchy_fixed
    ));
    let needed = a
        .signals
        .iter()
        .filter_map(|s| s.agent_rounds.map(|n| (s, n)))
        .min_by(|x, y| x.1.total_cmp(&y.1));
    lines.push(match needed {
        Some((s, n)) => format!(
            "- **Learnable with {} agent-rounds** per comparison of two levels: the most visible best response (weight {}) gains {:.4} per round ({:.1}% of its reward) against a per-round standard deviation of {:.3} (lag-1 autocorrelation {:.2}).",
            sci(n),
            s.weight,
            s.gain,
            100.0 * s.relative_gain,
            s.sd,
            s.autocorrelation
        ),
        None => "- **Nothing to learn selfishly:** no class's best response raises its own reward.".to_string(),
    });
    lines
}

/// A count in scientific notation, `1.2e6`.
fn sci(x: f64) -> String {
    if x < 1e4 {
        format!("{x:.0}")
    } else {
        let e = x.log10().floor();
        format!("{:.1}e{}", x / 10f64.powf(e), e as i32)
    }
}

/// Section 6: the trained run, or a run group across its replicates.
fn run_section(a: &Analyzed, r: &super::RunStanding) -> String {
    let Some(g) = &r.replicates else {
        let mut md = format!("\n## 6. The trained run `{}`\n\n", r.run);
        let mut table = Table::new(["the run minus", "Δ welfare, held out"]);
        for (label, d) in &r.diffs {
            table.row([label.clone(), signed(d)]);
        }
        md += &table.to_string();
        md += "\nWelfare of the run's greedy policy minus each row's, on the held-out seeds, paired 95% CI in jobs per round.\n";
        return md;
    };
    let mut md = format!("\n## 6. The run group `{}` ({} training replicates)\n\n", r.run, g.runs.len());
    let mut table = Table::new([
        "the group minus",
        "IQM [95% CI] over replicates; P(improvement)",
        "mean +- 95% CI over replicates",
    ]);
    for ((label, rep), (_, d)) in g.greedy.iter().zip(&r.diffs) {
        table.row([format!("{label} (greedy)"), rep.cell(), signed(d)]);
    }
    if let Some((label, _)) = g.greedy.first() {
        table.row([format!("{label} (sampled)"), g.sampled.cell(), "-".to_string()]);
    }
    md += &table.to_string();
    md += &format!(
        "\nEach replicate's score: its mean welfare difference to the row on the held-out seeds (paired); the interquartile mean over replicates with a 95% percentile-bootstrap interval, and the probability that a replicate beats the row (Agarwal et al. 2021). Sampled: the replicates drawing their actions as in training. The selfish equilibrium (section 4) stands at {} against the best fixed level: selfish learners that reach it score about that.{}\n",
        signed(&a.equilibrium.vs_best_fixed),
        if g.near_uniform > 0 {
            format!(" {} of {} replicates are near-uniform: their greedy rows are argmaxes of noise.", g.near_uniform, g.runs.len())
        } else {
            String::new()
        }
    );
    md
}

fn equilibrium_section(a: &Analyzed) -> String {
    let e = &a.equilibrium;
    let mut md = "\n## 4. The selfish equilibrium: iterated best responses per weight class\n\n".to_string();
    let mut t = Table::new(["weight", "level"]);
    for (w, l) in &e.levels {
        t.row([w.to_string(), l.to_string()]);
    }
    md += &t.to_string();
    md += &format!(
        "\n{} after {} passes. Welfare {} jobs per round (held out); minus the best fixed level {}; minus the best adaptive policy {}; price of anarchy {:.3} against the best fixed level and {:.3} against the best adaptive policy (their welfare over the equilibrium's).\n",
        if e.converged { "No class gains by moving" } else { "Not settled (a cycle or the pass limit)" },
        e.passes,
        e.welfare.pm(3),
        signed(&e.vs_best_fixed),
        signed(&e.vs_best_adaptive),
        e.price_of_anarchy_fixed,
        e.price_of_anarchy_adaptive
    );
    md += "\nEach class's first agent in turn tries every level while everyone else keeps the profile, and the class moves to the level that pays that agent most on the selection seeds (common random numbers); the equilibrium is where no class moves.\n";
    md += "\n## 5. The signal: what a selfish learner has to see\n\n";
    let mut t = Table::new([
        "weight",
        "best response gain (per round)",
        "share of reward",
        "per-round sd",
        "lag-1 autocorrelation",
        "agent-rounds to see it",
        "one round ranks first",
        "the long run ranks first",
        "rank correlation",
    ]);
    for s in &a.signals {
        t.row([
            s.weight.to_string(),
            format!("{:+.4}", s.gain),
            format!("{:+.1}%", 100.0 * s.relative_gain),
            format!("{:.3}", s.sd),
            format!("{:.2}", s.autocorrelation),
            s.agent_rounds.map(sci).unwrap_or_else(|| "-".into()),
            s.one_round_best.map(|l| l.to_string()).unwrap_or_else(|| "-".into()),
            s.long_run_best.to_string(),
            s.rank_correlation.map(|r| format!("{r:+.2}")).unwrap_or_else(|| "-".into()),
        ]);
    }
    md += &t.to_string();
    md += "\nBest response gain: the class's first agent's own reward per round at its best response minus at the best fixed level, everyone else at the best fixed level (held-out seeds). Agent-rounds to see it: both arms of a two-sample test at 5% significance and 80% power, 2 (z(0.975) + z(0.8))^2 x 2 sd^2 / gain^2 x (1 + rho) / (1 - rho), with rho the lag-1 autocorrelation of the per-round reward. One round ranks first: the level whose utility won in the round itself (net of the tokens' value under the `net` reward) is highest (the mechanism re-run on each round as played with only this agent's level changed; '-' when the mechanism keeps state across rounds); the long run ranks first: the level whose own reward over whole episodes is highest (selection seeds); rank correlation: Spearman's, over the levels. A learner that credits each round's action with that round's reward follows the first ranking.\n";
    md
}

/// Write the analysis's run directory: `config.toml`, `analysis.md`, `headroom.csv`,
/// `best_responses.csv`, `token_scale.csv`, `rows.csv`, the figures, `summary.json`.
pub fn write(a: &Analyzed, source: &Source, out: Option<&Path>) -> crate::error::Result<PathBuf> {
    let dir = crate::run::RunDir::create(out, &format!("analyze-{}", source.stem()))?;
    crate::run::write_atomic(&dir.config(), a.scenario.to_toml().as_bytes())?;
    let figures = figures(dir.path(), a)?;
    crate::run::write_atomic(&dir.file("analysis.md"), markdown(a, &source.config, &figures).as_bytes())?;
    let stat = |s: &Stat| {
        [
            format!("{}", s.mean),
            if s.has_ci() { format!("{}", s.ci95) } else { String::new() },
        ]
    };
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let records: Vec<Vec<String>> = a
        .headroom
        .iter()
        .flat_map(|h| {
            h.levels.iter().map(move |(w, off, on)| {
                let mut r = vec![
                    h.bit.name().to_string(),
                    w.to_string(),
                    off.to_string(),
                    on.to_string(),
                    h.select_gain.to_string(),
                ];
                r.extend(stat(&h.held_out_gain));
                r
            })
        })
        .collect();
    let header = strings(&[
        "class",
        "weight",
        "level_off",
        "level_on",
        "select_gain",
        "held_out_gain_mean",
        "held_out_gain_ci95",
    ]);
    crate::run::write_atomic(&dir.file("headroom.csv"), &crate::run::csv_bytes(&header, &records)?)?;
    let records: Vec<Vec<String>> = a
        .best_responses
        .iter()
        .map(|b| {
            let mut r = vec![
                b.weight.to_string(),
                b.agent.to_string(),
                b.common.to_string(),
                b.deviation.to_string(),
            ];
            r.extend(stat(&b.own_reward_gain));
            r.extend(stat(&b.own_throughput_gain));
            r.extend(stat(&b.welfare_change));
            r
        })
        .collect();
    let header = strings(&[
        "weight",
        "agent",
        "common",
        "deviation",
        "own_reward_gain_mean",
        "own_reward_gain_ci95",
        "own_throughput_gain_mean",
        "own_throughput_gain_ci95",
        "welfare_change_mean",
        "welfare_change_ci95",
    ]);
    crate::run::write_atomic(&dir.file("best_responses.csv"), &crate::run::csv_bytes(&header, &records)?)?;
    let records: Vec<Vec<String>> = a
        .token_scale
        .iter()
        .flat_map(|p| {
            p.diffs.iter().map(move |(b, d)| {
                let mut r = vec![p.total_tokens.to_string(), p.best_fixed.to_string()];
                r.extend(stat(&p.mtf_welfare));
                r.push(p.paid_share.mean.to_string());
                r.push(b.clone());
                r.extend(stat(d));
                r
            })
        })
        .collect();
    let header = strings(&[
        "total_tokens",
        "best_fixed",
        "mtf_welfare_mean",
        "mtf_welfare_ci95",
        "bought_share",
        "baseline",
        "diff_mean",
        "diff_ci95",
    ]);
    crate::run::write_atomic(&dir.file("token_scale.csv"), &crate::run::csv_bytes(&header, &records)?)?;
    crate::run::write_atomic(&dir.file("rows.csv"), &crate::report::table::csv(&a.rows)?)?;
    let mut json = serde_json::to_value(a)?;
    json["figures"] = plots::files(&figures).into();
    crate::run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(dir.path().to_path_buf())
}

/// The analysis figures: every held-out row's welfare minus the best fixed
/// level's (`headroom`), the best responses per weight class (`best_responses`), and MTF minus
/// each baseline over the token total (`token_scale`). Returns the file names.
pub fn figures(dir: &Path, a: &Analyzed) -> crate::error::Result<Vec<plots::Figure>> {
    let mut files = Vec::new();
    let rows = &a.rows;
    files.extend(plots::paired_rows(dir, "headroom", rows)?);
    if !a.best_responses.is_empty() {
        let mut names = Vec::new();
        let mut stats = Vec::new();
        for b in &a.best_responses {
            names.push(format!("w{} own throughput", b.weight));
            stats.push((b.own_throughput_gain, 0));
            names.push(format!("w{} welfare", b.weight));
            stats.push((b.welfare_change, 3));
        }
        files.extend(plots::per_row_values(
            dir,
            "best_responses",
            &names,
            "One agent per weight class deviates alone from the common level",
            "deviation minus common level (jobs per round)",
            &stats,
            &[("the deviating agent's throughput", 0), ("welfare", 3)],
            "Points: mean paired difference over the held-out seeds; bars: paired 95% CI (Student's t).",
        )?);
    }
    // The run's rows: one, or one per replicate (their held-out welfare averaged).
    let trained: Vec<f64> = rows
        .iter()
        .filter(|r| r.policy.starts_with("run:"))
        .map(|r| r.summary.welfare().mean)
        .collect();
    let trained = match trained.len() {
        0 => None,
        1 => rows
            .iter()
            .find(|r| r.policy.starts_with("run:"))
            .map(|r| ("trained, greedy, held out".to_string(), r.summary.welfare())),
        k => Some((format!("greedy, held out, {k} runs"), Stat::of(&trained))),
    };
    if let (Some(run), Some((_, trained)), Some(best)) = (a.run.as_ref().filter(|r| !r.learning.is_empty()), trained, rows.first()) {
        // The training curve (what the learner played while it learned: for ES, its perturbed
        // population) with its held-out level once at the right, and the best fixed level as
        // a reference line: each measured once, drawn once.
        let per = run.learning.first().map_or(1, |(e, _)| *e);
        let over = run
            .replicates
            .as_ref()
            .map_or(String::new(), |g| format!(", {} runs", g.runs.len()));
        let series = [crate::report::plots::Series {
            label: format!("training ({per}-episode blocks{over})"),
            runs: Vec::new(),
            points: run.learning.clone(),
            held_out: Some(trained),
        }];
        let refs = [crate::report::plots::Reference {
            policy: format!("{} held out", best.policy),
            level: best.summary.welfare(),
        }];
        files.extend(plots::curves(
            dir,
            "learning",
            "welfare",
            "welfare (jobs per round)",
            &series,
            &refs,
        )?);
    }
    if let Some(first) = a.token_scale.first() {
        let xs: Vec<f64> = a.token_scale.iter().map(|p| p.total_tokens).collect();
        let series: Vec<(String, Vec<Stat>)> = (0..first.diffs.len())
            .map(|k| {
                (
                    format!("MTF − {}", first.diffs[k].0),
                    a.token_scale.iter().map(|p| p.diffs[k].1).collect(),
                )
            })
            .collect();
        files.extend(plots::lines(
            dir,
            "token_scale",
            "MTF minus each baseline vs the token total (paired, 95% CI)",
            "total tokens T (log scale)",
            "welfare difference (jobs per round)",
            &xs,
            true,
            &series,
        )?);
    }
    Ok(files)
}
