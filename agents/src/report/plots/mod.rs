//! Figures, as PNG and SVG (plotters), with labelled axes, units and legends: one value or
//! distribution per row of a comparison ([`rows`]), lines over x ([`lines`]); the helpers
//! here (fonts, palette, the PNG-and-SVG macro, axes) serve them and the sweep's figures.
//! Text uses DejaVu Sans embedded in the binary, so figures look the same on any machine.

use crate::error::failed;
use crate::report::table::Row;
use env::eval::Stat;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

mod curves;
mod lines;
mod rows;
#[cfg(test)]
pub(crate) mod worst;

pub use curves::{curves, Reference, Series};
pub use lines::{lines, world_series};
pub use rows::{comparison, paired_rows, per_row_values};

pub(crate) const FONT: &str = "sans-serif";
static REGISTER: Once = Once::new();

pub(crate) fn fonts() {
    REGISTER.call_once(|| {
        // The bytes are a valid TrueType font shipped with the crate.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, include_bytes!("../../../assets/DejaVuSans.ttf"));
    });
}

/// Matplotlib's tab10: ten distinguishable series (the thesis figures draw seven).
pub(crate) const PALETTE: [RGBColor; 10] = [
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

pub(crate) type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// One figure written as `stem.png`, `stem.svg` and `stem.pdf`, and its caption: what it shows
/// and what its marks are. The caption is not drawn (a paper sets its own); it goes to the
/// markdown beside the figure ([`markdown_list`]) and into the SVG's `<title>`. Beside them,
/// `stem.column.svg` and `stem.column.pdf` for the figures whose layout holds in a column (the
/// forest plots of one value per row, learning curves, the lines of analyze): the figure laid
/// out again for one column of a two-column paper ([`COLUMN_WIDTH`] pixels wide, a
/// [`COLUMN_INCHES`]-inch PDF page, its labels 8.5 pt there). The bars, boxes and heat
/// maps with a column or row per policy need a page's width: theirs is `stem.page.svg` and
/// `stem.page.pdf`, laid out [`PAGE_WIDTH`] pixels wide on a [`PAGE_INCHES`]-inch page (a
/// two-column paper's text width), labels 8.5 pt there too; a handful of rows (and an envy
/// map) also hold in a column.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The file name without extension.
    pub stem: String,
    /// What the figure shows, in sentences.
    pub caption: String,
    /// Whether the single-column version was drawn.
    pub column: bool,
    /// Whether the page-width version was drawn.
    pub page: bool,
}

impl Figure {
    /// Its file names: PNG, SVG and PDF, then the single-column and page-width SVGs and PDFs.
    pub fn files(&self) -> Vec<String> {
        let mut files: Vec<String> = ["png", "svg", "pdf"].iter().map(|e| format!("{}.{e}", self.stem)).collect();
        for (drawn, version) in [(self.column, "column"), (self.page, "page")] {
            if drawn {
                files.extend(["svg", "pdf"].iter().map(|e| format!("{}.{version}.{e}", self.stem)));
            }
        }
        files
    }
}

/// Width in pixels of a figure's single-column version: its labels are 8.5 pt when the figure
/// is [`COLUMN_INCHES`] wide. plotters sets a size-15 label in a 12.1-pixel em (its SVG's
/// `font-size`, what a PDF sets), so 12.1 / 340 x 3.3 in x 72 pt/in = 8.5 pt.
pub const COLUMN_WIDTH: u32 = 340;

/// The em, in pixels, of the figures' size-15 labels (see [`COLUMN_WIDTH`]).
pub const LABEL_EM: f64 = 15.0 * 0.806_451_6;

/// A two-column paper's column width, in inches: the single-column PDF's page width.
pub const COLUMN_INCHES: f32 = 3.3;

/// Width in pixels of a figure's page-width version: labels 8.5 pt on a [`PAGE_INCHES`]-inch
/// page, as [`COLUMN_WIDTH`] on a column (12.1 / 712 x 7 in x 72 pt/in = 8.5 pt).
pub const PAGE_WIDTH: u32 = 712;

/// A two-column paper's text width, in inches: the page-width PDF's page width.
pub const PAGE_INCHES: f32 = 7.0;

