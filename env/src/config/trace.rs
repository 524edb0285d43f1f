//! Arrival traces (`arrivals = "trace"`): a CSV of arrivals per round and agent.

use super::limits;
use std::path::Path;

/// Most rounds a job log may span (its last submit time, scaled), and most cells (rounds x
/// agents) the arrivals it expands to may hold.
pub const MAX_LOG_ROUNDS: u64 = 10_000_000;
pub const MAX_LOG_CELLS: u64 = 50_000_000;

/// Read a trace in `format`: arrival counts ([`read_counts`]) or a job log ([`read_jobs`]), as
/// arrivals per round and agent.
pub fn read_trace_as(path: &Path, n: usize, format: super::TraceFormat, time_scale: f64) -> Result<Vec<Vec<u64>>, String> {
    match format {
        super::TraceFormat::Counts => read_trace(path, n),
        super::TraceFormat::Jobs => read_jobs(path, n, time_scale),
    }
}

/// Read a job log: a header naming its columns, then one row per job. `submit` (its time, a
/// number >= 0, in units that `time_scale` turns into rounds) and `agent` (its agent's index,
/// 0 to n - 1) are required; `count` (jobs the row stands for, default 1) is optional; any other
/// name is an error (a log's `duration` or `size` has no meaning in the queue world, whose jobs
/// take the accelerators' service rates). Job j arrives in round floor(submit x time_scale).
pub fn read_jobs(path: &Path, n: usize, time_scale: f64) -> Result<Vec<Vec<u64>>, String> {
    let name = path.display();
    let text = super::overrides::read_text(path, limits::MAX_TRACE_BYTES).map_err(|e| format!("{name}: {e}"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let Some((_, head)) = lines.next() else {
        return Err(format!("{name}: no header (a job log names its columns: submit, agent[, count])"));
    };
    let cols: Vec<String> = head.split(',').map(|c| c.trim().to_ascii_lowercase()).collect();
    const KNOWN: [&str; 3] = ["submit", "agent", "count"];
    if let Some(bad) = cols.iter().find(|c| !KNOWN.contains(&c.as_str())) {
        return Err(format!(
            "{name} line 1: unknown column `{bad}`; a job log's columns are submit, agent and optionally count"
        ));
    }
    let at = |want: &str| cols.iter().position(|c| c == want);
    if let Some(dup) = KNOWN.iter().find(|k| cols.iter().filter(|c| c == k).count() > 1) {
        return Err(format!("{name} line 1: column `{dup}` named twice"));
    }
    let (Some(submit), Some(agent)) = (at("submit"), at("agent")) else {
        return Err(format!(
            "{name} line 1: a job log needs the columns submit and agent (got {})",
            cols.join(", ")
        ));
    };
    let count = at("count");
    let mut jobs: Vec<(u64, usize, u64)> = Vec::new();
    let mut last = 0u64;
    for (k, line) in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != cols.len() {
            return Err(format!(
                "{name} line {}: {} columns, the header names {}",
                k + 1,
                cells.len(),
                cols.len()
            ));
        }
        let t: f64 = cells[submit]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| format!("{name} line {}: submit `{}` is not a time >= 0", k + 1, cells[submit]))?;
        let round = (t * time_scale).floor();
        if round >= MAX_LOG_ROUNDS as f64 {
            return Err(format!(
                "{name} line {}: submit {t} is round {round} at env.trace_time_scale = {time_scale}, past the {MAX_LOG_ROUNDS} rounds a log may span",
                k + 1
            ));
        }
        let i: usize = cells[agent]
            .parse()
            .ok()
            .filter(|&i| i < n)
            .ok_or_else(|| format!("{name} line {}: agent `{}` is not an agent index in [0, {n})", k + 1, cells[agent]))?;
        let c: u64 = match count {
            Some(c) => cells[c].parse().ok().filter(|&c| c <= limits::MAX_TRACE_ARRIVALS).ok_or_else(|| {
                format!(
                    "{name} line {}: count `{}` is not a whole number in [0, {}]",
                    k + 1,
                    cells[c],
                    limits::MAX_TRACE_ARRIVALS
                )
            })?,
            None => 1,
        };
        last = last.max(round as u64);
        jobs.push((round as u64, i, c));
    }
    if jobs.is_empty() {
        return Err(format!("{name}: no jobs"));
    }
    let rounds = last + 1;
    if rounds.saturating_mul(n as u64) > MAX_LOG_CELLS {
        return Err(format!(
            "{name}: {rounds} rounds x {n} agents of arrivals, more than {MAX_LOG_CELLS}; scale its time down (env.trace_time_scale)"
        ));
    }
    let mut rows = vec![vec![0u64; n]; rounds as usize];
    for (r, i, c) in jobs {
        let cell = &mut rows[r as usize][i];
        *cell = cell.saturating_add(c).min(limits::MAX_TRACE_ARRIVALS);
    }
    Ok(rows)
}

