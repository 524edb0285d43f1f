//! Figures for comparisons, as PNG and SVG (plotters), with labelled axes, units and legends.
//! Text uses DejaVu Sans embedded in the binary, so figures look the same on any machine.

use crate::error::failed;
use crate::table::Row;
use env::eval::Stat;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

const FONT: &str = "sans-serif";
static REGISTER: Once = Once::new();

fn fonts() {
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font shipped with the crate.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, include_bytes!("../assets/DejaVuSans.ttf"));
    });
}

/// Matplotlib's tab10: ten distinguishable series (the thesis figures draw seven).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Draw one figure as `name.png` and `name.svg` in `dir`.
macro_rules! both {
    ($dir:expr, $name:expr, $size:expr, $draw:expr) => {{
        let png = $dir.join(format!("{}.png", $name));
        {
            let root = BitMapBackend::new(&png, $size).into_drawing_area();
            root.fill(&WHITE).map_err(|e| failed(format!("{e:?}")))?;
            $draw(&root).map_err(|e| failed(format!("{}: {e:?}", png.display())))?;
            root.present().map_err(|e| failed(format!("{}: {e:?}", png.display())))?;
        }
        let svg = $dir.join(format!("{}.svg", $name));
        {
            let root = SVGBackend::new(&svg, $size).into_drawing_area();
            root.fill(&WHITE).map_err(|e| failed(format!("{e:?}")))?;
            $draw(&root).map_err(|e| failed(format!("{}: {e:?}", svg.display())))?;
            root.present().map_err(|e| failed(format!("{}: {e:?}", svg.display())))?;
        }
        preserve_spaces(&svg)?;
        vec![format!("{}.png", $name), format!("{}.svg", $name)]
    }};
}

/// Keep the leading spaces that push rotated labels below the axis ([`row_axis`]): SVG
/// collapses whitespace unless told otherwise.
fn preserve_spaces(svg: &Path) -> crate::Result<()> {
    let text = crate::run_dir::read_text(svg, crate::run_dir::MAX_TEXT)?;
    crate::run_dir::write_atomic(svg, text.replacen("<svg ", "<svg xml:space=\"preserve\" ", 1).as_bytes())
}

/// A policy spec for a label: `run:` and `agent:` paths shortened to their last component.
fn short(policy: &str) -> String {
    match policy.split_once(':') {
        Some((kind @ ("run" | "agent"), path)) => {
            format!("{kind}:{}", Path::new(path).file_name().and_then(|f| f.to_str()).unwrap_or(path))
        }
        _ => policy.to_string(),
    }
}

/// Row labels: the policy, the mechanism, or both, whichever varies.
fn labels(rows: &[Row]) -> Vec<String> {
    let one_mech = rows.iter().all(|r| r.mechanism == rows[0].mechanism);
    let one_policy = rows.iter().all(|r| r.policy == rows[0].policy);
    rows.iter()
        .map(|r| match (one_mech, one_policy) {
            (true, _) => short(&r.policy),
            (false, true) => r.mechanism.clone(),
            _ => format!("{} / {}", short(&r.policy), r.mechanism),
        })
        .collect()
}

/// Label whole coordinates with the row names (a numeric axis from -0.5 to k - 0.5).
fn row_label(names: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
        names[i as usize].clone()
    } else {
        String::new()
    }
}

/// The row axis: labels upright when each fits its slot, else rotated (reading downward), with the
/// label area as deep as the longest label (so labels never run into each other).
fn row_axis<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, names: &[String]) -> (u32, TextStyle<'static>, Vec<String>) {
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * CHAR_PX;
    let font = (FONT, 15).into_font();
    if fits_upright(root.dim_in_pixel().0, names) {
        (70, TextStyle::from(font), names.to_vec())
    } else {
        // plotters centres a rotated label on its tick; leading spaces (about two per glyph)
        // push the visible text below the axis.
        let pushed = names
            .iter()
            .map(|n| format!("{}{n}", " ".repeat(2 * n.chars().count() + 2)))
            .collect();
        (
            (longest + 24.0).clamp(70.0, 320.0) as u32,
            TextStyle::from(font).transform(FontTransform::Rotate90),
            pushed,
        )
    }
}

const CHAR_PX: f64 = 7.5;

/// Whether every row label fits upright in its slot at `width` pixels.
fn fits_upright(width: u32, names: &[String]) -> bool {
    let slot = f64::from(width.saturating_sub(120)) / names.len().max(1) as f64;
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * CHAR_PX;
    longest + 8.0 <= slot
}

