//! Line figures: one line per series over x, with 95% error bars.

use super::*;

/// One line per series over `xs`, with 95% error bars: the "vs load", "vs deadline" and
/// "vs size" figures. `log_x` spaces x logarithmically (xs must be positive). Each series has
/// its own colour and marker; the legend sits right of the plot, outside the data; a line
/// marks 0 when the values straddle it (difference plots). Returns the PNG and SVG file names.
#[allow(clippy::too_many_arguments)]
pub fn lines(
    dir: &Path,
    name: &str,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    log_x: bool,
    series: &[(String, Vec<env::eval::Stat>)],
) -> crate::error::Result<Vec<String>> {
    fonts();
    let values = xs.iter().copied().chain(series.iter().flat_map(|(_, s)| stat_values(s)));
    if let Some(why) =
        undrawable(values).or_else(|| (log_x && xs.iter().any(|&x| x <= 0.0)).then(|| "a log axis needs x above 0".to_string()))
    {
        return Ok(skipped(dir, name, &why));
    }
    let xs: Vec<f64> = if log_x {
        xs.iter().map(|x| x.log10()).collect()
    } else {
        xs.to_vec()
    };
    // The legend as wide as its widest label measures, as tall as its lines need.
    let longest = series.iter().map(|(l, _)| text_width(l, 16)).max().unwrap_or(0);
    let legend = (64 + longest).clamp(140, 1200);
    let height = 620u32.max(90 + 28 * series.len() as u32);
    Ok(both!(dir, name, (960 + legend, height), |root: &DrawingArea<_, Shift>| {
        let (plot, side) = root.split_horizontally(960);
        lines_chart(&plot, title, x_desc, y_desc, &xs, log_x, series)?;
        lines_legend(&side, series)
    }))
}

fn lines_legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, series: &[(String, Vec<env::eval::Stat>)]) -> DrawResult<DB> {
    for (k, (label, _)) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let y = 70 + 28 * k as i32;
        root.draw(&PathElement::new([(4, y), (40, y)], color.stroke_width(3)))?;
        marker(root, k, (22, y), color)?;
        root.draw(&Text::new(label.clone(), (48, y - 9), (FONT, 16)))?;
    }
    Ok(())
}

fn lines_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    log_x: bool,
    series: &[(String, Vec<env::eval::Stat>)],
) -> DrawResult<DB> {
    let lo = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|s| s.mean - s.bar()))
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|s| s.mean + s.bar()))
        .fold(f64::NEG_INFINITY, f64::max);
    // A quantity that cannot be negative (a time, a welfare) keeps its axis at or above 0.
    let (lo, hi) = match padded(lo.min(hi), hi.max(lo)) {
        (l, h) if lo >= 0.0 => (l.max(0.0), h),
        both => both,
    };
    let (x0, x1) = (
        xs.iter().copied().fold(f64::INFINITY, f64::min),
        xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    );
    let pad = ((x1 - x0) * 0.05).max(0.05);
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 24))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d((x0 - pad)..(x1 + pad), lo..hi)?;
    // Whole-number x values (agents, tokens, rounds) get whole-number ticks only.
    let integers = xs.iter().all(|x| x.fract() == 0.0);
    let x_ticks = super::curves::axis_ticks(x0 - pad, x1 + pad, integers);
    let y_ticks = super::curves::span_ticks(lo, hi);
    let mut chart_mesh = chart.configure_mesh();
    let mesh = chart_mesh.x_label_formatter(&x_ticks).y_label_formatter(&y_ticks);
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 17));
    if log_x {
        // Ticks at the data's own x values, labelled as plain numbers (drawn below).
        mesh.disable_x_mesh().x_labels(0);
    }
    mesh.draw()?;
    if log_x {
        let bottom = chart.plotting_area().get_pixel_range().1.end;
        for &x in xs {
            let (px, _) = chart.backend_coord(&(x, lo));
            root.draw(&PathElement::new([(px, bottom), (px, bottom + 6)], BLACK.stroke_width(1)))?;
            let label = tick(10f64.powf(x).round());
            let half = (label.chars().count() as i32 * 8) / 2;
            root.draw(&Text::new(label, (px - half, bottom + 10), (FONT, 15)))?;
        }
    }
    if lo < 0.0 && hi > 0.0 {
        chart.draw_series(LineSeries::new([(x0 - pad, 0.0), (x1 + pad, 0.0)], BLACK.stroke_width(1)))?;
    }
    for (k, (_, stats)) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        // Series side by side at each x (a small dodge), so their error bars do not overlap.
        let dodge = (k as f64 - (series.len() as f64 - 1.0) / 2.0) * (x1 - x0).max(1e-9) * 0.006;
        let xs: Vec<f64> = xs.iter().map(|x| x + dodge).collect();
        chart.draw_series(LineSeries::new(
            xs.iter().zip(stats).map(|(&x, s)| (x, s.mean)),
            color.stroke_width(2),
        ))?;
        let points: Vec<(f64, f64)> = xs.iter().zip(stats).map(|(&x, s)| (x, s.mean)).collect();
        for ((x, s), p) in xs.iter().zip(stats).zip(points) {
            let (px, py) = chart.backend_coord(&p);
            let (lo, hi) = (
                chart.backend_coord(&(*x, s.mean - s.bar())),
                chart.backend_coord(&(*x, s.mean + s.bar())),
            );
            error_bar(root, px, lo.1, hi.1, 5, color)?;
            marker(root, k, (px, py), color)?;
        }
    }
    Ok(())
}