/// Read a trace CSV: one row per round, one column per agent, whole numbers in
/// `[0, limits::MAX_TRACE_ARRIVALS]`. A first line is a header only when none of its cells is a
/// number (so a first row of `-1` or `nan` is an error, not a header); a UTF-8 byte-order mark
/// is skipped. A header's names place the columns: a name ending in K (`agentK`, `aK`, `gpuK`) is
/// agent K's column (any order; each agent once), and a header of other names is an error
/// (reversed columns were read in file order, silently). Rounds past the end wrap around.
pub fn read_trace(path: &Path, n: usize) -> Result<Vec<Vec<u64>>, String> {
    let text = super::overrides::read_text(path, limits::MAX_TRACE_BYTES).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut rows = Vec::new();
    let mut order: Option<Vec<usize>> = None;
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let parsed: Result<Vec<u64>, _> = cells.iter().map(|c| c.parse::<u64>()).collect();
        let header = k == 0 && cells.iter().all(|c| c.parse::<f64>().is_err());
        if header {
            order = Some(header_order(path, &cells, n)?);
            continue;
        }
        match parsed {
            Ok(row) if row.len() == n => {
                let row = match &order {
                    // order[c]: the agent column c holds.
                    Some(order) => {
                        let mut by_agent = vec![0; n];
                        for (c, &v) in row.iter().enumerate() {
                            by_agent[order[c]] = v;
                        }
                        by_agent
                    }
                    None => row,
                };
                if let Some(c) = row.iter().position(|&v| v > limits::MAX_TRACE_ARRIVALS) {
                    return Err(format!(
                        "{} line {} column {}: {} arrivals, more than the limit of {}",
                        path.display(),
                        k + 1,
                        c + 1,
                        row[c],
                        limits::MAX_TRACE_ARRIVALS
                    ));
                }
                rows.push(row)
            }
            Ok(row) => {
                return Err(format!(
                    "{} line {}: {} columns, expected one per agent ({n})",
                    path.display(),
                    k + 1,
                    row.len()
                ))
            }
            Err(_) => return Err(format!("{} line {}: expected non-negative whole numbers", path.display(), k + 1)),
        }
    }
    if rows.is_empty() {
        return Err(format!("{}: no rows", path.display()));
    }
    Ok(rows)
}

/// The agent each column of a counts trace's header names (a name ending in its index).
fn header_order(path: &Path, cells: &[&str], n: usize) -> Result<Vec<usize>, String> {
    let name = path.display();
    if cells.iter().any(|c| c.eq_ignore_ascii_case("submit")) {
        return Err(format!(
            "{name} line 1: a job log's header (submit, ...); read it with env.trace_format = \"jobs\""
        ));
    }
    if cells.len() != n {
        return Err(format!(
            "{name} line 1: the header names {} columns, expected one per agent ({n})",
            cells.len()
        ));
    }
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for c in cells {
        // The trailing number is the agent (`agent3`, `a3`, `tenant_3`); what precedes it
        // may only be letters and separators.
        let digits = c.len() - c.trim_end_matches(|ch: char| ch.is_ascii_digit()).len();
        let (prefix, number) = c.split_at(c.len() - digits);
        let plain = prefix.chars().all(|ch| ch.is_ascii_alphabetic() || matches!(ch, '_' | '-' | ' '));
        let idx = number.parse::<usize>().ok().filter(|&i| plain && i < n);
        let Some(i) = idx else {
            return Err(format!(
                "{name} line 1: header `{c}` names no agent; name each column by its agent's index (agent0 .. agent{}, any order), or leave the header out",
                n - 1
            ));
        };
        if std::mem::replace(&mut seen[i], true) {
            return Err(format!("{name} line 1: agent {i} named twice in the header"));
        }
        order.push(i);
    }
    Ok(order)
}