/// The page-width canvas of a figure with the rows `names` along x (bars, boxes):
/// [`PAGE_WIDTH`] wide, as deep as the row labels need there (rotated when they do not
/// fit upright). None when there are more rows than a page holds apart (one per 24 pixels of
/// plot: the bars of a weight class would be thinner than a line).
pub(crate) fn page_rows(names: &[String]) -> Option<(u32, u32)> {
    across(PAGE_WIDTH, 440, names)
}

/// The single-column canvas of a figure with the rows `names` along x: as [`page_rows`] on
/// [`COLUMN_WIDTH`] pixels (a handful of rows; none past what a column holds apart).
pub(crate) fn column_across(names: &[String]) -> Option<(u32, u32)> {
    across(COLUMN_WIDTH, 300, names)
}

/// A canvas `width` pixels wide for rows along x: a plot `plot_h` high plus the depth of the
/// row labels (upright or rotated); None below 24 pixels of plot per row.
fn across(width: u32, plot_h: u32, names: &[String]) -> Option<(u32, u32)> {
    if names.len() as u32 * 24 > width.saturating_sub(120) {
        return None;
    }
    Some((width, plot_h + label_depth(width, names)))
}

/// The page-width canvas of a figure drawn at `size` as a whole (a heat map): [`PAGE_WIDTH`]
/// wide, its aspect kept.
pub(crate) fn page_size(size: (u32, u32)) -> (u32, u32) {
    let h = f64::from(size.1) * f64::from(PAGE_WIDTH) / f64::from(size.0.max(1));
    (PAGE_WIDTH, h.round() as u32)
}

/// The single-column canvas of a forest plot of the rows `names` with a key of `key`'s labels:
/// the rows closer than at full size (still apart by more than a label's height), and room
/// above them for a key too wide to sit in the plot (as the forest plot places it). None when
/// the labels leave the plot less than [`MIN_COLUMN_PLOT`] pixels (name rows shorter with
/// `--label`).
pub(crate) fn column_rows(names: &[String], key: &[String]) -> Option<(u32, u32)> {
    let plot_w = COLUMN_WIDTH as i32 - rows::label_area(names) as i32 - 60;
    if plot_w < MIN_COLUMN_PLOT {
        return None;
    }
    let key_w = key.iter().map(|l| text_width(l, 15)).max().unwrap_or(0) as i32 + 56;
    let strip = if !key.is_empty() && key_w > plot_w {
        24 * key.len() as u32 + 20
    } else {
        0
    };
    Some((COLUMN_WIDTH, 130 + 26 * names.len() as u32 + strip))
}

/// The narrowest plot (pixels) a single-column forest plot is drawn with.
pub(crate) const MIN_COLUMN_PLOT: i32 = 110;

/// The single-column canvas for a figure drawn at `size`: [`COLUMN_WIDTH`] wide; as tall as
/// the figure's own aspect gives, but shrunk only by the square root of the width's factor
/// (rows keep room for their labels), at least 280 and at most the original height.
pub(crate) fn column_size(size: (u32, u32)) -> (u32, u32) {
    let shrink = f64::from(COLUMN_WIDTH) / f64::from(size.0.max(1));
    let h = (f64::from(size.1) * shrink.min(1.0).sqrt()).round() as u32;
    (COLUMN_WIDTH, h.clamp(280.min(size.1), size.1))
}

/// The file names of `figures`, in order.
pub fn files(figures: &[Figure]) -> Vec<String> {
    figures.iter().flat_map(Figure::files).collect()
}

/// A markdown list of `figures`: each PNG linked, its SVG and PDF named (and the single-column
/// PDF), then its caption.
pub fn markdown_list(figures: &[Figure]) -> String {
    figures
        .iter()
        .map(|f| {
            let column = if f.column {
                format!(", {}.column.pdf", f.stem)
            } else {
                String::new()
            };
            let page = if f.page { format!(", {}.page.pdf", f.stem) } else { String::new() };
            format!("- [{0}.png]({0}.png) ({0}.svg, {0}.pdf{column}{page}): {1}\n", f.stem, f.caption)
        })
        .collect()
}

