//! A sweep's figures: the optimization history and one panel per parameter.

use crate::report::plots::{both, fonts, row_label, tick, value_range, DrawResult, FONT, PALETTE};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One parameter-vs-objective panel of a sweep.
pub struct ParamPanel {
    /// The config key.
    pub name: String,
    /// Log-scaled parameter (plotted as log10).
    pub log: bool,
    /// Categorical choices (x is the choice index).
    pub labels: Option<Vec<String>>,
    /// (parameter, objective) of the completed trials.
    pub points: Vec<(f64, f64)>,
}

/// A trial that stopped before its objective: (number, its last intermediate value, pruned or
/// interrupted).
pub type Stopped = (f64, f64, bool);

/// A sweep's optimization history: each completed trial's objective, the best so far (a step:
/// it changes only at a trial that beats it), and the pruned and interrupted trials at their
/// last intermediate value.
pub fn sweep_history(
    dir: &Path,
    points: &[(f64, f64)],
    stopped: &[Stopped],
    maximize: bool,
    y_desc: &str,
) -> crate::error::Result<Vec<String>> {
    fonts();
    let values = points
        .iter()
        .flat_map(|&(x, y)| [x, y])
        .chain(stopped.iter().flat_map(|&(x, y, _)| [x, y]));
    if let Some(why) = crate::report::plots::undrawable(values.collect::<Vec<f64>>()) {
        return Ok(crate::report::plots::files(&crate::report::plots::skipped(dir, "history", &why)));
    }
    Ok(both!(
        dir,
        "history",
        (960, 660),
        "Optimization history: each completed trial's objective, the best so far, and stopped trials at their last intermediate value.",
        |root| history_chart(root, points, stopped, maximize, y_desc)
    )
    .files())
}

/// The best-so-far staircase of `points` (trial order): flat until a trial beats it.
pub fn best_steps(points: &[(f64, f64)], maximize: bool) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(2 * points.len());
    let mut b = if maximize { f64::NEG_INFINITY } else { f64::INFINITY };
    for &(x, y) in points {
        let better = if maximize { y > b } else { y < b };
        if better {
            if b.is_finite() {
                out.push((x, b));
            }
            b = y;
            out.push((x, b));
        }
    }
    if let (Some(&(_, y)), Some(&(x, _))) = (out.last(), points.last()) {
        out.push((x, y));
    }
    out
}

fn history_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    points: &[(f64, f64)],
    stopped: &[Stopped],
    maximize: bool,
    y_desc: &str,
) -> DrawResult<DB> {
    use crate::report::plots::inside_key;
    let mut key = vec![
        ("completed trial (objective)".to_string(), PALETTE[0], 0),
        ("best so far".to_string(), PALETTE[3], 3),
    ];
    if stopped.iter().any(|s| s.2) {
        key.push(("pruned (last intermediate value)".to_string(), PALETTE[7], 4));
    }
    if stopped.iter().any(|s| !s.2) {
        key.push(("interrupted (last intermediate value)".to_string(), PALETTE[1], 1));
    }
    let canvas = root;
    let (lo, hi) = value_range(
        points
            .iter()
            .map(|p| p.1)
            .chain(stopped.iter().map(|s| s.1))
            .filter(|v| v.is_finite()),
    );
    let x1 = points.iter().map(|p| p.0).chain(stopped.iter().map(|s| s.0)).fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..(x1 + 0.5), lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("trial number")
        .y_desc(y_desc)
        // Trial numbers are whole: a tick between two trials is left blank (with 2 trials the
        // axis read "-0 -0 -0 0 0 1 1").
        .x_labels((x1 as usize + 2).min(12))
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 && x.round() >= 0.0 {
                format!("{}", x.round() as i64)
            } else {
                String::new()
            }
        })
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .draw()?;
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 5, PALETTE[0].filled())))?;
    chart.draw_series(LineSeries::new(best_steps(points, maximize), PALETTE[3].stroke_width(3)))?;
    for &(x, y, pruned) in stopped {
        let at = chart.backend_coord(&(x, y));
        let (k, color) = if pruned { (4, PALETTE[7]) } else { (1, PALETTE[1]) };
        crate::report::plots::marker(canvas, k, at, color)?;
    }
    let occupied: Vec<(i32, i32)> = points
        .iter()
        .map(|&(x, y)| (x, y))
        .chain(stopped.iter().map(|s| (s.0, s.1)))
        .chain(best_steps(points, maximize))
        .map(|p| chart.backend_coord(&p))
        .collect();
    inside_key(canvas, chart.plotting_area().get_pixel_range(), &key, &occupied)
}

