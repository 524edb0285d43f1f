//! One value or distribution per row of a comparison: welfare, paired differences,
//! throughput per weight class, phi, envy maps.

use super::*;

/// One value per row with its 95% error bar, in the row's colour (`key`, drawn inside the plot,
/// says what the colours mean); `zero` draws a line at 0 and keeps 0 on the axis.
fn per_row<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: &[String],
    y_desc: &str,
    stats: &[(Stat, RGBColor)],
    zero: bool,
    key: &[(String, RGBColor, usize)],
) -> DrawResult<DB> {
    let canvas = root;
    let k = stats.len();
    let start = if zero { 0.0 } else { f64::INFINITY };
    let lo = stats.iter().map(|(s, _)| s.mean - s.bar()).fold(start, f64::min);
    let hi = stats.iter().map(|(s, _)| s.mean + s.bar()).fold(-start, f64::max);
    let (lo, hi) = padded(lo, hi);
    let (w, h) = root.dim_in_pixel();
    if h > w || !fits_upright(w, names) {
        return forest(canvas, names, y_desc, stats, zero, (lo, hi), key);
    }
    let axis = row_axis(root, names);
    let mut chart = ChartBuilder::on(root)
        .margin(20)
        .x_label_area_size(axis.0)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(k as f64 - 0.5), lo..hi)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&|x| row_label(&axis.2, *x))
        .x_label_style(axis.1.clone())
        .y_label_style((FONT, 16))
        .y_label_formatter(&super::curves::span_ticks(lo, hi))
        .y_desc(y_desc)
        .axis_desc_style((FONT, 18))
        .draw()?;
    if zero {
        chart.draw_series(LineSeries::new([(-0.5, 0.0), (k as f64 - 0.5, 0.0)], BLACK.stroke_width(1)))?;
    }
    for (i, (s, c)) in stats.iter().enumerate() {
        // The marker follows the colour: one shape per palette entry in use.
        let k = PALETTE.iter().position(|p| p == c).unwrap_or(0);
        let at = chart.backend_coord(&(i as f64, s.mean));
        let (lo, hi) = (
            chart.backend_coord(&(i as f64, s.mean - s.bar())),
            chart.backend_coord(&(i as f64, s.mean + s.bar())),
        );
        error_bar(canvas, at.0, lo.1, hi.1, 7, *c)?;
        marker(canvas, k, at, *c)?;
    }
    let occupied = occupied(stats, |i, v| chart.backend_coord(&(i as f64, v)));
    inside_key(canvas, chart.plotting_area().get_pixel_range(), key, &occupied)
}

/// The pixels a row's mark covers (its mean and points along its error bar), for placing a key
/// where it covers the fewest; `at(row, value)` maps to pixels.
fn occupied(stats: &[(Stat, RGBColor)], at: impl Fn(usize, f64) -> (i32, i32)) -> Vec<(i32, i32)> {
    stats
        .iter()
        .enumerate()
        .flat_map(|(i, (s, _))| {
            let bar = if s.bar().is_finite() { s.bar() } else { 0.0 };
            (0..=8).map(move |q| (i, s.mean - bar + bar * f64::from(q) / 4.0))
        })
        .map(|(i, v)| at(i, v))
        .collect()
}

/// Pixels of the y label area of a forest plot of `names`: the widest label as the font
/// measures it, plus room for the tick.
pub fn label_area(names: &[String]) -> u32 {
    names
        .iter()
        .map(|n| text_width(n, 15))
        .max()
        .unwrap_or(0)
        .saturating_add(24)
        .clamp(80, 560)
}