/// Draw one figure as `name.png`, `name.svg` and `name.pdf` (the SVG's vectors) in `dir`, with
/// `caption` ([`Figure`]): each drawn in memory and written
/// atomically (plotters' own file writer flushes on drop, so a full disk left a truncated PNG
/// and no error).
macro_rules! both {
    // A figure whose layout holds in a column: its single-column version is drawn too.
    // Its canvas `column_size` of the full one, or the one given (`column = Option<SIZE>`:
    // none when the figure cannot hold in a column).
    (column, $dir:expr, $name:expr, $size:expr, $caption:expr, $draw:expr) => {
        $crate::report::plots::both!(@draw Some($crate::report::plots::column_size($size)), None, $dir, $name, $size, $caption, $draw)
    };
    (column = $small:expr, $dir:expr, $name:expr, $size:expr, $caption:expr, $draw:expr) => {
        $crate::report::plots::both!(@draw $small, None, $dir, $name, $size, $caption, $draw)
    };
    // A figure that needs a page's width (bars, boxes, heat maps with a column per policy):
    // its page-width version on the canvas given (none when it cannot hold on a page).
    (page = $wide:expr, $dir:expr, $name:expr, $size:expr, $caption:expr, $draw:expr) => {
        $crate::report::plots::both!(@draw None, $wide, $dir, $name, $size, $caption, $draw)
    };
    (column = $small:expr, page = $wide:expr, $dir:expr, $name:expr, $size:expr, $caption:expr, $draw:expr) => {
        $crate::report::plots::both!(@draw $small, $wide, $dir, $name, $size, $caption, $draw)
    };
    ($dir:expr, $name:expr, $size:expr, $caption:expr, $draw:expr) => {
        $crate::report::plots::both!(@draw None, None, $dir, $name, $size, $caption, $draw)
    };
    // One vector version (`stem.VERSION.svg` and `.pdf`) on `canvas`, its PDF `inches` wide;
    // whether it was drawn.
    (@vector $version:expr, $canvas:expr, $inches:expr, $dir:expr, $stem:expr, $caption:expr, $draw:expr) => {{
        let canvas: Option<(u32, u32)> = $canvas;
        if let Some(canvas) = canvas {
            let mut text = String::new();
            let drawn = {
                let root = SVGBackend::with_string(&mut text, canvas).into_drawing_area();
                root.fill(&WHITE)
                    .map_err(|e| e.to_string())
                    .and_then(|_| $draw(&root).map_err(|e| e.to_string()))
                    .and_then(|_| root.present().map_err(|e| e.to_string()))
            };
            match drawn {
                Ok(()) => {
                    let dpi = canvas.0 as f32 / $inches;
                    $crate::report::plots::write_vectors(&$dir, &format!("{}.{}", $stem, $version), &text, &$caption, Some(dpi))?;
                    true
                }
                Err(e) => {
                    let svg = $dir.join(format!("{}.{}.svg", $stem, $version));
                    eprintln!("mtf: warning: {}: {} figure not drawn: {}", svg.display(), $version, e.replace('\n', " "));
                    false
                }
            }
        } else {
            false
        }
    }};
    (@draw $column:expr, $page:expr, $dir:expr, $name:expr, $size:expr, $caption:expr, $draw:expr) => {{
        let size: (u32, u32) = $size;
        let stem: String = $name.to_string();
        let caption: String = $caption.to_string();
        let png = $dir.join(format!("{stem}.png"));
        {
            let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
                root.fill(&WHITE).map_err(|e| $crate::report::plots::figure_error(&png, e))?;
                $draw(&root).map_err(|e| $crate::report::plots::figure_error(&png, e))?;
                root.present().map_err(|e| $crate::report::plots::figure_error(&png, e))?;
            }
            $crate::report::plots::write_png(&png, &pixels, size)?;
        }
        let svg = $dir.join(format!("{stem}.svg"));
        {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
                root.fill(&WHITE).map_err(|e| $crate::report::plots::figure_error(&svg, e))?;
                $draw(&root).map_err(|e| $crate::report::plots::figure_error(&svg, e))?;
                root.present().map_err(|e| $crate::report::plots::figure_error(&svg, e))?;
            }
            $crate::report::plots::write_vectors(&$dir, &stem, &text, &caption, None)?;
        }
        // The single-column and page-width versions: the same drawing on a narrower canvas (the
        // figures lay themselves out from the canvas they are given). One that cannot be drawn
        // there is left out in a warning; the full-size figure stands.
        let column = $crate::report::plots::both!(@vector "column", $column, $crate::report::plots::COLUMN_INCHES, $dir, stem, caption, $draw);
        let page = $crate::report::plots::both!(@vector "page", $page, $crate::report::plots::PAGE_INCHES, $dir, stem, caption, $draw);
        $crate::report::plots::Figure { stem, caption, column, page }
    }};
}
pub(crate) use both;