/// One scatter per parameter: its value against the objective, for the completed trials.
pub fn sweep_params(dir: &Path, panels: &[ParamPanel], y_desc: &str) -> crate::error::Result<Vec<String>> {
    fonts();
    if let Some(why) = crate::report::plots::undrawable(
        panels
            .iter()
            .flat_map(|p| p.points.iter().flat_map(|&(x, y)| [x, y]))
            .collect::<Vec<f64>>(),
    ) {
        return Ok(crate::report::plots::files(&crate::report::plots::skipped(dir, "params", &why)));
    }
    let cols = panels.len().clamp(1, 3);
    let rows = panels.len().div_ceil(cols).max(1);
    let size = (460 * cols as u32, 400 * rows as u32);
    Ok(both!(
        dir,
        "params",
        size,
        "Each parameter's value against the objective, one panel per parameter, completed trials only.",
        |root| params_grid(root, panels, (rows, cols), y_desc)
    )
    .files())
}

fn params_grid<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panels: &[ParamPanel],
    shape: (usize, usize),
    y_desc: &str,
) -> DrawResult<DB> {
    for (area, p) in root.split_evenly(shape).iter().zip(panels) {
        param_chart(area, p, y_desc)?;
    }
    Ok(())
}

fn param_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, p: &ParamPanel, y_desc: &str) -> DrawResult<DB> {
    let xs: Vec<(f64, f64)> = p
        .points
        .iter()
        .map(|&(x, y)| (if p.log { x.max(f64::MIN_POSITIVE).log10() } else { x }, y))
        .collect();
    let (lo, hi) = value_range(xs.iter().map(|q| q.1));
    let (x0, x1) = match &p.labels {
        Some(l) => (-0.5, l.len() as f64 - 0.5),
        None => value_range(xs.iter().map(|q| q.0)),
    };
    let x_desc = if p.log { format!("log10({})", p.name) } else { p.name.clone() };
    let mut chart = ChartBuilder::on(root)
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, lo..hi)?;
    let labels = p.labels.clone();
    let fmt = move |x: &f64| match &labels {
        Some(l) => row_label(l, *x),
        None => tick(*x),
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 15))
        .x_label_formatter(&fmt);
    if let Some(l) = &p.labels {
        mesh.x_labels(l.len() * 2 + 1);
    } else {
        mesh.x_labels(6);
    }
    mesh.draw()?;
    chart.draw_series(xs.iter().map(|&q| Circle::new(q, 5, PALETTE[0].mix(0.75).filled())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::report::plots::worst::{ink, pixels};

    /// The history with 60 trials, pruned and interrupted ones, and a long objective name: on
    /// the canvas, its key above the plot.
    #[test]
    fn the_history_keeps_pruned_and_interrupted_trials_and_stays_on_the_canvas() {
        let points: Vec<(f64, f64)> = (0..60)
            .filter(|k| k % 3 != 0)
            .map(|k| (k as f64, (k as f64 * 0.7).sin() + k as f64 / 30.0))
            .collect();
        let stopped: Vec<super::Stopped> = (0..60).filter(|k| k % 3 == 0).map(|k| (k as f64, -1.0, k % 2 == 0)).collect();
        let dir = std::env::temp_dir().join(format!("mtf-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        super::sweep_history(&dir, &points, &stopped, true, "vs_baseline.sampled.iqm (a long objective path)").unwrap();
        let img = pixels(&dir.join("history.png"));
        let (w, h) = img.dimensions();
        assert_eq!(ink(&img, w - 4..w, 0..h), None);
        assert_eq!(ink(&img, 0..w, h - 4..h), None);
        // The key names all four kinds.
        let svg = std::fs::read_to_string(dir.join("history.svg")).unwrap();
        for kind in ["completed trial", "best so far", "pruned", "interrupted"] {
            assert!(svg.contains(kind), "no {kind} in the key");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_best_so_far_line_steps_and_only_moves_at_a_better_trial() {
        let points = [(0.0, 1.0), (1.0, 0.5), (2.0, 3.0), (3.0, 2.0)];
        let steps = super::best_steps(&points, true);
        assert_eq!(steps, [(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (3.0, 3.0)]);
        let steps = super::best_steps(&points, false);
        assert_eq!(steps, [(0.0, 1.0), (1.0, 1.0), (1.0, 0.5), (3.0, 0.5)]);
    }
}
