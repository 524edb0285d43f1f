//! Gavel's data: the measured throughput table, its trace format, and its job generator.
//!
//! Every problem in a file is one error naming the file, the line and the column.

use crate::config::ConfigError;
use crate::rng::{stream, unit};
use rand::rngs::SmallRng;
use std::path::Path;

/// Most jobs a trace may hold (a job costs about 100 bytes while it is simulated).
pub const MAX_JOBS: usize = 1_000_000;
/// Largest step count of a job: 1e15 steps is 30,000 years at Gavel's fastest throughput.
pub const MAX_STEPS: f64 = 1e15;
/// Latest arrival, in seconds (about 3,000 years).
pub const MAX_ARRIVAL: f64 = 1e11;
/// Largest throughput file.
const MAX_TABLE_BYTES: u64 = 16 << 20;
/// Largest trace file (about 1,000,000 lines of Gavel's format).
const MAX_TRACE_BYTES: u64 = 1 << 30;

/// A job type of the table: a model and batch size at one scale factor.
#[derive(Clone, Debug, PartialEq)]
pub struct JobType {
    /// Gavel's job type string, e.g. `ResNet-18 (batch size 64)`.
    pub name: String,
    /// GPUs it runs on at once.
    pub scale: u32,
    /// Steps per second on each GPU type of the table, in the table's type order.
    pub tput: Vec<f64>,
}

/// Gavel's measured throughputs (`throughputs.csv`: the simulation table's columns).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The GPU types, as the columns name them (Gavel's: v100, p100, k80).
    pub types: Vec<String>,
    /// Every (job type, scale factor) row.
    pub rows: Vec<JobType>,
}

fn err(file: &Path, at: String, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.display().to_string(),
        key: at,
        problem: problem.into(),
    }
}

impl Table {
    /// Read a throughput table: a header naming `job_type`, `scale_factor` and one column per
    /// GPU type in `types`; other columns are ignored.
    pub fn read(path: &Path, types: &[String]) -> Result<Table, ConfigError> {
        let text = crate::config::read_text(path, MAX_TABLE_BYTES).map_err(|p| err(path, "(file)".into(), p))?;
        let mut lines = text.lines().enumerate();
        let (_, header) = lines
            .next()
            .ok_or_else(|| err(path, "line 1".into(), "empty: expected a header line"))?;
        let cols: Vec<&str> = header.trim_start_matches('\u{feff}').split(',').map(str::trim).collect();
        let col = |name: &str| {
            cols.iter().position(|c| *c == name).ok_or_else(|| {
                err(
                    path,
                    "line 1".into(),
                    format!("no column `{name}` (the header has: {})", cols.join(", ")),
                )
            })
        };
        let (job, scale) = (col("job_type")?, col("scale_factor")?);
        let tput_cols: Vec<usize> = types.iter().map(|t| col(t)).collect::<Result<_, _>>()?;
        let mut rows = Vec::new();
        for (k, line) in lines {
            if line.trim().is_empty() {
                continue;
            }
            let at = |c: usize| format!("line {}, column {}", k + 1, c + 1);
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() < cols.len() {
                return Err(err(
                    path,
                    format!("line {}", k + 1),
                    format!("{} columns, the header has {}", cells.len(), cols.len()),
                ));
            }
            let scale_v: u32 = cells[scale].parse().ok().filter(|s| (1..=1024).contains(s)).ok_or_else(|| {
                err(
                    path,
                    at(scale),
                    format!("scale_factor `{}` is not a whole number in [1, 1024]", cells[scale]),
                )
            })?;
            let mut tput = Vec::with_capacity(types.len());
            for (&c, t) in tput_cols.iter().zip(types) {
                let v: f64 = cells[c]
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite() && (0.0..=1e9).contains(v))
                    .ok_or_else(|| {
                        err(
                            path,
                            at(c),
                            format!("throughput on {t} `{}` is not a number of steps per second in [0, 1e9]", cells[c]),
                        )
                    })?;
                tput.push(v);
            }
            rows.push(JobType {
                name: cells[job].to_string(),
                scale: scale_v,
                tput,
            });
        }
        Ok(Table {
            types: types.to_vec(),
            rows,
        })
    }

    /// The row of `name` at scale factor `scale`.
    pub fn find(&self, name: &str, scale: u32) -> Option<usize> {
        self.rows.iter().position(|r| r.name == name && r.scale == scale)
    }
}

