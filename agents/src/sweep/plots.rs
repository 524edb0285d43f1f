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

/// A sweep's optimization history: each completed trial's objective and the best so far.
pub fn sweep_history(dir: &Path, points: &[(f64, f64)], maximize: bool, y_desc: &str) -> crate::error::Result<Vec<String>> {
    fonts();
    Ok(both!(dir, "history", (960, 620), |root| history_chart(
        root, points, maximize, y_desc
    )))
}

fn history_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, points: &[(f64, f64)], maximize: bool, y_desc: &str) -> DrawResult<DB> {
    let (lo, hi) = value_range(points.iter().map(|p| p.1));
    let x1 = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption("Optimization history", (FONT, 24))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..(x1 + 0.5), lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("trial number")
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .draw()?;
    let mut best = Vec::with_capacity(points.len());
    let mut b = if maximize { f64::NEG_INFINITY } else { f64::INFINITY };
    for &(x, y) in points {
        b = if maximize { b.max(y) } else { b.min(y) };
        best.push((x, b));
    }
    chart
        .draw_series(points.iter().map(|&p| Circle::new(p, 5, PALETTE[0].filled())))?
        .label("completed trial")
        .legend(|(x, y)| Circle::new((x + 9, y), 5, PALETTE[0].filled()));
    chart
        .draw_series(LineSeries::new(best, PALETTE[3].stroke_width(3)))?
        .label("best so far")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], PALETTE[3].stroke_width(3)));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 15))
        .position(if maximize {
            SeriesLabelPosition::LowerRight
        } else {
            SeriesLabelPosition::UpperRight
        })
        .draw()?;
    Ok(())
}

/// One scatter per parameter: its value against the objective, for the completed trials.
pub fn sweep_params(dir: &Path, panels: &[ParamPanel], y_desc: &str) -> crate::error::Result<Vec<String>> {
    fonts();
    let cols = panels.len().clamp(1, 3);
    let rows = panels.len().div_ceil(cols).max(1);
    let size = (460 * cols as u32, 400 * rows as u32);
    Ok(both!(dir, "params", size, |root| params_grid(root, panels, (rows, cols), y_desc)))
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