/// [`per_row`] with the rows down the y axis (first row on top) and their labels horizontal.
fn forest<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    names: &[String],
    x_desc: &str,
    stats: &[(Stat, RGBColor)],
    zero: bool,
    (lo, hi): (f64, f64),
    key: &[(String, RGBColor, usize)],
) -> DrawResult<DB> {
    let k = stats.len();
    let y = |i: usize| (k - 1 - i) as f64;
    let (w, h) = canvas.dim_in_pixel();
    let labels = label_area(names);
    let plot_w = w as i32 - labels as i32 - 60;
    // A key wider than the plot (a single-column figure) goes above it, not over the labels.
    let key_w = if key.is_empty() { 0 } else { key_box(key).0 };
    let above = key_w + 16 > plot_w;
    let top = if above { key_box(key).1 as u32 + 12 } else { 0 };
    let (strip, root) = canvas.split_vertically(top);
    let root = &root;
    // An axis description wider than the plot is centred on the canvas instead (kept inside it).
    let desc_w = text_width(x_desc, 17) as i32;
    let desc_fits = desc_w <= plot_w + 40;
    let mut chart = ChartBuilder::on(root)
        .margin(20)
        .margin_right(40)
        .x_label_area_size(60)
        .y_label_area_size(labels)
        .build_cartesian_2d(lo..hi, -0.5f64..(k as f64 - 0.5))?;
    let bottom_up: Vec<String> = names.iter().rev().cloned().collect();
    let ticks = super::curves::tick_count(chart.plotting_area().dim_in_pixel().0);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(k)
        .x_labels(ticks)
        .y_label_formatter(&|v| row_label(&bottom_up, *v))
        .x_label_formatter(&super::curves::axis_ticks_n(lo, hi, false, ticks))
        .label_style((FONT, 15))
        .x_desc(if desc_fits { x_desc } else { "" })
        .axis_desc_style((FONT, 17))
        .draw()?;
    if !desc_fits {
        let x = ((w as i32 - desc_w) / 2).clamp(4, (w as i32 - desc_w - 4).max(4));
        canvas.draw(&Text::new(x_desc.to_string(), (x, h as i32 - 34), (FONT, 17)))?;
    }
    if zero {
        chart.draw_series(LineSeries::new([(0.0, -0.5), (0.0, k as f64 - 0.5)], BLACK.stroke_width(1)))?;
    }
    for (i, (s, c)) in stats.iter().enumerate() {
        let shape = PALETTE.iter().position(|p| p == c).unwrap_or(0);
        let at = chart.backend_coord(&(s.mean, y(i)));
        let (l, r) = (
            chart.backend_coord(&(s.mean - s.bar(), y(i))),
            chart.backend_coord(&(s.mean + s.bar(), y(i))),
        );
        let style = c.stroke_width(2);
        if s.has_ci() {
            canvas.draw(&PathElement::new([(l.0, at.1), (r.0, at.1)], style))?;
            canvas.draw(&PathElement::new([(l.0, at.1 - 6), (l.0, at.1 + 6)], style))?;
            canvas.draw(&PathElement::new([(r.0, at.1 - 6), (r.0, at.1 + 6)], style))?;
        }
        marker(canvas, shape, at, *c)?;
    }
    if above {
        let (xs, ys) = strip.get_pixel_range();
        return inside_key(canvas, (xs.start..xs.start + key_w + 16, ys.start..ys.end + 4), key, &[]);
    }
    let occupied = occupied(stats, |i, v| chart.backend_coord(&(v, y(i))));
    inside_key(canvas, chart.plotting_area().get_pixel_range(), key, &occupied)
}

fn welfare<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String]) -> DrawResult<DB> {
    // One colour per mechanism, in the order they first appear.
    let mut mechanisms: Vec<&str> = Vec::new();
    let stats: Vec<(Stat, RGBColor)> = rows
        .iter()
        .map(|r| {
            let k = mechanisms.iter().position(|m| *m == r.mechanism).unwrap_or_else(|| {
                mechanisms.push(&r.mechanism);
                mechanisms.len() - 1
            });
            (r.summary.headline().1, PALETTE[k % PALETTE.len()])
        })
        .collect();
    let valuations = rows
        .first()
        .is_some_and(|r| r.summary.world == Some(env::config::World::Valuations));
    let key: Vec<(String, RGBColor, usize)> = if mechanisms.len() > 1 {
        mechanisms
            .iter()
            .enumerate()
            .map(|(k, m)| (format!("mechanism {m}"), PALETTE[k % PALETTE.len()], k % PALETTE.len()))
            .collect()
    } else {
        Vec::new()
    };
    per_row(
        root,
        names,
        if valuations {
            "surplus (value won minus price, per bidder per item)"
        } else {
            "welfare (jobs per round)"
        },
        &stats,
        false,
        &key,
    )
}