/// One job of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Its row in the throughput table.
    pub kind: usize,
    /// Steps to run.
    pub steps: f64,
    /// GPUs at once.
    pub scale: u32,
    /// Priority weight.
    pub weight: f64,
    /// Arrival, seconds.
    pub arrival: f64,
}

/// Read a trace in Gavel's format: one job per line, 10 tab-separated columns (job type,
/// command, working directory, steps argument, needs-data-dir, total steps, scale factor,
/// priority weight, SLO, arrival time in seconds); arrivals must not decrease.
pub fn read_trace(path: &Path, table: &Table) -> Result<Vec<Job>, ConfigError> {
    let text = crate::config::read_text(path, MAX_TRACE_BYTES).map_err(|p| err(path, "(file)".into(), p))?;
    let mut jobs = Vec::new();
    let mut last = 0.0f64;
    for (k, line) in text.lines().enumerate() {
        let line = if k == 0 { line.trim_start_matches('\u{feff}') } else { line };
        if line.trim().is_empty() {
            continue;
        }
        if jobs.len() == MAX_JOBS {
            return Err(err(path, format!("line {}", k + 1), format!("more than {MAX_JOBS} jobs")));
        }
        let at = |c: usize| format!("line {}, column {}", k + 1, c + 1);
        let cells: Vec<&str> = line.split('\t').collect();
        if cells.len() != 10 {
            return Err(err(
                path,
                format!("line {}", k + 1),
                format!("{} tab-separated columns, Gavel's trace format has 10 (job type, command, working directory, steps argument, needs-data-dir, total steps, scale factor, priority weight, SLO, arrival)", cells.len()),
            ));
        }
        let num = |c: usize, what: &str, ok: &dyn Fn(f64) -> bool, range: &str| -> Result<f64, ConfigError> {
            cells[c]
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| ok(*v))
                .ok_or_else(|| err(path, at(c), format!("{what} `{}` is not {range}", cells[c])))
        };
        let steps = num(
            5,
            "total steps",
            &|v| v.is_finite() && v >= 1.0 && v <= MAX_STEPS && v.fract() == 0.0,
            "a whole number of steps in [1, 1e15]",
        )?;
        let scale = num(
            6,
            "scale factor",
            &|v| (1.0..=1024.0).contains(&v) && v.fract() == 0.0,
            "a whole number in [1, 1024]",
        )? as u32;
        let weight = num(
            7,
            "priority weight",
            &|v| v.is_finite() && (1e-9..=1e9).contains(&v),
            "a number in [1e-9, 1e9]",
        )?;
        let arrival = num(
            9,
            "arrival",
            &|v| v.is_finite() && (0.0..=MAX_ARRIVAL).contains(&v),
            "a time in seconds in [0, 1e11]",
        )?;
        if arrival < last {
            return Err(err(
                path,
                at(9),
                format!("arrival {arrival} is before the previous job's ({last}): a trace is in arrival order"),
            ));
        }
        last = arrival;
        let kind = table.find(cells[0], scale).ok_or_else(|| {
            err(
                path,
                at(0),
                format!("job type `{}` at scale factor {scale} is not in the throughput table", cells[0]),
            )
        })?;
        if table.rows[kind].tput.iter().all(|&t| t <= 0.0) {
            return Err(err(
                path,
                at(0),
                format!("job type `{}` has throughput 0 on every GPU type: it could never run", cells[0]),
            ));
        }
        jobs.push(Job {
            kind,
            steps,
            scale,
            weight,
            arrival,
        });
    }
    if jobs.is_empty() {
        return Err(err(path, "(file)".into(), "no jobs"));
    }
    Ok(jobs)
}