/// The figure `name` of a chart with a key (line figures, learning curves): the key inside the
/// plot where [`fits_inside`] says it fits, with a single-column version; else in a column right
/// of the plot, full size only. `$chart` is called as `$chart(canvas, plot_area, key)`, with an
/// empty key when the key is drawn beside it.
macro_rules! keyed {
    ($dir:expr, $name:expr, $caption:expr, $key:expr, $chart:expr) => {{
        let key: &[(String, RGBColor, usize)] = $key;
        let plot = (960u32, 620u32);
        if $crate::report::plots::fits_inside($crate::report::plots::key_box(key), plot) {
            $crate::report::plots::both!(column, $dir, $name, plot, $caption, |root: &DrawingArea<_, Shift>| {
                $chart(root, root, key)
            })
        } else {
            let (w, h) = $crate::report::plots::key_box(key);
            let size = (plot.0 + w as u32 + 24, plot.1.max(h as u32 + 60));
            $crate::report::plots::both!($dir, $name, size, $caption, |root: &DrawingArea<_, Shift>| {
                let (area, side) = root.split_horizontally(plot.0);
                $chart(root, &area, &[])?;
                let right = side.get_pixel_range();
                $crate::report::plots::inside_key(root, (right.0.start..right.0.end + 8, 40..40 + h + 16), key, &[])
            })
        }
    }};
}
pub(crate) use keyed;

/// The largest magnitude a plotted value may have: an axis padded around it, its span and its
/// tick steps stay finite (plotters' tick search loops forever on an infinite or overflowing
/// range).
pub(crate) const MAX_PLOTTED: f64 = 1e100;

/// Why these values cannot be drawn, if so: one is NaN, infinite, or past [`MAX_PLOTTED`].
/// Every public figure function asks this of all it would draw before drawing anything.
pub(crate) fn undrawable(values: impl IntoIterator<Item = f64>) -> Option<String> {
    values.into_iter().find_map(|v| {
        if v.is_nan() {
            Some("a value to plot is NaN".to_string())
        } else if !v.is_finite() {
            Some(format!("a value to plot is {v}"))
        } else if v.abs() > MAX_PLOTTED {
            Some(format!("a value to plot, {v:e}, is past what an axis can hold ({MAX_PLOTTED:e})"))
        } else {
            None
        }
    })
}

/// Every number a list of statistics puts on a figure: means and error-bar ends.
pub(crate) fn stat_values<'a>(stats: impl IntoIterator<Item = &'a Stat>) -> Vec<f64> {
    stats
        .into_iter()
        .flat_map(|s| [s.mean, s.mean - s.bar(), s.mean + s.bar()])
        .collect()
}

/// A figure left out, said in one line on stderr (the tables and JSON beside it are unaffected).
pub(crate) fn skipped(dir: &Path, name: &str, why: &str) -> Vec<Figure> {
    eprintln!(
        "mtf: warning: {}: figure not drawn: {why}",
        dir.join(format!("{name}.png")).display()
    );
    Vec::new()
}

/// A figure that could not be drawn or written: one line naming the file (plotters' errors
/// print as nested debug structures).
pub(crate) fn figure_error(path: &Path, e: impl std::fmt::Display) -> crate::error::Error {
    failed(format!(
        "{}: could not write the figure: {}",
        path.display(),
        e.to_string().replace('\n', " ")
    ))
}

/// Encode RGB `pixels` of `size` as a PNG and write it atomically.
pub(crate) fn write_png(path: &Path, pixels: &[u8], size: (u32, u32)) -> crate::error::Result<()> {
    use image::ImageEncoder;
    let mut bytes = Vec::new();
    image::codecs::png::PngEncoder::new(&mut bytes)
        .write_image(pixels, size.0, size.1, image::ColorType::Rgb8)
        .map_err(|e| figure_error(path, e))?;
    crate::run::write_atomic(path, &bytes)
}