/// What a per-row figure's error bars are.
const CI_NOTE: &str = "Points: means over seeds; bars: 95% CI over seeds (Student's t; none with one seed).";

fn welfare_caption(rows: &[Row]) -> String {
    let valuations = rows
        .first()
        .is_some_and(|r| r.summary.world == Some(env::config::World::Valuations));
    let what = if valuations {
        "Surplus per bidder per item (mean, 95% CI over seeds)."
    } else {
        "Weighted social welfare, jobs per round (mean, 95% CI over seeds)."
    };
    format!("{what} {CI_NOTE}")
}

fn paired_caption(rows: &[Row], baseline: &str) -> String {
    let valuations = rows
        .first()
        .is_some_and(|r| r.summary.world == Some(env::config::World::Valuations));
    let what = if valuations { "Surplus per bidder-item" } else { "Welfare" };
    format!(
        "{what} minus {baseline}'s, paired over seeds. Points: mean paired difference; bars: paired 95% CI over seeds (Student's t); red where the CI excludes 0."
    )
}

const THROUGHPUT_CAPTION: &str = "Throughput per agent, by weight class, jobs per round. Bars: mean throughput per agent of the class over seeds; whiskers: 95% CI over seeds.";

const PHI_CAPTION: &str = "Sharing incentive phi = u_shared / u_exclusive per agent (all agents and seeds). Boxes: quartiles and median; whiskers: the furthest values within 1.5 IQR; red line: phi = 1, at or above which the sharing incentive holds.";

/// The significance key of a paired-difference figure.
fn significance_key() -> Vec<(String, RGBColor, usize)> {
    vec![
        ("95% CI excludes 0".to_string(), PALETTE[3], 3),
        ("95% CI includes 0".to_string(), PALETTE[7], 7),
    ]
}

/// Each row's welfare minus the baseline's, paired over seeds, with its 95% CI; a line at 0.
/// Differences whose CI excludes 0 in red, the others in grey.
fn paired<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String], baseline: &str) -> DrawResult<DB> {
    let valuations = rows
        .first()
        .is_some_and(|r| r.summary.world == Some(env::config::World::Valuations));
    let stats: Vec<(Stat, RGBColor)> = rows
        .iter()
        .map(|r| match &r.paired {
            Some(p) => (p.welfare_diff, if p.significant { PALETTE[3] } else { PALETTE[7] }),
            None => (Stat::default(), PALETTE[7]),
        })
        .collect();
    let _ = baseline;
    per_row(
        root,
        names,
        if valuations {
            "surplus difference (per bidder per item)"
        } else {
            "welfare difference (jobs per round)"
        },
        &stats,
        true,
        &significance_key(),
    )
}