/// The size of a one-value-per-row figure ([`per_row`]): wide with the rows along x when their
/// labels fit upright, else tall with the rows down the y axis and the labels horizontal
/// beside them (a forest plot: no rotated text).
fn row_figure(names: &[String]) -> (u32, u32) {
    let wide = (220 + 70 * names.len() as u32).clamp(800, 2400);
    if fits_upright(wide, names) {
        (wide, 620)
    } else {
        let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * CHAR_PX;
        (760 + longest.min(460.0) as u32, 170 + 34 * names.len() as u32)
    }
}

fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let span = (hi - lo).max(hi.abs() * 0.02).max(1e-6);
    (lo - 0.08 * span, hi + 0.08 * span)
}

/// One value per row with its 95% error bar, in the row's colour; `zero` draws a line at 0 and
/// keeps 0 on the axis.
fn per_row<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: &[String],
    caption: &str,
    y_desc: &str,
    stats: &[(Stat, RGBColor)],
    zero: bool,
) -> DrawResult<DB> {
    let k = stats.len();
    let start = if zero { 0.0 } else { f64::INFINITY };
    let lo = stats.iter().map(|(s, _)| s.mean - s.ci95).fold(start, f64::min);
    let hi = stats.iter().map(|(s, _)| s.mean + s.ci95).fold(-start, f64::max);
    let (lo, hi) = padded(lo, hi);
    let (w, h) = root.dim_in_pixel();
    if h > w || !fits_upright(w, names) {
        return forest(root, names, caption, y_desc, stats, zero, (lo, hi));
    }
    let axis = row_axis(root, names);
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 24))
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
            chart.backend_coord(&(i as f64, s.mean - s.ci95)),
            chart.backend_coord(&(i as f64, s.mean + s.ci95)),
        );
        error_bar(root, at.0, lo.1, hi.1, 7, *c)?;
        marker(root, k, at, *c)?;
    }
    Ok(())
}

/// [`per_row`] with the rows down the y axis (first row on top) and their labels horizontal.
fn forest<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: &[String],
    caption: &str,
    x_desc: &str,
    stats: &[(Stat, RGBColor)],
    zero: bool,
    (lo, hi): (f64, f64),
) -> DrawResult<DB> {
    let k = stats.len();
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as f64 * CHAR_PX;
    let y = |i: usize| (k - 1 - i) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 22))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size((longest + 24.0).clamp(80.0, 480.0) as u32)
        .build_cartesian_2d(lo..hi, -0.5f64..(k as f64 - 0.5))?;
    let bottom_up: Vec<String> = names.iter().rev().cloned().collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(k)
        .y_label_formatter(&|v| row_label(&bottom_up, *v))
        .label_style((FONT, 15))
        .x_desc(x_desc)
        .axis_desc_style((FONT, 17))
        .draw()?;
    if zero {
        chart.draw_series(LineSeries::new([(0.0, -0.5), (0.0, k as f64 - 0.5)], BLACK.stroke_width(1)))?;
    }
    for (i, (s, c)) in stats.iter().enumerate() {
        let shape = PALETTE.iter().position(|p| p == c).unwrap_or(0);
        let at = chart.backend_coord(&(s.mean, y(i)));
        let (l, r) = (
            chart.backend_coord(&(s.mean - s.ci95, y(i))),
            chart.backend_coord(&(s.mean + s.ci95, y(i))),
        );
        let style = c.stroke_width(2);
        root.draw(&PathElement::new([(l.0, at.1), (r.0, at.1)], style))?;
        root.draw(&PathElement::new([(l.0, at.1 - 6), (l.0, at.1 + 6)], style))?;
        root.draw(&PathElement::new([(r.0, at.1 - 6), (r.0, at.1 + 6)], style))?;
        marker(root, shape, at, *c)?;
    }
    Ok(())
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
            (r.summary.welfare, PALETTE[k % PALETTE.len()])
        })
        .collect();
    per_row(
        root,
        names,
        "Weighted social welfare (mean, 95% CI over seeds)",
        "welfare (jobs per round)",
        &stats,
        false,
    )
}

/// Each row's welfare minus the baseline's, paired over seeds, with its 95% CI; a line at 0.
/// Differences whose CI excludes 0 in red, the others in grey.
fn paired<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String], baseline: &str) -> DrawResult<DB> {
    let stats: Vec<(Stat, RGBColor)> = rows
        .iter()
        .map(|r| match &r.paired {
            Some(p) => (p.welfare_diff, if p.significant { PALETTE[3] } else { PALETTE[7] }),
            None => (Stat::default(), PALETTE[7]),
        })
        .collect();
    per_row(
        root,
        names,
        &format!("Welfare minus {baseline}, paired over seeds (95% CI)"),
        "welfare difference (jobs per round)",
        &stats,
        true,
    )
}

