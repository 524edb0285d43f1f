//! Arrival traces (`arrivals = "trace"`): a CSV of arrivals per round and agent.

use super::limits;
use std::path::Path;

/// Read a trace CSV: one row per round, one column per agent, whole numbers in
/// `[0, limits::MAX_TRACE_ARRIVALS]`. A first line is a header only when none of its cells is a
/// number (so a first row of `-1` or `nan` is an error, not a header); a UTF-8 byte-order mark
/// is skipped. Rounds past the end of the trace wrap around.
pub fn read_trace(path: &Path, n: usize) -> Result<Vec<Vec<u64>>, String> {
    let text = super::overrides::read_text(path, limits::MAX_TRACE_BYTES).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut rows = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let parsed: Result<Vec<u64>, _> = cells.iter().map(|c| c.parse::<u64>()).collect();
        let header = k == 0 && cells.iter().all(|c| c.parse::<f64>().is_err());
        match parsed {
            Ok(row) if row.len() == n => {
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
            Err(_) if header => continue,
            Err(_) => return Err(format!("{} line {}: expected non-negative whole numbers", path.display(), k + 1)),
        }
    }
    if rows.is_empty() {
        return Err(format!("{}: no rows", path.display()));
    }
    Ok(rows)
}