/// Gavel's job generator (its paper's continuous traces), on mtf's streams: type uniform over
/// the table's single-GPU types (those with a V100 throughput); duration on a dedicated V100 (the first type) `60 * 10^U(1.5,
/// 3)` seconds with probability 0.8, else `60 * 10^U(3, 4)`; steps = duration times that
/// throughput, truncated; Poisson arrivals at `rate` jobs per hour, the first at 0 (all at 0
/// when `rate` is 0: a static trace); with `multi_gpu`, scale factor 1, 2, 4 or 8 with
/// probability 0.7, 0.1, 0.15, 0.05, the type drawn again until it has that scale factor.
#[derive(Clone, Debug)]
pub struct Generator {
    rate: f64,
    multi_gpu: bool,
    single: Vec<usize>,
    /// Per scale factor 2, 4, 8: the rows of single-GPU types that have it (drawing a type
    /// uniformly among these is Gavel's "draw again until distributed").
    scaled: [Vec<usize>; 3],
    rng: SmallRng,
    next_arrival: f64,
}

impl Generator {
    /// A stream of jobs for episode `seed`.
    pub fn new(table: &Table, rate: f64, multi_gpu: bool, seed: u64) -> Self {
        // Types without a first-type (V100) throughput have no duration to draw: left out.
        let single: Vec<usize> = (0..table.rows.len())
            .filter(|&r| table.rows[r].scale == 1 && table.rows[r].tput[0] > 0.0)
            .collect();
        let scaled = [2, 4, 8].map(|s| single.iter().filter_map(|&r| table.find(&table.rows[r].name, s)).collect());
        Self {
            rate,
            multi_gpu,
            single,
            scaled,
            rng: stream(seed, crate::rng::names::GAVEL_JOBS, 0),
            next_arrival: 0.0,
        }
    }

    fn u(&mut self) -> f64 {
        use rand::Rng;
        unit(self.rng.next_u64())
    }

    fn pick(&mut self, rows: &[usize]) -> usize {
        rows[((self.u() * rows.len() as f64) as usize).min(rows.len() - 1)]
    }