fn throughput<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String]) -> DrawResult<DB> {
    let classes: Vec<f64> = rows[0].summary.throughput_by_weight.iter().map(|(w, _)| *w).collect();
    let key: Vec<(String, RGBColor, usize)> = classes
        .iter()
        .enumerate()
        .map(|(ci, w)| (format!("weight {w}"), PALETTE[ci % PALETTE.len()], 2))
        .collect();
    let canvas = root;
    let axis = row_axis(root, names);
    let k = rows.len();
    let c = classes.len().max(1);
    let hi = rows
        .iter()
        .flat_map(|r| r.summary.throughput_by_weight.iter().map(|(_, s)| s.mean + s.bar()))
        .fold(0.0, f64::max)
        // Headroom above the tallest bar for the key, which would otherwise cover bars in
        // every corner.
        * 1.32;
    let mut chart = ChartBuilder::on(root)
        .margin(20)
        .x_label_area_size(axis.0)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(k as f64 - 0.5), 0.0..hi.max(1e-6))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&|x| row_label(&axis.2, *x))
        .x_label_style(axis.1.clone())
        .y_label_style((FONT, 16))
        .y_label_formatter(&super::curves::span_ticks(0.0, hi.max(1e-6)))
        .y_desc("throughput (jobs per round per agent)")
        .axis_desc_style((FONT, 18))
        .draw()?;
    let width = 0.8 / c as f64;
    for (ci, w) in classes.iter().enumerate() {
        let color = PALETTE[ci % PALETTE.len()];
        let offset = (ci as f64 - (c as f64 - 1.0) / 2.0) * width;
        let _ = w;
        chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
            let s = r.summary.throughput_by_weight[ci].1;
            let x = i as f64 + offset;
            Rectangle::new([(x - width / 2.0, 0.0), (x + width / 2.0, s.mean)], color.filled())
        }))?;
        chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
            let s = r.summary.throughput_by_weight[ci].1;
            let x = i as f64 + offset;
            ErrorBar::new_vertical(x, s.mean - s.bar(), s.mean, s.mean + s.bar(), BLACK.stroke_width(1), 6)
        }))?;
    }
    // A bar covers everything under its top: points all the way down.
    let occupied: Vec<(i32, i32)> = (0..classes.len())
        .flat_map(|ci| {
            rows.iter()
                .enumerate()
                .map(move |(i, r)| (ci, i, r.summary.throughput_by_weight[ci].1))
        })
        .flat_map(|(ci, i, s)| {
            let x = i as f64 + (ci as f64 - (c as f64 - 1.0) / 2.0) * width;
            (0..=10).map(move |q| (x, (s.mean + s.bar()) * f64::from(q) / 10.0))
        })
        .map(|p| chart.backend_coord(&p))
        .collect();
    inside_key(canvas, chart.plotting_area().get_pixel_range(), &key, &occupied)
}

fn phi<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String]) -> DrawResult<DB> {
    let key = vec![("phi = 1 (sharing incentive holds at or above)".to_string(), RED, SOLID)];
    let canvas = root;
    let axis = row_axis(root, names);
    let k = rows.len();
    let values: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| {
            r.episodes
                .iter()
                .filter_map(|e| e.fairness.as_ref())
                .flat_map(|f| f.phi.iter().copied())
                .collect()
        })
        .collect();
    // Include the whisker fences (1.5 IQR) so no box is clipped.
    let fences: Vec<[f32; 5]> = values
        .iter()
        .filter(|v| !v.is_empty())
        .map(|v| Quartiles::new(v).values())
        .collect();
    let lo = values
        .iter()
        .flatten()
        .copied()
        .chain(fences.iter().map(|q| f64::from(q[0])))
        .fold(1.0, f64::min);
    let hi = values
        .iter()
        .flatten()
        .copied()
        .chain(fences.iter().map(|q| f64::from(q[4])))
        .fold(1.0, f64::max);
    // A distribution with every value near 1 still gets an axis a box can be read on.
    let (lo, hi) = padded(lo.min(0.95), hi.max(1.05));
    let mut chart = ChartBuilder::on(root)
        .margin(20)
        .x_label_area_size(axis.0)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5f64..(k as f64 - 0.5), (lo as f32)..(hi as f32))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(k)
        .x_label_formatter(&|x| row_label(&axis.2, *x))
        .x_label_style(axis.1.clone())
        .y_label_style((FONT, 16))
        .y_label_formatter(&super::curves::span_ticks_f32(lo as f32, hi as f32))
        .y_desc("phi = u_shared / u_exclusive")
        .axis_desc_style((FONT, 18))
        .draw()?;
    chart.draw_series(LineSeries::new([(-0.5, 1.0f32), (k as f64 - 0.5, 1.0f32)], RED.stroke_width(2)))?;
    chart.draw_series(
        values
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(i, v)| Boxplot::new_vertical(i as f64, &Quartiles::new(v)).width(24).style(PALETTE[0])),
    )?;
    // The median as a thick bar: a box whose quartiles coincide still shows where it is.
    for (i, v) in values.iter().enumerate().filter(|(_, v)| !v.is_empty()) {
        let median = Quartiles::new(v).values()[2];
        let (l, r) = (
            chart.backend_coord(&(i as f64 - 0.2, median)),
            chart.backend_coord(&(i as f64 + 0.2, median)),
        );
        canvas.draw(&PathElement::new([(l.0, l.1), (r.0, r.1)], PALETTE[0].stroke_width(4)))?;
    }
    let occupied: Vec<(i32, i32)> = fences
        .iter()
        .zip(values.iter().enumerate().filter(|(_, v)| !v.is_empty()).map(|(i, _)| i))
        .flat_map(|(q, i)| q.iter().map(move |&v| (i as f64, v)))
        .chain((0..=20).map(|x| (x as f64 * k as f64 / 20.0 - 0.5, 1.0f32)))
        .map(|p| chart.backend_coord(&p))
        .collect();
    inside_key(canvas, chart.plotting_area().get_pixel_range(), &key, &occupied)
}

