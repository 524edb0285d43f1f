//! Progress of a long loop on a terminal or in a log.

use std::io::IsTerminal;
use std::time::Instant;

/// Progress of a long loop: a bar on a terminal, and without one (nohup, Slurm) a line on
/// stderr every few seconds with the count, the rate, the time left and the current figure,
/// so a log says how far a run has come. Nothing with `quiet`.
pub struct Progress {
    bar: indicatif::ProgressBar,
    lines: bool,
    total: u64,
    start: u64,
    what: &'static str,
    started: Instant,
    last: std::cell::Cell<Instant>,
}

/// Seconds between two progress lines when stderr is not a terminal.
pub const PROGRESS_EVERY_SECONDS: f64 = 5.0;

impl Progress {
    /// Progress over `total` units (`what`: "episode", "generation"), `start` done already.
    pub fn new(total: u64, start: u64, quiet: bool, what: &'static str) -> Self {
        let bar = progress_bar(total, &format!("{what} {{pos}}/{{len}} [{{bar:30}}] ETA {{eta}} {{msg}}"), quiet);
        bar.set_position(start);
        let now = Instant::now();
        Self {
            bar,
            lines: !quiet && !std::io::stderr().is_terminal(),
            total,
            start,
            what,
            started: now,
            last: std::cell::Cell::new(now),
        }
    }

    /// `done` units done; `msg` is the current figure.
    pub fn tick(&self, done: u64, msg: &str) {
        self.bar.set_position(done);
        self.bar.set_message(msg.to_string());
        let now = Instant::now();
        if self.lines && (now.duration_since(self.last.get()).as_secs_f64() >= PROGRESS_EVERY_SECONDS || done == self.total) {
            self.last.set(now);
            let secs = now.duration_since(self.started).as_secs_f64();
            let rate = (done - self.start) as f64 / secs.max(1e-9);
            let left = (self.total - done) as f64 / rate.max(1e-9);
            eprintln!("{} {done}/{} ({:.1}/s, about {left:.0} s left) {msg}", self.what, self.total, rate);
        }
    }

    /// Clear the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

pub(super) fn progress(total: u64, start: u64, quiet: bool) -> indicatif::ProgressBar {
    let bar = progress_bar(total, "episode {pos}/{len} [{bar:30}] ETA {eta} {msg}", quiet);
    bar.set_position(start);
    bar
}

/// A progress bar on stderr with `template`; hidden with `quiet` or when stderr is not a
/// terminal (logs and pipes stay clean).
pub fn progress_bar(total: u64, template: &str, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}
