//! XY lines with markers, one series each, on linear or log10 axes: ticks
//! chosen for the axis (1-2-5 steps; decades, with 2 and 5 under two
//! decades), unique tick labels, points sorted along x, the legend beside
//! the plot, a colour per series family (its name without " mean" / " p99")
//! from a colour-blind-safe palette, p99 dashed, and a hover title on every
//! point.

use super::style::{
    Axis, CHAR_W, H, LEGEND_W, Marker, Series, TEXT_PX, TITLE_PX, W, color_of, dashed, family,
    font, pow2_ticks, range, svg_error, ticks, tx,
};
use plotters::prelude::*;

/// A span of x shaded behind the lines, with its name (the warm-up).
#[derive(Debug, Clone)]
pub struct Shade {
    pub from: f64,
    pub to: f64,
    pub label: String,
}

/// An XY plot with a line and markers per series.
pub fn lines(title: &str, x: Axis, y: Axis, series: &[Series]) -> String {
    lines_shaded(title, x, y, series, None)
}

/// The values a set of plots spans, so that they share their axes (the
/// panels of small multiples).
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub x: (f64, f64),
    pub y: (f64, f64),
}

impl Bounds {
    /// The span of every point of the set, by x and by y.
    pub fn of(xs: &[f64], ys: &[f64]) -> Bounds {
        let span = |v: &[f64]| {
            v.iter()
                .filter(|a| a.is_finite())
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &a| {
                    (lo.min(a), hi.max(a))
                })
        };
        Bounds {
            x: span(xs),
            y: span(ys),
        }
    }
}

/// [`lines`] on axes that span at least `bounds` (one panel of several).
pub fn lines_within(
    title: &str,
    x: Axis,
    y: Axis,
    series: &[Series],
    bounds: Option<&Bounds>,
) -> String {
    draw(title, x, y, series, None, bounds)
}

/// [`lines`] with a span of x shaded behind the lines and named.
pub fn lines_shaded(
    title: &str,
    x: Axis,
    y: Axis,
    series: &[Series],
    shade: Option<&Shade>,
) -> String {
    draw(title, x, y, series, shade, None)
}

