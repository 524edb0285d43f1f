//! Training curves: one line per series with its 95% CI as a band, each series' held-out level
//! as one marker with its error bar right of the curves (measured once, so drawn once), and
//! reference policies as dashed lines across.

use super::*;
use serde::Serialize;

/// One series: runs that differ only in their seeds.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// Its label.
    pub label: String,
    /// Its runs.
    pub runs: Vec<String>,
    /// (episodes trained at the block's end, mean and 95% CI): over runs with two or more,
    /// else over the block's episodes.
    pub points: Vec<(u64, Stat)>,
    /// The held-out figure of the greedy policy, over runs (`None` when a run has no summary or
    /// the figure is not held out).
    pub held_out: Option<Stat>,
}

/// A reference policy's held-out level.
#[derive(Debug, Clone, Serialize)]
pub struct Reference {
    /// The policy spec.
    pub policy: String,
    /// Its figure over the held-out seeds.
    pub level: Stat,
}

/// The curves figure as `name` (PNG and SVG).
pub fn curves(
    dir: &Path,
    name: &str,
    metric: &str,
    y_desc: &str,
    series: &[Series],
    refs: &[Reference],
) -> crate::error::Result<Vec<Figure>> {
    fonts();
    let values = series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .flat_map(|(x, st)| std::iter::once(*x as f64).chain(stat_values([st])))
                .chain(s.held_out.iter().flat_map(|h| stat_values([h])))
        })
        .chain(refs.iter().flat_map(|r| stat_values([&r.level])))
        .collect::<Vec<f64>>();
    if let Some(why) = undrawable(values) {
        return Ok(skipped(dir, name, &why));
    }
    let key: Vec<(String, RGBColor, usize)> = series
        .iter()
        .enumerate()
        .map(|(k, s)| (s.label.clone(), PALETTE[k % PALETTE.len()], LINED + k))
        .chain(refs.iter().enumerate().map(|(k, r)| {
            (
                format!("{}: {}", r.policy, r.level.pm(3).replace("+-", "±")),
                reference_color(k),
                DASHED + k,
            )
        }))
        .collect();
    let caption = sentences(&[
        &format!("Training curves: {metric}"),
        "Lines: block means; bands: 95% CI (over runs when a series has several, else over the block's episodes)",
        "Markers right of the curves: held out, greedy, mean and 95% CI (over runs; over the held-out seeds for analyze's one run)",
        if refs.is_empty() {
            ""
        } else {
            "Dashed: reference policies on the held-out seeds, mean ± 95% CI"
        },
    ]);
    Ok(vec![keyed!(dir, name, caption, &key, |canvas, area, key| chart(
        canvas, area, y_desc, series, refs, key
    ))])
}

/// Reference lines: greys and browns, dashed, apart from the series' colours.
fn reference_color(k: usize) -> RGBColor {
    [
        RGBColor(40, 40, 40),
        RGBColor(140, 86, 75),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
    ][k % 4]
}

/// Tick labels over `lo..hi` with the fewest decimals that print every tick plotters will draw
/// there (its own key points, at its default eleven labels) exactly, the same on every tick
/// (`0.5 1.0 1.5`, `160 170`), and never `-0`.
pub(crate) fn span_ticks(lo: f64, hi: f64) -> impl Fn(&f64) -> String {
    axis_ticks(lo, hi, false)
}

/// [`span_ticks`]; with `integers` (an axis of counts: episodes, agents, seeds) a tick between
/// whole numbers is left unlabelled and whole ones print without decimals.
pub(crate) fn axis_ticks(lo: f64, hi: f64, integers: bool) -> impl Fn(&f64) -> String {
    axis_ticks_n(lo, hi, integers, DEFAULT_TICKS)
}

/// plotters' default count of tick labels on an axis.
pub(crate) const DEFAULT_TICKS: usize = 11;

/// Tick labels on an axis `pixels` long: plotters' default eleven where they fit, fewer on a
/// narrow axis (a single-column figure), about one per 45 pixels, at least three.
pub(crate) fn tick_count(pixels: u32) -> usize {
    (pixels as usize / 45).clamp(3, DEFAULT_TICKS)
}