/// Mean over seeds of `w_i U[i][j] / (w_j U[i][i])`: above 1, agent i envies j (eq. 3.5).
fn envy_ratio(row: &Row, weights: &[f64]) -> Vec<Vec<f64>> {
    if row.episodes.iter().filter_map(|e| e.fairness.as_ref()).any(|f| f.envy.is_empty()) {
        return Vec::new();
    }
    let n = weights.len();
    let mut acc = vec![vec![0.0; n]; n];
    let mut count = 0.0f64;
    for f in row.episodes.iter().filter_map(|e| e.fairness.as_ref()) {
        count += 1.0;
        for i in 0..n {
            for j in 0..n {
                let own = weights[j] * f.envy[i][i];
                acc[i][j] += if own > 0.0 { weights[i] * f.envy[i][j] / own } else { 1.0 };
            }
        }
    }
    acc.iter_mut().flatten().for_each(|v| *v /= count.max(1.0));
    acc
}

/// The colour of an envy ratio `v` on a scale that is continuous through 1 (white): blue below
/// (deepest at 0), red above (deepest at `vmax`, the same for every map of a comparison).
fn envy_color(v: f64, vmax: f64) -> RGBColor {
    if v <= 1.0 {
        let t = 1.0 - v.clamp(0.0, 1.0);
        RGBColor((255.0 - 200.0 * t) as u8, (255.0 - 140.0 * t) as u8, 255)
    } else {
        let t = ((v - 1.0) / (vmax - 1.0).max(1e-9)).clamp(0.0, 1.0);
        RGBColor(255, (255.0 - 220.0 * t) as u8, (255.0 - 220.0 * t) as u8)
    }
}

/// [`envy_color`], for tests.
#[cfg(test)]
pub(crate) fn envy_color_at(v: f64, vmax: f64) -> RGBColor {
    envy_color(v, vmax)
}