/// Write an SVG atomically, keeping the leading spaces that push rotated labels below the axis
/// ([`row_axis`]): SVG collapses whitespace unless told otherwise.
/// The PDF of a figure's SVG: vectors, its text set in the figures' embedded font (so a paper's
/// figure reads the same as the PNG, on any machine), one page the SVG's size at `dpi` pixels
/// per inch (default 72: a pixel is a point).
pub(crate) fn svg_to_pdf(svg: &str, dpi: Option<f32>) -> Result<Vec<u8>, String> {
    use svg2pdf::usvg;
    static FONTS: std::sync::OnceLock<std::sync::Arc<usvg::fontdb::Database>> = std::sync::OnceLock::new();
    let fontdb = FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(include_bytes!("../../../assets/DejaVuSans.ttf").to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        std::sync::Arc::new(db)
    });
    let options = usvg::Options {
        font_family: "DejaVu Sans".into(),
        fontdb: fontdb.clone(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let page = svg2pdf::PageOptions {
        dpi: dpi.unwrap_or(svg2pdf::PageOptions::default().dpi),
    };
    svg2pdf::to_pdf(&tree, svg2pdf::ConversionOptions::default(), page).map_err(|e| e.to_string())
}

/// Write `stem.svg` (the drawn `svg` titled with `caption`) and `stem.pdf` from it at `dpi`
/// ([`svg_to_pdf`]) in `dir`, each atomically.
pub(crate) fn write_vectors(dir: &Path, stem: &str, svg: &str, caption: &str, dpi: Option<f32>) -> crate::error::Result<()> {
    // Spaces kept in the PDF too: rotated row labels are pushed below the axis by leading
    // spaces, which the PDF's renderer collapsed (the labels sat on the plot).
    let text = preserved(&titled(svg, caption));
    crate::run::write_atomic(&dir.join(format!("{stem}.svg")), text.as_bytes())?;
    let pdf = dir.join(format!("{stem}.pdf"));
    let bytes = svg_to_pdf(&text, dpi).map_err(|e| figure_error(&pdf, e))?;
    crate::run::write_atomic(&pdf, &bytes)
}

/// `svg` with `caption` as its `<title>` (the figure's accessible name; escaped).
pub(crate) fn titled(svg: &str, caption: &str) -> String {
    let escaped = caption.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    match svg.find("<svg ").and_then(|at| svg[at..].find('>').map(|end| at + end + 1)) {
        Some(after) => format!("{}\n<title>{escaped}</title>{}", &svg[..after], &svg[after..]),
        None => svg.to_string(),
    }
}

/// `svg` with its whitespace kept as drawn (`xml:space="preserve"`).
fn preserved(svg: &str) -> String {
    svg.replacen("<svg ", "<svg xml:space=\"preserve\" ", 1)
}

/// A policy spec for a label: `run:`, `sampled:run:` and `agent:` paths shortened to their last
/// component.
pub(crate) fn short(policy: &str) -> String {
    if let Some(run) = policy.strip_prefix("sampled:") {
        return format!("sampled:{}", short(run));
    }
    match policy.split_once(':') {
        Some((kind @ ("run" | "agent"), path)) => {
            format!("{kind}:{}", Path::new(path).file_name().and_then(|f| f.to_str()).unwrap_or(path))
        }
        _ => policy.to_string(),
    }
}

/// Row labels: the policy, the mechanism, or both, whichever varies.
pub(crate) fn labels(rows: &[Row]) -> Vec<String> {
    let one_mech = rows.iter().all(|r| r.mechanism == rows[0].mechanism);
    let one_policy = rows.iter().all(|r| r.policy == rows[0].policy);
    rows.iter()
        .map(|r| {
            let label = match (one_mech, one_policy) {
                (true, _) => short(&r.policy),
                (false, true) => r.mechanism.clone(),
                _ => format!("{} / {}", short(&r.policy), r.mechanism),
            };
            if r.near_uniform() {
                label + " (near-uniform)"
            } else {
                label
            }
        })
        .collect()
}

/// Label whole coordinates with the row names (a numeric axis from -0.5 to k - 0.5).
pub(crate) fn row_label(names: &[String], x: f64) -> String {
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
    let longest = f64::from(names.iter().map(|n| text_width(n, 15)).max().unwrap_or(0));
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
            rotated_depth(longest),
            TextStyle::from(font).transform(FontTransform::Rotate90),
            pushed,
        )
    }
}

