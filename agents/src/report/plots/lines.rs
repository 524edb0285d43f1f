//! Line figures: one line per series over x, with 95% error bars.

use super::*;

/// A world's [`env::worlds::Series`] (its story's figure: values without error bars) as
/// [`lines`] draws them, to `dir/NAME.png` and `.svg`.
pub fn world_series(dir: &Path, s: &env::worlds::Series) -> crate::error::Result<Vec<Figure>> {
    let lines_: Vec<(String, Vec<Stat>)> = s
        .lines
        .iter()
        .map(|(name, v)| (name.clone(), v.iter().map(|&mean| Stat { mean, ci95: f64::NAN }).collect()))
        .collect();
    lines(dir, &s.name, &s.title, &s.x, &s.y, &s.xs, false, &lines_)
}

/// One line per series over `xs`, with 95% error bars: the "vs load", "vs deadline" and
/// "vs size" figures. `log_x` spaces x logarithmically (xs must be positive). Each series has
/// its own colour and marker; the legend sits inside the plot where it covers the fewest
/// points (right of it when it is too large to), a line marks 0 when the values straddle it
/// (difference plots). `title` is the caption, with what the bars are.
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
) -> crate::error::Result<Vec<Figure>> {
    fonts();
    let values = xs.iter().copied().chain(series.iter().flat_map(|(_, s)| stat_values(s)));
    if let Some(why) =
        undrawable(values).or_else(|| (log_x && xs.iter().any(|&x| x <= 0.0)).then(|| "a log axis needs x above 0".to_string()))
    {
        return Ok(skipped(dir, name, &why));
    }
    // No series, or no points (analyze's token scale with only policy baselines): nothing to
    // draw, and an empty axis (-inf..inf) hung plotters' tick search.
    if xs.is_empty() || series.iter().all(|(_, v)| v.is_empty()) {
        return Ok(skipped(dir, name, "no series to draw"));
    }
    let xs: Vec<f64> = if log_x {
        xs.iter().map(|x| x.log10()).collect()
    } else {
        xs.to_vec()
    };
    let key: Vec<(String, RGBColor, usize)> = series
        .iter()
        .enumerate()
        .map(|(k, (label, _))| (label.clone(), PALETTE[k % PALETTE.len()], LINED + k))
        .collect();
    let caption = sentences(&[title, "Points: means; bars: 95% CI (none where a series has one value)"]);
    Ok(vec![keyed!(dir, name, caption, &key, |canvas, area, key| {
        lines_chart(canvas, area, x_desc, y_desc, &xs, log_x, series, key)
    })])
}

#[allow(clippy::too_many_arguments)]
fn lines_chart<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    root: &DrawingArea<DB, Shift>,
    x_desc: &str,
    y_desc: &str,
    xs: &[f64],
    log_x: bool,
    series: &[(String, Vec<env::eval::Stat>)],
    key: &[(String, RGBColor, usize)],
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
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d((x0 - pad)..(x1 + pad), lo..hi)?;
    // Whole-number x values (agents, tokens, rounds) get whole-number ticks only.
    let integers = xs.iter().all(|x| x.fract() == 0.0);
    // Fewer ticks on a narrow plot (a single-column figure).
    let (xn, yn) = super::curves::tick_counts(&chart);
    let x_ticks = super::curves::axis_ticks_n(x0 - pad, x1 + pad, integers, xn);
    let y_ticks = super::curves::axis_ticks_n(lo, hi, false, yn);
    let mut chart_mesh = chart.configure_mesh();
    let mesh = chart_mesh
        .x_labels(xn)
        .y_labels(yn)
        .x_label_formatter(&x_ticks)
        .y_label_formatter(&y_ticks);
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
            canvas.draw(&PathElement::new([(px, bottom), (px, bottom + 6)], BLACK.stroke_width(1)))?;
            let label = tick(10f64.powf(x).round());
            let half = (label.chars().count() as i32 * 8) / 2;
            canvas.draw(&Text::new(label, (px - half, bottom + 10), (FONT, 15)))?;
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
            error_bar(canvas, px, lo.1, hi.1, 5, color)?;
            marker(canvas, k, (px, py), color)?;
        }
    }
    let occupied: Vec<(i32, i32)> = series
        .iter()
        .flat_map(|(_, stats)| {
            xs.windows(2).zip(stats.windows(2)).flat_map(|(x, s)| {
                (0..8).map(move |q| {
                    let t = f64::from(q) / 8.0;
                    (x[0] + t * (x[1] - x[0]), s[0].mean + t * (s[1].mean - s[0].mean))
                })
            })
        })
        .chain(series.iter().flat_map(|(_, stats)| xs.iter().zip(stats).map(|(&x, s)| (x, s.mean))))
        .map(|p| chart.backend_coord(&p))
        .collect();
    inside_key(canvas, chart.plotting_area().get_pixel_range(), key, &occupied)
}