fn throughput<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String]) -> DrawResult<DB> {
    let axis = row_axis(root, names);
    let k = rows.len();
    let classes: Vec<f64> = rows[0].summary.throughput_by_weight.iter().map(|(w, _)| *w).collect();
    let c = classes.len().max(1);
    let hi = rows
        .iter()
        .flat_map(|r| r.summary.throughput_by_weight.iter().map(|(_, s)| s.mean + s.ci95))
        .fold(0.0, f64::max)
        // Head room for the legend (upper right, one line per class) above the tallest bar.
        * (1.15 + 0.09 * c as f64);
    let mut chart = ChartBuilder::on(root)
        .caption("Throughput per agent, by weight class (mean, 95% CI)", (FONT, 26))
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
        .y_desc("throughput (jobs per round per agent)")
        .axis_desc_style((FONT, 18))
        .draw()?;
    let width = 0.8 / c as f64;
    for (ci, w) in classes.iter().enumerate() {
        let color = PALETTE[ci % PALETTE.len()];
        let offset = (ci as f64 - (c as f64 - 1.0) / 2.0) * width;
        chart
            .draw_series(rows.iter().enumerate().map(|(i, r)| {
                let s = r.summary.throughput_by_weight[ci].1;
                let x = i as f64 + offset;
                Rectangle::new([(x - width / 2.0, 0.0), (x + width / 2.0, s.mean)], color.filled())
            }))?
            .label(format!("weight {w}"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
            let s = r.summary.throughput_by_weight[ci].1;
            let x = i as f64 + offset;
            ErrorBar::new_vertical(x, s.mean - s.ci95, s.mean, s.mean + s.ci95, BLACK.stroke_width(1), 6)
        }))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    Ok(())
}

fn phi<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, rows: &[Row], names: &[String]) -> DrawResult<DB> {
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
    let (lo, hi) = padded(lo, hi);
    let mut chart = ChartBuilder::on(root)
        .caption("Sharing incentive phi per agent (all agents and seeds)", (FONT, 26))
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
        .y_desc("phi = u_shared / u_exclusive  (SI holds at >= 1)")
        .axis_desc_style((FONT, 18))
        .draw()?;
    chart
        .draw_series(LineSeries::new([(-0.5, 1.0f32), (k as f64 - 0.5, 1.0f32)], RED.stroke_width(2)))?
        .label("phi = 1")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
    chart.draw_series(
        values
            .iter()
            .enumerate()
            .filter(|(_, v)| !v.is_empty())
            .map(|(i, v)| Boxplot::new_vertical(i as f64, &Quartiles::new(v)).width(24).style(PALETTE[0])),
    )?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()?;
    Ok(())
}

/// Mean over seeds of `w_i U[i][j] / (w_j U[i][i])`: above 1, agent i envies j (eq. 3.5).
fn envy_ratio(row: &Row, weights: &[f64]) -> Vec<Vec<f64>> {
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

fn envy<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, ratio: &[Vec<f64>], title: &str) -> DrawResult<DB> {
    let n = ratio.len();
    let vmax = ratio.iter().flatten().copied().fold(1.0, f64::max);
    let (area, bar) = root.split_horizontally(root.dim_in_pixel().0 as i32 - 140);
    let mut chart = ChartBuilder::on(&area)
        .caption(title, (FONT, 22))
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), -0.5f64..(n as f64 - 0.5))?;
    // Cells sit around whole coordinates; label those only.
    let center = |v: &f64| {
        if (v - v.round()).abs() < 1e-6 && *v >= 0.0 {
            format!("{}", v.round() as usize)
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(n.min(20) + 1)
        .y_labels(n.min(20) + 1)
        .x_label_formatter(&center)
        .y_label_formatter(&center)
        .x_desc("j: whose allocation sequence")
        .y_desc("i: whose arrivals")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .draw()?;
    let color = |v: f64| {
        // White at 0, blue up to 1 (no envy), red above 1 (envy), deepest at vmax.
        if v <= 1.0 {
            let t = v.clamp(0.0, 1.0);
            RGBColor((255.0 - 180.0 * t) as u8, (255.0 - 120.0 * t) as u8, 255)
        } else {
            let t = ((v - 1.0) / (vmax - 1.0).max(1e-9)).clamp(0.0, 1.0);
            RGBColor(255, (200.0 - 200.0 * t) as u8, (200.0 - 200.0 * t) as u8)
        }
    };
    chart.draw_series((0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| {
        Rectangle::new(
            [(j as f64 - 0.5, i as f64 - 0.5), (j as f64 + 0.5, i as f64 + 0.5)],
            color(ratio[i][j]).filled(),
        )
    }))?;
    // Colour scale.
    let mut scale = ChartBuilder::on(&bar)
        .margin(20)
        .margin_top(60)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..1.0, 0.0..vmax)?;
    scale
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_desc("w_i U_ij / (w_j U_ii)")
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    let steps = 60;
    scale.draw_series((0..steps).map(|s| {
        let (a, b) = (vmax * s as f64 / steps as f64, vmax * (s + 1) as f64 / steps as f64);
        Rectangle::new([(0.0, a), (1.0, b)], color((a + b) / 2.0).filled())
    }))?;
    Ok(())
}