fn envy<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, ratio: &[Vec<f64>], vmax: f64, weights: &[f64]) -> DrawResult<DB> {
    let n = ratio.len();
    // A column's canvas: a narrower colour scale and margins, so the cells keep what is left.
    let width = root.dim_in_pixel().0 as i32;
    let (scale_w, margin) = if width < 500 { (100, 8) } else { (140, 20) };
    let (area, bar) = root.split_horizontally(width - scale_w);
    let mut chart = ChartBuilder::on(&area)
        .margin(margin)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), -0.5f64..(n as f64 - 0.5))?;
    // Cells sit around whole coordinates; label those only, with the agent's weight, every
    // k-th where a cell is narrower than a label ("19 (w4)" is about 50 pixels at size 15).
    // Along y a label needs a line's height (about 20 pixels), not its width.
    let height = root.dim_in_pixel().1 as i32;
    let every = |room: i32, need: usize| {
        let cell = room.max(1) as usize / n.max(1);
        need.div_ceil(cell.max(1)).max(1)
    };
    let (every_x, every_y) = (every(width - scale_w - 70 - 2 * margin, 56), every(height - 60 - 2 * margin, 20));
    let center = |every: usize| {
        move |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < n && (i as usize) % every == 0 {
                format!("{} (w{})", i as usize, weights.get(i as usize).copied().unwrap_or(f64::NAN))
            } else {
                String::new()
            }
        }
    };
    let (center_x, center_y) = (center(every_x), center(every_y));
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(n.min(20) + 1)
        .y_labels(n.min(20) + 1)
        .x_label_formatter(&center_x)
        .y_label_formatter(&center_y)
        .x_desc(if width < 500 {
            "j: whose allocation sequence"
        } else {
            "j: whose allocation sequence (agent, weight)"
        })
        .y_desc("i: whose arrivals (agent, weight)")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 15))
        .draw()?;
    let color = |v: f64| envy_color(v, vmax);
    chart.draw_series((0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| {
        Rectangle::new(
            [(j as f64 - 0.5, i as f64 - 0.5), (j as f64 + 0.5, i as f64 + 0.5)],
            color(ratio[i][j]).filled(),
        )
    }))?;
    // Colour scale.
    let mut scale = ChartBuilder::on(&bar)
        .margin(margin)
        .margin_top(60)
        .margin_bottom(20)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..1.0, 0.0..vmax)?;
    scale
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc("w_i U_ij / (w_j U_ii); > 1: i envies j")
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 15))
        .draw()?;
    let steps = 60;
    scale.draw_series((0..steps).map(|s| {
        let (a, b) = (vmax * s as f64 / steps as f64, vmax * (s + 1) as f64 / steps as f64);
        Rectangle::new([(0.0, a), (1.0, b)], color((a + b) / 2.0).filled())
    }))?;
    Ok(())
}

/// Every comparison figure into `dir`; returns the file names.
pub fn comparison(dir: &Path, rows: &[Row]) -> crate::error::Result<Vec<Figure>> {
    fonts();
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(why) = undrawable(rows.iter().flat_map(row_values).collect::<Vec<f64>>()) {
        return Ok(skipped(dir, "welfare", &why));
    }
    let names = labels(rows);
    let wide = wide_figure(&names);
    let mut files = Vec::new();
    let size = row_figure(&names);
    // Keys: one entry per mechanism (none with one), the paired figure's two.
    let mut mechanisms: Vec<String> = rows.iter().map(|r| r.mechanism.clone()).collect();
    mechanisms.dedup();
    if mechanisms.len() == 1 {
        mechanisms.clear();
    }
    let significance: Vec<String> = significance_key().into_iter().map(|(l, _, _)| l).collect();
    files.push(both!(
        column = column_rows(&names, &mechanisms),
        dir,
        "welfare",
        size,
        welfare_caption(rows),
        |root| welfare(root, rows, &names)
    ));
    if let Some(p) = rows.iter().find_map(|r| r.paired.as_ref()) {
        let baseline = p.baseline.clone();
        files.push(both!(
            column = column_rows(&names, &significance),
            dir,
            "welfare_paired",
            size,
            paired_caption(rows, &baseline),
            |root| paired(root, rows, &names, &baseline)
        ));
    }
    // The valuation world has no jobs: no throughput figure.
    if rows[0].summary.world != Some(env::config::World::Valuations) {
        files.push(both!(
            column = column_across(&names),
            page = page_rows(&names),
            dir,
            "throughput_by_weight",
            wide,
            THROUGHPUT_CAPTION,
            |root| throughput(root, rows, &names)
        ));
    }
    if rows.iter().any(|r| r.episodes.iter().any(|e| e.fairness.is_some())) {
        files.push(both!(
            column = column_across(&names),
            page = page_rows(&names),
            dir,
            "phi",
            wide,
            PHI_CAPTION,
            |root| phi(root, rows, &names)
        ));
        // One colour scale for every map, so maps compare.
        let ratios: Vec<Vec<Vec<f64>>> = rows.iter().map(|r| envy_ratio(r, &r.weights)).collect();
        let vmax = ratios.iter().flatten().flatten().copied().fold(1.0, f64::max);
        for (k, r) in rows.iter().enumerate() {
            // Sampled pairs (above env::metrics::ENVY_EXACT_AGENTS agents) have no matrix.
            if ratios[k].is_empty() {
                continue;
            }
            let weights = r.weights.clone();
            let ratio = &ratios[k];
            let caption = format!(
                "Envy of {}: mean over seeds of w_i U_ij / (w_j U_ii), agent i's utility from agent j's allocation sequence over its own, weights applied; above 1 (red), i envies j.",
                names[k]
            );
            // Named by the row, so a file says which policy and mechanism it shows.
            let mut slug: String = format!("{}-{}", short(&r.policy), r.mechanism)
                .chars()
                .map(|ch| if ch.is_ascii_alphanumeric() || ch == '.' { ch } else { '_' })
                .collect();
            // A per-agent spec of many agents would pass the file system's 255-byte name limit.
            if slug.len() > 80 {
                slug = format!("{}-{}", &slug[..60], format_args!("{:016x}", env::rng::fnv1a(slug.as_bytes())));
            }
            let size = (820, 680);
            files.push(both!(
                column = Some(column_size(size)),
                page = Some(page_size(size)),
                dir,
                format!("envy-{k:02}-{slug}"),
                size,
                caption,
                |root| envy(root, ratio, vmax, &weights)
            ));
        }
    }
    Ok(files)
}

