//! Every figure kind rendered in its worst case — 30 rows, labels 50 characters long, a
//! degenerate distribution (every phi 1, every difference 0), several mechanisms — and checked
//! on its pixels: nothing runs off the canvas, and the key strip above the plot and the note
//! strip below it hold only the key and the note (no label, bar or box runs into them).

use super::*;
use crate::learners::fixed::Levels;
use env::eval::Summary;

/// The rows of the worst case: 29 per-agent policies (long labels) and a level, under MTF, and
/// stride's one row, at a load where every policy is served alike (every phi 1).
fn worst_rows() -> Vec<Row> {
    let mut policies = vec!["fixed:0.0".to_string()];
    for i in 0..29 {
        let levels: Vec<String> = (0..8)
            .map(|k| format!("{:.1}", (((i / 10) * k + i + k) % 10) as f64 / 10.0))
            .collect();
        policies.push(format!("fixed:[{}]", levels.join(",")));
    }
    rows_of(&policies)
}

/// `policies` (fixed levels) under MTF, then stride's one row, on the quickstart at load 0.05.
fn rows_of(policies: &[String]) -> Vec<Row> {
    let config = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    let seeds = env::eval::episode_seeds(1, 2);
    let mut rows = Vec::new();
    for (mechanism, policies) in [("mtf", policies), ("stride", &policies[..1])] {
        let set = [
            "env.agents.*.load=0.05".to_string(),
            "env.rounds=30".to_string(),
            format!("mechanism.name=\"{mechanism}\""),
        ];
        let sc = env::config::ScenarioFile::load(&config, &set).unwrap();
        for p in policies {
            let levels = Levels::parse(p.strip_prefix("fixed:").unwrap()).unwrap();
            let policy = levels.policy(&sc).unwrap();
            let episodes = env::eval::evaluate(&sc, &seeds, policy.as_ref(), true, 2);
            rows.push(Row {
                policy: if mechanism == "stride" { "any".into() } else { levels.spec() },
                spec: None,
                mechanism: mechanism.into(),
                summary: Summary::of(&sc, &episodes),
                weights: sc.agents.iter().map(|a| a.weight).collect(),
                episodes,
                paired: None,
            });
        }
    }
    rows
}

pub(crate) fn pixels(path: &Path) -> image::RgbImage {
    image::open(path).unwrap().to_rgb8()
}

fn white(p: &image::Rgb<u8>) -> bool {
    p.0.iter().all(|&c| c >= 250)
}

/// The first non-white pixel in the rectangle, if any.
pub(crate) fn ink(img: &image::RgbImage, x: std::ops::Range<u32>, y: std::ops::Range<u32>) -> Option<(u32, u32)> {
    y.clone()
        .flat_map(|y| x.clone().map(move |x| (x, y)))
        .find(|&(x, y)| !white(img.get_pixel(x, y)))
}

fn files_of(dir: &Path, rows: &[Row]) -> Vec<Figure> {
    std::fs::create_dir_all(dir).unwrap();
    comparison(dir, rows).unwrap()
}