/// [`tick_count`] for a chart's x and y axes.
pub(crate) fn tick_counts<DB: DrawingBackend, X: Ranged, Y: Ranged>(chart: &ChartContext<'_, DB, Cartesian2d<X, Y>>) -> (usize, usize) {
    let (w, h) = chart.plotting_area().dim_in_pixel();
    (tick_count(w), tick_count(h))
}

/// [`axis_ticks`] for an axis with `labels` tick labels (as `.x_labels(labels)` asks plotters).
pub(crate) fn axis_ticks_n(lo: f64, hi: f64, integers: bool, labels: usize) -> impl Fn(&f64) -> String {
    use plotters::coord::ranged1d::Ranged;
    // plotters' tick search never ends on a non-finite range.
    let ticks = if lo.is_finite() && hi.is_finite() {
        plotters::coord::types::RangedCoordf64::from(lo.min(hi)..hi.max(lo)).key_points(labels)
    } else {
        Vec::new()
    };
    tick_labels(&ticks, integers)
}

/// [`span_ticks`] for an f32 axis (plotters places an f32 axis's ticks differently).
pub(crate) fn span_ticks_f32(lo: f32, hi: f32) -> impl Fn(&f32) -> String {
    use plotters::coord::ranged1d::Ranged;
    let ticks: Vec<f64> = if lo.is_finite() && hi.is_finite() {
        plotters::coord::types::RangedCoordf32::from(lo.min(hi)..hi.max(lo))
            .key_points(11)
            .into_iter()
            .map(f64::from)
            .collect()
    } else {
        Vec::new()
    };
    let f = tick_labels(&ticks, false);
    move |y: &f32| f(&f64::from(*y))
}

/// Labels for `ticks`: the fewest decimals that print each (as f32 or f64) within a part in
/// 1e6 of its span, never `-0`; with `integers`, whole numbers only.
fn tick_labels(ticks: &[f64], integers: bool) -> impl Fn(&f64) -> String {
    let span = ticks.iter().copied().fold(f64::NEG_INFINITY, f64::max) - ticks.iter().copied().fold(f64::INFINITY, f64::min);
    let tolerance = (span.abs() * 1e-6).max(1e-12);
    let exact = |d: usize| {
        ticks.iter().all(|t| {
            let shown: f64 = format!("{t:.d$}").parse().unwrap_or(f64::NAN);
            (shown - t).abs() <= tolerance
        })
    };
    let decimals = if integers { 0 } else { (0..=6).find(|&d| exact(d)).unwrap_or(6) };
    move |y: &f64| {
        if integers && (y - y.round()).abs() > 1e-9 {
            return String::new();
        }
        let s = format!("{y:.decimals$}");
        // A tick a rounding error below zero prints "-0" or "-0.0".
        match s.strip_prefix('-') {
            Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
            _ => s,
        }
    }
}