/// The paired-difference figure of `rows` (each row's welfare minus the baseline's) as `name`.
pub fn paired_rows(dir: &Path, name: &str, rows: &[Row]) -> crate::error::Result<Vec<Figure>> {
    fonts();
    let Some(p) = rows.iter().find_map(|r| r.paired.as_ref()) else {
        return Ok(Vec::new());
    };
    if let Some(why) = undrawable(rows.iter().flat_map(row_values).collect::<Vec<f64>>()) {
        return Ok(skipped(dir, name, &why));
    }
    let names = labels(rows);
    let baseline = p.baseline.clone();
    let significance: Vec<String> = significance_key().into_iter().map(|(l, _, _)| l).collect();
    Ok(vec![both!(
        column = column_rows(&names, &significance),
        dir,
        name,
        row_figure(&names),
        paired_caption(rows, &baseline),
        |root| paired(root, rows, &names, &baseline)
    )])
}

/// Every number a row's figures draw: its figures' statistics, its weight classes', its
/// paired difference, its episodes' per-agent values.
fn row_values(r: &Row) -> Vec<f64> {
    let mut v: Vec<f64> = stat_values(r.summary.present().map(|(_, s)| s).collect::<Vec<_>>().iter());
    v.extend(stat_values(r.summary.throughput_by_weight.iter().map(|(_, s)| s)));
    if let Some(p) = &r.paired {
        v.extend(stat_values([&p.welfare_diff]));
    }
    for e in &r.episodes {
        v.extend(e.throughput.iter().copied());
        if let Some(f) = &e.fairness {
            v.extend(f.phi.iter().copied());
        }
    }
    v
}

/// One value per named row with its 95% error bar, in the palette colour each names (`key`:
/// what each colour means), and a line at 0, as `name`; the caption is `title` then `note`
/// (what the points and bars are).
#[allow(clippy::too_many_arguments)]
pub fn per_row_values(
    dir: &Path,
    name: &str,
    names: &[String],
    title: &str,
    y_desc: &str,
    stats: &[(Stat, usize)],
    key: &[(&str, usize)],
    note: &str,
) -> crate::error::Result<Vec<Figure>> {
    fonts();
    if let Some(why) = undrawable(stat_values(stats.iter().map(|(s, _)| s))) {
        return Ok(skipped(dir, name, &why));
    }
    let stats: Vec<(Stat, RGBColor)> = stats.iter().map(|&(s, k)| (s, PALETTE[k % PALETTE.len()])).collect();
    let key: Vec<(String, RGBColor, usize)> = key
        .iter()
        .map(|&(l, k)| (l.to_string(), PALETTE[k % PALETTE.len()], k % PALETTE.len()))
        .collect();
    Ok(vec![both!(
        column = column_rows(names, &key.iter().map(|(l, _, _)| l.clone()).collect::<Vec<_>>()),
        dir,
        name,
        row_figure(names),
        sentences(&[title, note]),
        |root| per_row(root, names, y_desc, &stats, true, &key)
    )])
}