#[test]
fn single_column_and_page_width_figures_are_3_3_and_7_inches_wide_with_8_5_pt_text() {
    // The issue's figure: 15-pixel text on a 960-pixel canvas read at about 4 pt in a column.
    let policies: Vec<String> = (0..10).map(|k| format!("fixed:0.{k}")).collect();
    let mut rows = rows_of(&policies);
    crate::report::table::pair(&mut rows, 0);
    let dir = std::env::temp_dir().join(format!("mtf-column-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let files = comparison(&dir, &rows).unwrap();
    for stem in ["welfare", "welfare_paired"] {
        let f = files.iter().find(|f| f.stem == stem).unwrap();
        assert!(f.column, "{stem}: no single-column version");
        assert!(f.files().contains(&format!("{stem}.column.pdf")));
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.column.svg"))).unwrap();
        assert!(svg.contains(&format!("width=\"{COLUMN_WIDTH}\"")), "{stem}: {}", &svg[..200]);
        // Row labels in a 12.1-px em on the 340-px canvas, so 8.5 pt on a 3.3-inch page.
        assert!(svg.contains(&format!("font-size=\"{LABEL_EM}")), "{stem}");
        let pdf = std::fs::read(dir.join(format!("{stem}.column.pdf"))).unwrap();
        let text = String::from_utf8_lossy(&pdf);
        let media = text.split("/MediaBox [").nth(1).unwrap_or_else(|| panic!("{stem}: no MediaBox"));
        let width: f64 = media.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!((width - 237.6).abs() < 0.1, "{stem}: page {width} pt wide, not 3.3 in");
        let pt = LABEL_EM / f64::from(COLUMN_WIDTH) * 237.6;
        assert!((8.0..=9.0).contains(&pt), "{pt} pt");
    }
    // Labels too long for a column (the worst case's 50 characters) leave no plot: no column
    // version, and no warning.
    let worst = worst_rows();
    let names = labels(&worst);
    assert_eq!(column_rows(&names, &[]), None);
    assert!(column_rows(&names[..1], &[]).is_some());
    // The bars and boxes with a column per policy: 10 rows need a page (no column version), a
    // page-width one, 7 inches wide with its labels 8.5 pt; so has every envy map, which also
    // holds in a column.
    let wide: Vec<&Figure> = files
        .iter()
        .filter(|f| f.stem == "phi" || f.stem == "throughput_by_weight" || f.stem.starts_with("envy-"))
        .collect();
    assert!(wide.len() >= 3, "{:?}", files.iter().map(|f| &f.stem).collect::<Vec<_>>());
    for f in wide {
        let map = f.stem.starts_with("envy-");
        assert_eq!(f.column, map, "{}", f.stem);
        assert_eq!(dir.join(format!("{}.column.pdf", f.stem)).exists(), map, "{}", f.stem);
        assert!(f.page, "{}: no page-width version", f.stem);
        assert!(f.files().contains(&format!("{}.page.pdf", f.stem)));
        let svg = std::fs::read_to_string(dir.join(format!("{}.page.svg", f.stem))).unwrap();
        assert!(svg.contains(&format!("width=\"{PAGE_WIDTH}\"")), "{}: {}", f.stem, &svg[..200]);
        assert!(svg.contains(&format!("font-size=\"{LABEL_EM}")), "{}", f.stem);
        let pdf = std::fs::read(dir.join(format!("{}.page.pdf", f.stem))).unwrap();
        let text = String::from_utf8_lossy(&pdf);
        let media = text
            .split("/MediaBox [")
            .nth(1)
            .unwrap_or_else(|| panic!("{}: no MediaBox", f.stem));
        let width: f64 = media.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!((width - 504.0).abs() < 0.1, "{}: page {width} pt wide, not 7 in", f.stem);
        let pt = LABEL_EM / f64::from(PAGE_WIDTH) * 504.0;
        assert!((8.0..=9.0).contains(&pt), "{pt} pt");
    }
    // More rows than a page holds apart (24 pixels of plot each): full size only; a column
    // holds 9.
    let many: Vec<String> = (0..30).map(|k| format!("fixed:{k}")).collect();
    assert_eq!(page_rows(&many), None);
    assert!(page_rows(&many[..20]).is_some());
    assert_eq!(column_across(&many[..10]), None);
    assert_eq!(column_across(&many[..9]).map(|s| s.0), Some(COLUMN_WIDTH));
    // A handful of rows: the bars and boxes hold in a column too, labels 8.5 pt there.
    let few = files_of(&dir.join("few"), &rows[..5]);
    for stem in ["phi", "throughput_by_weight"] {
        let f = few.iter().find(|f| f.stem == stem).unwrap();
        assert!(f.column && f.page, "{stem}");
        let svg = std::fs::read_to_string(dir.join("few").join(format!("{stem}.column.svg"))).unwrap();
        assert!(svg.contains(&format!("width=\"{COLUMN_WIDTH}\"")), "{stem}");
        assert!(svg.contains(&format!("font-size=\"{LABEL_EM}")), "{stem}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn worst_case_figures_keep_labels_keys_and_notes_apart() {
    let rows = worst_rows();
    assert_eq!(rows.len(), 31, "30 under MTF, one `any` row under stride");
    assert!(
        rows.iter()
            .all(|r| r.summary.stat("phi_min").is_some_and(|s| (s.mean - 1.0).abs() < 1e-9)),
        "degenerate phi"
    );
    let dir = std::env::temp_dir().join(format!("mtf-worst-figures-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rows = rows;
    crate::report::table::pair(&mut rows, 0);
    let files = comparison(&dir, &rows).unwrap();
    let notes = [
        ("welfare", "Points: means over seeds; bars: 95% CI over seeds"),
        ("welfare_paired", "Points: mean paired difference; bars: paired 95% CI over seeds"),
        ("throughput_by_weight", "Bars: mean throughput per agent of the class over seeds"),
        ("phi", "Boxes: quartiles and median"),
    ];
    for (stem, note) in notes {
        let figure = files
            .iter()
            .find(|f| f.stem == stem)
            .unwrap_or_else(|| panic!("{stem} not drawn: {files:?}"));
        // What the marks are is in the caption (for the markdown), not in the image.
        assert!(figure.caption.contains(note), "{stem}: {}", figure.caption);
        let name = format!("{stem}.png");
        let img = pixels(&dir.join(&name));
        let (w, h) = img.dimensions();
        // Nothing touches the canvas's edges (a label or legend cut off would).
        assert_eq!(ink(&img, 0..w, h - 4..h), None, "{name}: ink at the bottom edge");
        assert_eq!(ink(&img, w - 4..w, 0..h), None, "{name}: ink at the right edge");
        // No title or key strip above the plot: the top margin is empty.
        assert_eq!(ink(&img, 0..w, 0..14), None, "{name}: a title or key above the plot");
        // The key is a box inside the plot: its border's grey is there.
        let border = img
            .pixels()
            .filter(|p| p.0[0] == p.0[1] && p.0[1] == p.0[2] && (160..=170).contains(&p.0[0]))
            .count();
        assert!(border > 60, "{name}: no key box ({border} border pixels)");
    }
    // A degenerate phi (every value 1) still draws its boxes: the median bars in the plot.
    let img = pixels(&dir.join("phi.png"));
    let (w, h) = img.dimensions();
    let blue = (0..w)
        .flat_map(|x| (60..h - 200).map(move |y| (x, y)))
        .filter(|&(x, y)| img.get_pixel(x, y).0 == [31, 119, 180])
        .count();
    assert!(blue > 31 * 20, "phi: {blue} box pixels for 31 rows");
    assert_eq!(super::curves::span_ticks(0.95, 1.05)(&1.0), "1.00");
    // Every envy map stays on its canvas, and all share one colour scale: their colour bars
    // (the strip right of the map) are the same pixels.
    let maps: Vec<String> = files
        .iter()
        .filter(|f| f.stem.starts_with("envy-"))
        .map(|f| format!("{}.png", f.stem))
        .collect();
    assert_eq!(maps.len(), 31);
    let bar = |img: &image::RgbImage| -> Vec<[u8; 3]> {
        let (w, h) = img.dimensions();
        (0..h).map(|y| img.get_pixel(w - 45, y).0).collect()
    };
    let first = bar(&pixels(&dir.join(&maps[0])));
    for f in &maps {
        let img = pixels(&dir.join(f));
        let (w, h) = img.dimensions();
        assert_eq!(ink(&img, 0..w, h - 3..h), None, "{f}: ink at the bottom edge");
        assert_eq!(ink(&img, w - 3..w, 0..h), None, "{f}: ink at the right edge");
        assert_eq!(bar(&img), first, "{f}: its colour scale differs from the first map's");
    }
    // Envy maps share one colour scale: the same ratio has the same colour on every map, and
    // exactly envy-free is white.
    assert_eq!(rows::envy_color_at(1.0, 1.6), RGBColor(255, 255, 255));
    assert_eq!(rows::envy_color_at(1.0 + 1e-9, 1.6), RGBColor(255, 254, 254));
    assert_eq!(rows::envy_color_at(1.0 - 1e-9, 1.6), RGBColor(254, 254, 255));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn curves_with_many_long_labelled_series_stay_on_the_canvas() {
    use crate::report::plots::{Reference, Series};
    let stat = |m: f64| env::eval::Stat { mean: m, ci95: 1.0 };
    let series: Vec<Series> = (0..14)
        .map(|k| Series {
            label: format!("run-{k:02}-with-a-long-name-a-sweep-gives-its-trials-and-more (3 runs)"),
            runs: vec!["r".into(); 3],
            points: (1..=20).map(|e| (e * 10, stat(100.0 + k as f64))).collect(),
            held_out: Some(stat(101.0)),
        })
        .collect();
    let refs = [Reference {
        policy: "fixed:w1=0.2,w2=0.4,w4=0.7 held out".into(),
        level: stat(99.0),
    }];
    let dir = std::env::temp_dir().join(format!("mtf-worst-curves-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    curves(&dir, "c", "welfare", "welfare (jobs per round)", &series, &refs).unwrap();
    let img = pixels(&dir.join("c.png"));
    let (w, h) = img.dimensions();
    assert_eq!(ink(&img, w - 4..w, 0..h), None, "a legend label runs off the right edge");
    assert_eq!(ink(&img, 0..w, h - 4..h), None, "the legend runs off the bottom");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn line_figures_with_many_long_labelled_series_stay_on_the_canvas() {
    let stat = |m: f64| env::eval::Stat { mean: m, ci95: 0.5 };
    let series: Vec<(String, Vec<env::eval::Stat>)> = (0..12)
        .map(|k| {
            (
                format!("MTF minus a-baseline-with-a-long-name-{k:02} at its best fixed level"),
                vec![stat(k as f64); 3],
            )
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("mtf-worst-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    lines(
        &dir,
        "l",
        "Token scale",
        "total tokens",
        "welfare difference",
        &[100.0, 1000.0, 10000.0],
        true,
        &series,
    )
    .unwrap();
    let img = pixels(&dir.join("l.png"));
    let (w, h) = img.dimensions();
    assert_eq!(ink(&img, w - 4..w, 0..h), None, "a legend label runs off the right edge");
    assert_eq!(ink(&img, 0..w, h - 4..h), None, "something runs off the bottom");
    let _ = std::fs::remove_dir_all(&dir);
}