/// Every comparison figure into `dir`; returns the file names.
pub fn comparison(dir: &Path, rows: &[Row]) -> crate::Result<Vec<String>> {
    fonts();
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let names = labels(rows);
    let wide = (220 + 70 * rows.len() as u32).clamp(800, 2400);
    let mut files = Vec::new();
    let size = row_figure(&names);
    files.extend(both!(dir, "welfare", size, |root| welfare(root, rows, &names)));
    if let Some(p) = rows.iter().find_map(|r| r.paired.as_ref()) {
        let baseline = p.baseline.clone();
        files.extend(both!(dir, "welfare_paired", size, |root| paired(root, rows, &names, &baseline)));
    }
    files.extend(both!(dir, "throughput_by_weight", (wide, 620), |root| throughput(
        root, rows, &names
    )));
    if rows.iter().any(|r| r.episodes.iter().any(|e| e.fairness.is_some())) {
        files.extend(both!(dir, "phi", (wide, 620), |root| phi(root, rows, &names)));
        for (k, r) in rows.iter().enumerate() {
            let weights = r.weights.clone();
            let ratio = envy_ratio(r, &weights);
            let title = format!("Envy: {}", names[k]);
            // Named by the row, so a file says which policy and mechanism it shows.
            let slug: String = format!("{}-{}", short(&r.policy), r.mechanism)
                .chars()
                .map(|ch| if ch.is_ascii_alphanumeric() || ch == '.' { ch } else { '_' })
                .collect();
            files.extend(both!(dir, format!("envy-{k:02}-{slug}"), (820, 680), |root| envy(
                root, &ratio, &title
            )));
        }
    }
    Ok(files)
}

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
) -> crate::Result<Vec<String>> {
    fonts();
    let xs: Vec<f64> = if log_x {
        xs.iter().map(|x| x.log10()).collect()
    } else {
        xs.to_vec()
    };
    let longest = series.iter().map(|(l, _)| l.chars().count()).max().unwrap_or(0) as u32;
    let legend = (60 + 8 * longest).clamp(140, 360);
    Ok(both!(dir, name, (960 + legend, 620), |root: &DrawingArea<_, Shift>| {
        let (plot, side) = root.split_horizontally(960);
        lines_chart(&plot, title, x_desc, y_desc, &xs, log_x, series)?;
        lines_legend(&side, series)
    }))
}

/// Draw series k's marker at pixel `at`: circle, triangle, square, diamond, cross, then again.
fn marker<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, k: usize, at: (i32, i32), color: RGBColor) -> DrawResult<DB> {
    let style = color.filled();
    match k % 5 {
        0 => area.draw(&(EmptyElement::at(at) + Circle::new((0, 0), 5, style))),
        1 => area.draw(&(EmptyElement::at(at) + TriangleMarker::new((0, 0), 7, style))),
        2 => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-5, -5), (5, 5)], style))),
        3 => area.draw(&(EmptyElement::at(at) + Polygon::new(vec![(0, -7), (6, 0), (0, 7), (-6, 0)], style))),
        _ => area.draw(&(EmptyElement::at(at) + Cross::new((0, 0), 6, color.stroke_width(3)))),
    }
}

/// A vertical 95% error bar at pixel column `x` from `lo` to `hi`, with caps `half` wide (drawn
/// by hand: plotters' ErrorBar also draws a circle that would hide the series' marker).
fn error_bar<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, x: i32, lo: i32, hi: i32, half: i32, color: RGBColor) -> DrawResult<DB> {
    let style = color.stroke_width(2);
    area.draw(&PathElement::new([(x, lo), (x, hi)], style))?;
    area.draw(&PathElement::new([(x - half, lo), (x + half, lo)], style))?;
    area.draw(&PathElement::new([(x - half, hi), (x + half, hi)], style))
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
        .flat_map(|(_, v)| v.iter().map(|s| s.mean - s.ci95))
        .fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .flat_map(|(_, v)| v.iter().map(|s| s.mean + s.ci95))
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
    let mut mesh = chart.configure_mesh();
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
                chart.backend_coord(&(*x, s.mean - s.ci95)),
                chart.backend_coord(&(*x, s.mean + s.ci95)),
            );
            error_bar(root, px, lo.1, hi.1, 5, color)?;
            marker(root, k, (px, py), color)?;
        }
    }
    Ok(())
}