/// Whether every row label fits upright in its slot at `width` pixels.
fn fits_upright(width: u32, names: &[String]) -> bool {
    let slot = f64::from(width.saturating_sub(120)) / names.len().max(1) as f64;
    let longest = f64::from(names.iter().map(|n| text_width(n, 15)).max().unwrap_or(0));
    longest + 8.0 <= slot
}

/// The size of a one-value-per-row figure ([`per_row`]): wide with the rows along x when their
/// labels fit upright, else tall with the rows down the y axis and the labels horizontal
/// beside them (a forest plot: no rotated text).
pub(crate) fn row_figure(names: &[String]) -> (u32, u32) {
    let wide = (220 + 70 * names.len() as u32).clamp(800, 2400);
    if fits_upright(wide, names) {
        (wide, 620)
    } else {
        (720 + rows::label_area(names), 170 + 34 * names.len() as u32)
    }
}

/// The size of a figure with the rows along x (bars, boxes): as deep as its row labels need
/// below a plot of fixed height, so rotated labels never run into the note under it.
pub(crate) fn wide_figure(names: &[String]) -> (u32, u32) {
    let wide = (220 + 70 * names.len() as u32).clamp(800, 2400);
    (wide, 560 + label_depth(wide, names))
}

/// The depth below the axis of the row labels `names` on a canvas `width` pixels wide: upright
/// where they fit, else rotated.
fn label_depth(width: u32, names: &[String]) -> u32 {
    if fits_upright(width, names) {
        70
    } else {
        rotated_depth(f64::from(names.iter().map(|n| text_width(n, 15)).max().unwrap_or(0)))
    }
}

/// The depth below the axis of rotated labels whose widest is `longest` pixels: the padding
/// that pushes them below the axis is whole spaces, so it overshoots by up to a tenth.
fn rotated_depth(longest: f64) -> u32 {
    (longest * 1.12 + 40.0).clamp(70.0, 700.0) as u32
}

/// Width in pixels of `text` in the figures' font at `size` (plotters' own metrics).
pub(crate) fn text_width(text: &str, size: u32) -> u32 {
    fonts();
    (FONT, size)
        .into_font()
        .box_size(text)
        .map_or(text.chars().count() as u32 * size / 2, |(w, _)| w)
}

/// A key (what each colour or shape means) drawn inside the plot area `plot` (canvas pixels),
/// in a white box in the corner where it covers the fewest of `occupied` (the data's pixels),
/// as matplotlib's `loc="best"` places a legend.
pub(crate) fn inside_key<DB: DrawingBackend>(
    canvas: &DrawingArea<DB, Shift>,
    plot: (std::ops::Range<i32>, std::ops::Range<i32>),
    key: &[(String, RGBColor, usize)],
    occupied: &[(i32, i32)],
) -> DrawResult<DB> {
    if key.is_empty() {
        return Ok(());
    }
    let (w, h) = key_box(key);
    let (xs, ys) = plot;
    let inset = 8;
    let corners = [
        (xs.end - inset - w, ys.start + inset),
        (xs.start + inset, ys.start + inset),
        (xs.end - inset - w, ys.end - inset - h),
        (xs.start + inset, ys.end - inset - h),
    ];
    let covered = |(x, y): (i32, i32)| {
        occupied
            .iter()
            .filter(|(px, py)| (x - 6..x + w + 6).contains(px) && (y - 6..y + h + 6).contains(py))
            .count()
    };
    let at = corners.iter().copied().min_by_key(|&c| covered(c)).expect("four corners");
    canvas.draw(&Rectangle::new([at, (at.0 + w, at.1 + h)], WHITE.mix(0.92).filled()))?;
    canvas.draw(&Rectangle::new([at, (at.0 + w, at.1 + h)], BLACK.mix(0.35).stroke_width(1)))?;
    for (row, (label, color, shape)) in key.iter().enumerate() {
        let y = at.1 + 16 + 24 * row as i32;
        key_glyph(canvas, *shape, (at.0 + 14, y), *color)?;
        canvas.draw(&Text::new(label.clone(), (at.0 + 30, y - 8), (FONT, 15)))?;
    }
    Ok(())
}