fn draw(
    title: &str,
    x: Axis,
    y: Axis,
    series: &[Series],
    shade: Option<&Shade>,
    bounds: Option<&Bounds>,
) -> String {
    font();
    let mut svg = String::new();
    let mut hovers: Vec<(i32, i32, String)> = Vec::new();
    let with_legend = series.len() > 1 || series.first().is_some_and(|s| !s.name.is_empty());
    {
        // A legend longer than the plot makes the figure taller (the plot
        // keeps its height): every series is named, none cut off.
        let rows = if with_legend { series.len() } else { 0 };
        let height = H.max(legend_height(rows));
        let root = SVGBackend::with_string(&mut svg, (W, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (plot_area, legend_area) = if with_legend {
            let (a, b) = root.split_horizontally(W - LEGEND_W);
            (a.split_vertically(H).0, Some(b))
        } else {
            (root.clone(), None)
        };
        // The shaded span is part of the x range: the warm-up is seen whole.
        let (x0, x1) = range(
            series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .chain(shade.iter().flat_map(|s| [s.from, s.to]))
                .chain(bounds.iter().flat_map(|b| [b.x.0, b.x.1]))
                .filter(|v| v.is_finite()),
            x.log,
        );
        let (y0, y1) = range(
            series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .chain(bounds.iter().flat_map(|b| [b.y.0, b.y.1]))
                .filter(|v| v.is_finite()),
            y.log,
        );
        let chart = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", TITLE_PX))
            .margin(12)
            .x_label_area_size(56)
            .y_label_area_size(96)
            .build_cartesian_2d(x0..x1, y0..y1);
        let Ok(mut chart) = chart else {
            return svg_error(title);
        };
        let whole_x = series
            .iter()
            .flat_map(|s| s.points.iter())
            .all(|p| p.0.fract() == 0.0);
        let xt = x
            .pow2
            .then(|| pow2_ticks(x0, x1, x.fmt))
            .flatten()
            .unwrap_or_else(|| ticks(x0, x1, x.log, x.fmt, whole_x && !x.log));
        let yt = ticks(y0, y1, y.log, y.fmt, false);
        let _ = chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc(x.label)
            .y_desc(y.label)
            .label_style(("sans-serif", TEXT_PX))
            .draw();
        if let Some(sh) = shade {
            let (a, b) = (tx(sh.from, x.log).max(x0), tx(sh.to, x.log).min(x1));
            if b > a {
                let _ = chart.draw_series([Rectangle::new(
                    [(a, y0), (b, y1)],
                    RGBColor(232, 232, 232).filled(),
                )]);
                let (px, py) = chart.backend_coord(&(a, y1));
                let _ = root.draw(&Text::new(
                    sh.label.clone(),
                    (px + 4, py + 4),
                    ("sans-serif", TEXT_PX)
                        .into_font()
                        .color(&RGBColor(90, 90, 90)),
                ));
            }
        }
        // The grid and the labels at the ticks chosen here.
        let grid = RGBColor(220, 220, 220);
        for (v, _) in &xt {
            let _ = chart.draw_series(LineSeries::new([(*v, y0), (*v, y1)], grid));
        }
        for (v, _) in &yt {
            let _ = chart.draw_series(LineSeries::new([(x0, *v), (x1, *v)], grid));
        }
        tick_labels(&chart, &root, &xt, &yt, (x0, y0));
        let legend = draw_lines(&mut chart, &root, series, &x, &y, &mut hovers);
        if let Some(area) = legend_area {
            draw_legend(&area, &legend);
        }
        let _ = root.present();
    }
    with_hovers(svg, &hovers)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The labels at the ticks chosen (`at`: the plot's lower left corner).
fn tick_labels(
    chart: &Chart,
    root: &Area,
    xt: &[(f64, String)],
    yt: &[(f64, String)],
    at: (f64, f64),
) {
    let (x0, y0) = at;
    let style = ("sans-serif", TEXT_PX).into_font().color(&BLACK);
    for (v, label) in xt {
        let (px, py) = chart.backend_coord(&(*v, y0));
        let w = text_width(label);
        let _ = root.draw(&Text::new(
            label.clone(),
            (px - w / 2, py + 6),
            style.clone(),
        ));
    }
    for (v, label) in yt {
        let (px, py) = chart.backend_coord(&(x0, *v));
        let w = text_width(label);
        let _ = root.draw(&Text::new(
            label.clone(),
            (px - w - 6, py - 8),
            style.clone(),
        ));
    }
}

/// Each series as a line with its markers (dashed for a statistic drawn
/// so), each point's hover text kept; the legend's entries.
fn draw_lines(
    chart: &mut Chart,
    root: &Area,
    series: &[Series],
    x: &Axis,
    y: &Axis,
    hovers: &mut Vec<(i32, i32, String)>,
) -> Vec<(String, RGBColor, Marker, bool)> {
    let mut taken = Vec::new();
    let mut legend = Vec::new();
    for s in series {
        let (color, marker) = color_of(&family(&s.name), &mut taken);
        let mut pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .copied()
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let shown: Vec<(f64, f64)> = pts
            .iter()
            .map(|&(a, b)| (tx(a, x.log), tx(b, y.log)))
            .collect();
        let stroke = color.stroke_width(2);
        if dashed(&s.name) {
            let _ = chart.draw_series(DashedLineSeries::new(shown.clone(), 6, 4, stroke));
        } else {
            let _ = chart.draw_series(LineSeries::new(shown.clone(), stroke));
        }
        for &p in &shown {
            let at = chart.backend_coord(&p);
            let _ = root.draw(&mark(marker, at, color));
        }
        for (&(a, b), p) in pts.iter().zip(&shown) {
            let (px, py) = chart.backend_coord(p);
            let who = if s.name.is_empty() {
                String::new()
            } else {
                format!("{}: ", s.name)
            };
            hovers.push((
                px,
                py,
                format!(
                    "{who}{} {}, {} {}",
                    x.label,
                    (x.fmt)(a),
                    y.label,
                    (y.fmt)(b)
                ),
            ));
        }
        legend.push((s.name.clone(), color, marker, dashed(&s.name)));
    }
    legend
}

/// The legend's first row and the distance between two.
const LEGEND_TOP: u32 = 40;
const LEGEND_ROW: u32 = 22;

/// The height a legend of `rows` entries needs.
fn legend_height(rows: usize) -> u32 {
    LEGEND_TOP + LEGEND_ROW * u32::try_from(rows).unwrap_or(u32::MAX / 64).min(10_000) + LEGEND_ROW
}

/// The legend: a line and marker per series, its name (its middle cut
/// when too long, so that its statistic stays).
fn draw_legend(area: &Area, legend: &[(String, RGBColor, Marker, bool)]) {
    let style = ("sans-serif", TEXT_PX).into_font().color(&BLACK);
    let (top, row) = (LEGEND_TOP as i32, LEGEND_ROW as i32);
    for (i, (name, color, marker, dash)) in legend.iter().enumerate() {
        let yy = top + row * i32::try_from(i).unwrap_or(i32::MAX / 40);
        let stroke = color.stroke_width(2);
        if *dash {
            let _ = area.draw(&PathElement::new(vec![(8, yy), (14, yy)], stroke));
            let _ = area.draw(&PathElement::new(vec![(18, yy), (24, yy)], stroke));
        } else {
            let _ = area.draw(&PathElement::new(vec![(8, yy), (24, yy)], stroke));
        }
        let _ = area.draw(&mark(*marker, (16, yy), *color));
        // Too long: its middle goes, so that its statistic
        // (" mean", " p99") stays.
        let chars: Vec<char> = name.chars().collect();
        let label: String = if chars.len() > 33 {
            let head: String = chars[..18].iter().collect();
            let tail: String = chars[chars.len() - 12..].iter().collect();
            format!("{head}...{tail}")
        } else {
            name.clone()
        };
        let _ = area.draw(&Text::new(label, (30, yy - 8), style.clone()));
    }
}

/// A point's marker at pixel `at`.
fn mark<DB: DrawingBackend>(
    marker: Marker,
    (x, y): (i32, i32),
    color: RGBColor,
) -> DynElement<'static, DB, (i32, i32)> {
    let fill = color.filled();
    match marker {
        Marker::Circle => Circle::new((x, y), 3, fill).into_dyn(),
        Marker::Square => Rectangle::new([(x - 3, y - 3), (x + 3, y + 3)], fill).into_dyn(),
        Marker::Triangle => {
            Polygon::new(vec![(x, y - 4), (x - 4, y + 3), (x + 4, y + 3)], fill).into_dyn()
        }
    }
}

/// About how wide `text` is at 12 px, for centring labels.
pub(super) fn text_width(text: &str) -> i32 {
    i32::try_from(text.chars().count() * CHAR_W).unwrap_or(i32::MAX)
}

/// `svg` with a transparent circle over each point whose `<title>` gives
/// its values (shown on hover, no script).
pub(super) fn with_hovers(mut svg: String, hovers: &[(i32, i32, String)]) -> String {
    let Some(end) = svg.rfind("</svg>") else {
        return svg;
    };
    let mut g = String::from("<g fill=\"transparent\">");
    for (x, y, t) in hovers {
        let t = t
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;");
        g.push_str(&format!(
            "<circle cx=\"{x}\" cy=\"{y}\" r=\"6\"><title>{t}</title></circle>"
        ));
    }
    g.push_str("</g>");
    svg.insert_str(end, &g);
    svg
}