fn chart<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    root: &DrawingArea<DB, Shift>,
    y_desc: &str,
    series: &[Series],
    refs: &[Reference],
    key: &[(String, RGBColor, usize)],
) -> DrawResult<DB> {
    let x_max = series.iter().flat_map(|s| s.points.last().map(|p| p.0)).max().unwrap_or(1).max(1) as f64;
    // Room right of the curves for the held-out markers, one slot per series.
    let slot = x_max * 0.04;
    let right = x_max + slot * (series.len() as f64 + 1.0);
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|(_, st)| [st.mean - st.bar(), st.mean + st.bar()]))
        .chain(
            series
                .iter()
                .filter_map(|s| s.held_out)
                .flat_map(|h| [h.mean - h.bar(), h.mean + h.bar()]),
        )
        .chain(refs.iter().map(|r| r.level.mean))
        .filter(|v| v.is_finite());
    let (lo, hi) = value_range(values);
    let mut chart = ChartBuilder::on(root)
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..right, lo..hi)?;
    let (xn, yn) = tick_counts(&chart);
    let (x_ticks, y_ticks) = (axis_ticks_n(0.0, right, true, xn), axis_ticks_n(lo, hi, false, yn));
    chart
        .configure_mesh()
        .x_labels(xn)
        .y_labels(yn)
        .x_desc("episodes trained")
        .y_desc(y_desc)
        // Episodes are whole numbers: no "10.0" or "12.5".
        .x_label_formatter(&|x| if *x <= x_max + 1e-9 { x_ticks(x) } else { String::new() })
        .y_label_formatter(&y_ticks)
        .max_light_lines(1)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17))
        .draw()?;
    for (k, r) in refs.iter().enumerate() {
        let style = reference_color(k).stroke_width(2);
        let dash = (x_max / 60.0).max(1e-9);
        let mut x = 0.0;
        while x < right {
            chart.draw_series(LineSeries::new(
                [(x, r.level.mean), ((x + dash * 0.6).min(right), r.level.mean)],
                style,
            ))?;
            x += dash;
        }
    }
    for (k, s) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let band: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|(e, st)| (*e as f64, st.mean + st.bar()))
            .chain(s.points.iter().rev().map(|(e, st)| (*e as f64, st.mean - st.bar())))
            .collect();
        chart.draw_series(std::iter::once(Polygon::new(band, color.mix(0.18).filled())))?;
        chart.draw_series(LineSeries::new(
            s.points.iter().map(|(e, st)| (*e as f64, st.mean)),
            color.stroke_width(2),
        ))?;
        if let Some(h) = s.held_out {
            let x = x_max + slot * (k as f64 + 1.0);
            let at = chart.backend_coord(&(x, h.mean));
            let (l, u) = (
                chart.backend_coord(&(x, h.mean - h.bar())),
                chart.backend_coord(&(x, h.mean + h.bar())),
            );
            error_bar(canvas, at.0, l.1, u.1, 5, color)?;
            marker(canvas, k, at, color)?;
        }
    }
    let occupied: Vec<(i32, i32)> = series
        .iter()
        .flat_map(|s| {
            s.points
                .iter()
                .flat_map(|(e, st)| {
                    [
                        (*e as f64, st.mean),
                        (*e as f64, st.mean + st.bar()),
                        (*e as f64, st.mean - st.bar()),
                    ]
                })
                .chain(s.held_out.iter().map(|h| (x_max, h.mean)))
        })
        .chain(
            refs.iter()
                .flat_map(|r| (0..=20).map(move |q| (right * f64::from(q) / 20.0, r.level.mean))),
        )
        .filter(|p| p.1.is_finite())
        .map(|p| chart.backend_coord(&p))
        .collect();
    inside_key(canvas, chart.plotting_area().get_pixel_range(), key, &occupied)
}

#[cfg(test)]
mod tests {
    use super::{axis_ticks, span_ticks};

    fn labels(f: impl Fn(&f64) -> String, at: &[f64]) -> Vec<String> {
        at.iter().map(|x| f(x)).collect()
    }

    #[test]
    fn ticks_printed_minus_zero_and_needless_decimals() {
        // A span of 1.6 ticks every 0.2: one decimal everywhere, and a tick a rounding error
        // below 0 is "0.0", not "-0" (the decimals were taken from the span: "-0 -0 0 1").
        assert_eq!(
            labels(span_ticks(-0.4, 1.2), &[-0.4, -0.2, -1e-17, 0.2, 1.0]),
            ["-0.4", "-0.2", "0.0", "0.2", "1.0"]
        );
        // Ticks every 5 over 150..200 are whole: no "160.0".
        assert_eq!(labels(span_ticks(150.0, 200.0), &[160.0, 165.0]), ["160", "165"]);
        assert_eq!(labels(span_ticks(0.95, 1.05), &[1.0, 1.02]), ["1.00", "1.02"]);
        // An axis of counts labels whole numbers only.
        assert_eq!(labels(axis_ticks(0.0, 5.0, true), &[2.0, 2.5, 3.0]), ["2", "", "3"]);
        // An f32 axis ticks every 0.05 over 0.8..1.35: two decimals ("0.9 0.9 0.9" before).
        let f = super::span_ticks_f32(0.8, 1.35);
        assert_eq!([f(&0.85), f(&0.9), f(&0.95)], ["0.85", "0.90", "0.95"]);
    }
}