/// Key glyph styles beyond marker shapes (`0..DASHED`): a dashed line (`DASHED + k`) and a
/// solid line through marker shape k (`LINED + k`).
pub(crate) const DASHED: usize = 100;
/// See [`DASHED`].
pub(crate) const LINED: usize = 200;
/// A solid line alone (a reference level drawn as a line).
pub(crate) const SOLID: usize = 300;

/// A key entry's glyph at `at` (see [`DASHED`]).
fn key_glyph<DB: DrawingBackend>(canvas: &DrawingArea<DB, Shift>, style: usize, at: (i32, i32), color: RGBColor) -> DrawResult<DB> {
    match style {
        s if s >= SOLID => canvas.draw(&PathElement::new([(at.0 - 10, at.1), (at.0 + 10, at.1)], color.stroke_width(2))),
        s if s >= LINED => {
            canvas.draw(&PathElement::new([(at.0 - 10, at.1), (at.0 + 10, at.1)], color.stroke_width(2)))?;
            marker(canvas, s - LINED, at, color)
        }
        s if s >= DASHED => {
            for x in (at.0 - 10..at.0 + 10).step_by(7) {
                canvas.draw(&PathElement::new([(x, at.1), (x + 4, at.1)], color.stroke_width(2)))?;
            }
            Ok(())
        }
        s => marker(canvas, s, at, color),
    }
}

/// Whether a key of `key_size` pixels goes inside a plot of `plot` pixels without hiding it:
/// at most half its width and 60% of its height; a larger one sits right of the plot.
pub(crate) fn fits_inside(key_size: (i32, i32), plot: (u32, u32)) -> bool {
    key_size.0 <= plot.0 as i32 / 2 && key_size.1 <= plot.1 as i32 * 3 / 5
}

/// Sentences joined: each trimmed, ending in one period, empty ones left out.
pub(crate) fn sentences(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| p.trim().trim_end_matches('.'))
        .filter(|p| !p.is_empty())
        .map(|p| format!("{p}."))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Pixels (width, height) of a key's box: one entry per line.
pub(crate) fn key_box(key: &[(String, RGBColor, usize)]) -> (i32, i32) {
    let longest = key.iter().map(|(l, _, _)| text_width(l, 15)).max().unwrap_or(0) as i32;
    (longest + 40, 8 + 24 * key.len() as i32)
}

pub(crate) fn padded(lo: f64, hi: f64) -> (f64, f64) {
    // Every value equal (a degenerate distribution, identical rows): an axis of readable width
    // around them, not one of 1e-6 with six-decimal ticks.
    if (hi - lo).abs() <= 1e-9 * hi.abs().max(1.0) {
        let half = (hi.abs() * 0.05).max(0.5);
        return (lo - half, hi + half);
    }
    let span = (hi - lo).max(hi.abs() * 0.02).max(1e-6);
    (lo - 0.08 * span, hi + 0.08 * span)
}

/// A tick label with as many decimals as its magnitude needs.
pub(crate) fn tick(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 || a == 0.0 => format!("{x:.0}"),
        a if a >= 1.0 => format!("{x:.2}"),
        _ => format!("{x:.3}"),
    }
}

pub(crate) fn value_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if lo.is_finite() {
        padded(lo, hi)
    } else {
        (0.0, 1.0)
    }
}