/// The analysis figures (`mtf analyze`): every held-out row's welfare minus the best fixed
/// level's (`headroom`), the best responses per weight class (`best_responses`), and MTF minus
/// each baseline over the token total (`token_scale`). Returns the file names.
pub fn analysis(dir: &Path, a: &crate::analyze::Analyzed) -> crate::Result<Vec<String>> {
    fonts();
    let mut files = Vec::new();
    let rows = &a.rows;
    if let Some(p) = rows.iter().find_map(|r| r.paired.as_ref()) {
        let names = labels(rows);
        let baseline = p.baseline.clone();
        files.extend(both!(dir, "headroom", row_figure(&names), |root| paired(
            root, rows, &names, &baseline
        )));
    }
    if !a.best_responses.is_empty() {
        let mut names = Vec::new();
        let mut stats = Vec::new();
        for b in &a.best_responses {
            names.push(format!("w{} own throughput", b.weight));
            stats.push((b.own_throughput_gain, PALETTE[0]));
            names.push(format!("w{} welfare", b.weight));
            stats.push((b.welfare_change, PALETTE[3]));
        }
        files.extend(both!(dir, "best_responses", row_figure(&names), |root| per_row(
            root,
            &names,
            "One agent per weight class deviates alone: its throughput (blue), welfare (red)",
            "deviation minus common level (jobs per round)",
            &stats,
            true,
        )));
    }
    let trained = rows.iter().find(|r| r.policy.starts_with("run:"));
    if let (Some(run), Some(trained), Some(best)) = (a.run.as_ref().filter(|r| !r.learning.is_empty()), trained, rows.first()) {
        let xs: Vec<f64> = run.learning.iter().map(|(e, _)| *e as f64).collect();
        // Held-out references as flat lines, their CI in the label (one bar per x would hide
        // the curve).
        let flat = |name: &str, s: Stat| {
            (
                format!("{name}: {:.2} ± {:.2}", s.mean, s.ci95),
                vec![Stat { mean: s.mean, ci95: 0.0 }; xs.len()],
            )
        };
        let per = run.learning.first().map_or(1, |(e, _)| *e);
        let series = vec![
            (
                format!("training, means of {per} episodes"),
                run.learning.iter().map(|(_, s)| *s).collect(),
            ),
            flat(&format!("{} held out", best.policy), best.summary.welfare),
            flat("trained, greedy, held out", trained.summary.welfare),
        ];
        files.extend(lines(
            dir,
            "learning",
            "Learning curve (training: sampled actions on training seeds; held out: greedy)",
            "episodes trained",
            "welfare (jobs per round)",
            &xs,
            false,
            &series,
        )?);
    }
    if let Some(first) = a.token_scale.first() {
        let xs: Vec<f64> = a.token_scale.iter().map(|p| p.total_tokens).collect();
        let series: Vec<(String, Vec<Stat>)> = (0..first.diffs.len())
            .map(|k| {
                (
                    format!("MTF − {}", first.diffs[k].0),
                    a.token_scale.iter().map(|p| p.diffs[k].1).collect(),
                )
            })
            .collect();
        files.extend(lines(
            dir,
            "token_scale",
            "MTF minus each baseline vs the token total (paired, 95% CI)",
            "total tokens T (log scale)",
            "welfare difference (jobs per round)",
            &xs,
            true,
            &series,
        )?);
    }
    Ok(files)
}

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

/// A tick label with as many decimals as its magnitude needs.
fn tick(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 || a == 0.0 => format!("{x:.0}"),
        a if a >= 1.0 => format!("{x:.2}"),
        _ => format!("{x:.3}"),
    }
}

fn value_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if lo.is_finite() {
        padded(lo, hi)
    } else {
        (0.0, 1.0)
    }
}

/// A sweep's optimization history: each completed trial's objective and the best so far.
pub fn sweep_history(dir: &Path, points: &[(f64, f64)], maximize: bool, y_desc: &str) -> crate::Result<Vec<String>> {
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
pub fn sweep_params(dir: &Path, panels: &[ParamPanel], y_desc: &str) -> crate::Result<Vec<String>> {
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