    /// The next job.
    pub fn next(&mut self, table: &Table) -> Job {
        // Scale factors the table has no distributed type for are drawn again.
        let (scale, kind) = loop {
            let r = if self.multi_gpu { self.u() } else { 0.0 };
            let (scale, rows) = match r {
                r if r < 0.7 => (1, None),
                r if r < 0.8 => (2, Some(0)),
                r if r < 0.95 => (4, Some(1)),
                _ => (8, Some(2)),
            };
            match rows {
                None => break (scale, self.pick(&self.single.clone())),
                Some(k) if !self.scaled[k].is_empty() => break (scale, self.pick(&self.scaled[k].clone())),
                Some(_) => continue,
            }
        };
        let exponent = if self.u() < 0.8 { 1.5 + 1.5 * self.u() } else { 3.0 + self.u() };
        let duration = 60.0 * 10f64.powf(exponent);
        // Steps from the first type's throughput (Gavel's V100; every row of its table has one).
        let steps = (duration * table.rows[kind].tput[0]).floor().max(1.0);
        let arrival = self.next_arrival;
        if self.rate > 0.0 {
            self.next_arrival += -(1.0 - self.u()).ln() * 3600.0 / self.rate;
        }
        Job {
            kind,
            steps,
            scale,
            weight: 1.0,
            arrival,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            types: vec!["v100".into(), "p100".into(), "k80".into()],
            rows: vec![
                JobType {
                    name: "A".into(),
                    scale: 1,
                    tput: vec![10.0, 5.0, 1.0],
                },
                JobType {
                    name: "A".into(),
                    scale: 2,
                    tput: vec![18.0, 9.0, 2.0],
                },
                JobType {
                    name: "Z".into(),
                    scale: 1,
                    tput: vec![0.0, 0.0, 0.0],
                },
            ],
        }
    }

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("mtf-gavel-{}-{name}", std::process::id()));
        std::fs::write(&p, text).unwrap();
        p
    }

    fn line(job: &str, steps: &str, scale: &str, arrival: &str) -> String {
        format!("{job}\tcmd\tdir\t--n\t1\t{steps}\t{scale}\t1\t-1\t{arrival}\n")
    }

    #[test]
    fn bad_trace_lines_name_file_line_and_column() {
        let t = table();
        let cases = [
            ("A\tcmd\t1\n".to_string(), "line 1", "3 tab-separated columns"),
            (line("B", "100", "1", "0"), "line 1, column 1", "job type `B` at scale factor 1"),
            (line("Z", "100", "1", "0"), "line 1, column 1", "throughput 0 on every GPU type"),
            (line("A", "100", "1", "-5"), "line 1, column 10", "arrival `-5`"),
            (line("A", "NaN", "1", "0"), "line 1, column 6", "total steps `NaN`"),
            (line("A", "1e300", "1", "0"), "line 1, column 6", "total steps"),
            (line("A", "100", "3", "0"), "line 1, column 1", "scale factor 3"),
            (
                line("A", "100", "1", "10") + &line("A", "100", "1", "5"),
                "line 2, column 10",
                "before the previous",
            ),
        ];
        for (k, (text, at, what)) in cases.iter().enumerate() {
            let p = write(&format!("bad{k}"), text);
            let e = read_trace(&p, &t).unwrap_err();
            assert_eq!(e.key, *at, "{e}");
            assert!(e.problem.contains(what), "{e}");
            assert_eq!(e.file, p.display().to_string());
            let _ = std::fs::remove_file(&p);
        }
        let p = write("good", &(line("A", "100", "1", "0") + &line("A", "50", "2", "7.5")));
        let jobs = read_trace(&p, &t).unwrap();
        let _ = std::fs::remove_file(&p);
        assert_eq!((jobs[1].kind, jobs[1].steps, jobs[1].arrival), (1, 50.0, 7.5));
    }

    #[test]
    fn generated_jobs_follow_gavels_distributions() {
        let t = table();
        let mut g = Generator::new(&t, 2.0, false, 7);
        let jobs: Vec<Job> = (0..4000).map(|_| g.next(&t)).collect();
        assert_eq!(jobs[0].arrival, 0.0, "the first job arrives at 0");
        // Poisson at 2 jobs per hour: mean gap 1,800 s (4,000 gaps: within 5%).
        let gap = jobs.last().unwrap().arrival / 3999.0;
        assert!((gap - 1800.0).abs() < 90.0, "{gap}");
        // Durations on a V100: 80% in [31.6 min, 16.7 h], 20% in [16.7 h, 6.9 days].
        let hours: Vec<f64> = jobs.iter().map(|j| j.steps / 10.0 / 3600.0).collect();
        let short = hours.iter().filter(|&&h| h < 1000.0 / 60.0).count() as f64 / 4000.0;
        assert!((short - 0.8).abs() < 0.03, "{short}");
        assert!(hours.iter().all(|&h| (0.52..=166.7).contains(&h)));
        // Only single-GPU types without multi_gpu, and never the type without a V100 throughput.
        assert!(jobs.iter().all(|j| j.scale == 1 && j.kind == 0));
        let mut g = Generator::new(&t, 0.0, true, 7);
        let jobs: Vec<Job> = (0..2000).map(|_| g.next(&t)).collect();
        assert!(jobs.iter().all(|j| j.arrival == 0.0), "rate 0: a static trace");
        assert!(
            jobs.iter().all(|j| j.scale == 1 || (j.scale == 2 && j.kind == 1)),
            "only A has a scale-2 row"
        );
    }
}