/// Draw series k's marker at pixel `at`: circle, triangle, square, diamond, cross, then again.
pub(crate) fn marker<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, k: usize, at: (i32, i32), color: RGBColor) -> DrawResult<DB> {
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
pub(crate) fn error_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x: i32,
    lo: i32,
    hi: i32,
    half: i32,
    color: RGBColor,
) -> DrawResult<DB> {
    let style = color.stroke_width(2);
    area.draw(&PathElement::new([(x, lo), (x, hi)], style))?;
    area.draw(&PathElement::new([(x - half, lo), (x + half, lo)], style))?;
    area.draw(&PathElement::new([(x - half, hi), (x + half, hi)], style))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing<DB: DrawingBackend>(_: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        Ok(())
    }

    fn draw(dir: &Path) -> crate::error::Result<Vec<String>> {
        Ok(both!(dir, "f", (64, 48), "A <test> & more.", nothing).files())
    }

    #[test]
    fn a_non_finite_value_hung_the_plot_library() {
        // plotters' tick search looped forever on an infinite range (a market job of 1e-320
        // work units has an infinite cost per unit); every figure function now refuses such
        // values up front, in one warning line, and still draws tiny finite ones.
        let dir = std::env::temp_dir().join(format!("mtf-plot-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stat = |m: f64| Stat { mean: m, ci95: 0.1 };
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e308] {
            let series = vec![("a".to_string(), vec![stat(1.0), stat(bad)])];
            assert!(
                lines(&dir, "l", "", "x", "y", &[1.0, 2.0], false, &series).unwrap().is_empty(),
                "{bad}"
            );
            let rows = [(stat(bad), 0)];
            assert!(per_row_values(&dir, "p", &["r".into()], "", "y", &rows, &[], "")
                .unwrap()
                .is_empty());
            let s = [Series {
                label: "s".into(),
                runs: vec![],
                points: vec![(1, stat(bad))],
                held_out: None,
            }];
            assert!(curves(&dir, "c", "m", "y", &s, &[]).unwrap().is_empty());
            assert!(crate::sweep::plots::sweep_history(&dir, &[(0.0, bad)], &[], true, "y")
                .unwrap()
                .is_empty());
        }
        assert!(undrawable([1.0, f64::NAN]).unwrap().contains("NaN"));
        assert!(undrawable([1e308]).unwrap().contains("past what an axis can hold"));
        // No series at all (analyze's token scale with only policy baselines) hung plotters'
        // tick search on an axis from -inf to inf for 90 minutes: now one warning, no figure.
        assert!(lines(&dir, "none", "", "x", "y", &[1.0, 2.0], true, &[]).unwrap().is_empty());
        let empty = vec![("a".to_string(), Vec::new())];
        assert!(lines(&dir, "empty", "", "x", "y", &[], false, &empty).unwrap().is_empty());
        // Tiny but finite: drawn.
        let series = vec![("a".to_string(), vec![stat(1e-320), stat(2e-320)])];
        assert_eq!(lines(&dir, "tiny", "", "x", "y", &[1.0, 2.0], false, &series).unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn a_figure_that_could_not_be_written_gave_a_raw_backend_error_or_none() {
        let dir = std::env::temp_dir().join(format!("mtf-figure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // Written whole: a PNG of the size asked for, and an SVG.
        assert_eq!(draw(&dir).unwrap(), ["f.png", "f.svg", "f.pdf"]);
        let png = std::fs::read(dir.join("f.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 64);
        let svg = std::fs::read_to_string(dir.join("f.svg")).unwrap();
        assert!(svg.contains("xml:space=\"preserve\""));
        // The caption is the SVG's title, escaped, and not drawn.
        assert!(svg.contains("<title>A &lt;test&gt; &amp; more.</title>"), "{svg}");
        assert!(std::fs::read(dir.join("f.pdf")).unwrap().starts_with(b"%PDF-"));
        // On /dev/full plotters reported success (its writer flushed on drop); now the figure
        // is refused by name.
        std::fs::remove_file(dir.join("f.png")).unwrap();
        std::os::unix::fs::symlink("/dev/full", dir.join("f.png")).unwrap();
        let msg = draw(&dir).unwrap_err().to_string();
        assert!(
            msg.contains("f.png") && !msg.contains("BackendError") && !msg.contains('\n'),
            "{msg}"
        );
        // Into a "directory" that is a file: the figure is named, one line.
        let file = dir.join("plain");
        std::fs::write(&file, "x").unwrap();
        let msg = draw(&file).unwrap_err().to_string();
        assert!(
            msg.contains("plain/f.png") && !msg.contains("BackendError") && !msg.contains('\n'),
            "{msg}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
