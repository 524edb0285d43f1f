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
) -> crate::error::Result<Vec<String>> {
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
    let labels = legend_labels(series, refs);
    let longest = labels.iter().map(|(l, _)| text_width(l, 15)).max().unwrap_or(0);
    let legend = (60 + longest).clamp(300, 1200);
    // Tall enough for every legend line and the note under them.
    let height = (620u32).max(60 + 26 * labels.len() as u32 + 10 + 5 * 18 + 20);
    Ok(both!(dir, name, (960 + legend, height), |root: &DrawingArea<_, Shift>| {
        let (plot, side) = root.split_horizontally(960);
        chart(&plot, metric, y_desc, series, refs)?;
        draw_legend(&side, &labels)
    }))
}

/// (label, style index): series first (solid, k), then references (dashed, 100 + k).
fn legend_labels(series: &[Series], refs: &[Reference]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = series.iter().enumerate().map(|(k, s)| (s.label.clone(), k)).collect();
    out.extend(
        refs.iter()
            .enumerate()
            .map(|(k, r)| (format!("{}: {}", r.policy, r.level.pm(3).replace("+-", "±")), 100 + k)),
    );
    out
}

fn draw_legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, labels: &[(String, usize)]) -> DrawResult<DB> {
    let mut y = 60;
    for (label, style) in labels {
        if *style >= 100 {
            let color = reference_color(style - 100);
            for x in (4..40).step_by(8) {
                root.draw(&PathElement::new([(x, y), (x + 4, y)], color.stroke_width(2)))?;
            }
        } else {
            let color = PALETTE[style % PALETTE.len()];
            root.draw(&PathElement::new([(4, y), (40, y)], color.stroke_width(3)))?;
            marker(root, *style, (22, y), color)?;
        }
        root.draw(&Text::new(label.clone(), (48, y - 9), (FONT, 15)))?;
        y += 26;
    }
    y += 10;
    for line in [
        "Lines: block means; bands: 95% CI",
        "(over runs when a series has several,",
        "else over the block's episodes).",
        "Marker at the right: held out, greedy:",
        "mean and 95% CI (over runs; over the",
        "held-out seeds for analyze's one run).",
    ] {
        root.draw(&Text::new(line, (8, y), (FONT, 13)))?;
        y += 18;
    }
    Ok(())
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
/// there (its own key points, at the default ten labels) exactly, the same on every tick
/// (`0.5 1.0 1.5`, `160 170`), and never `-0`.
pub(crate) fn span_ticks(lo: f64, hi: f64) -> impl Fn(&f64) -> String {
    axis_ticks(lo, hi, false)
}

/// [`span_ticks`]; with `integers` (an axis of counts: episodes, agents, seeds) a tick between
/// whole numbers is left unlabelled and whole ones print without decimals.
pub(crate) fn axis_ticks(lo: f64, hi: f64, integers: bool) -> impl Fn(&f64) -> String {
    use plotters::coord::ranged1d::Ranged;
    let ticks = plotters::coord::types::RangedCoordf64::from(lo.min(hi)..hi.max(lo)).key_points(10);
    let exact = |d: usize| {
        ticks.iter().all(|t| {
            let shown: f64 = format!("{t:.d$}").parse().unwrap_or(f64::NAN);
            (shown - t).abs() <= 1e-9 * t.abs().max(1e-300) || (shown - t).abs() < 1e-12
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
    root: &DrawingArea<DB, Shift>,
    metric: &str,
    y_desc: &str,
    series: &[Series],
    refs: &[Reference],
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
        .caption(format!("Training curves: {metric}"), (FONT, 24))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..right, lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("episodes trained")
        .y_desc(y_desc)
        // Episodes are whole numbers: no "10.0" or "12.5".
        .x_label_formatter(&|x| {
            if *x <= x_max + 1e-9 {
                axis_ticks(0.0, right, true)(x)
            } else {
                String::new()
            }
        })
        .y_label_formatter(&span_ticks(lo, hi))
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
            error_bar(root, at.0, l.1, u.1, 5, color)?;
            marker(root, k, at, color)?;
        }
    }
    Ok(())
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
    }
}
