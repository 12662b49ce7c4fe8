//! Plots as SVG text, in one style (plotters' SVG backend, with an embedded
//! DejaVu Sans so that text is measured the same everywhere): [`lines`]
//! (XY lines with optional log10 axes) and [`heatmap`]. Every plot has a
//! title and labelled axes. A new plot is a file here, in this style.

mod heatmap;
pub mod history;
mod lines;
mod style;

pub use heatmap::heatmap;
pub use lines::{Bounds, Shade, lines, lines_shaded, lines_within};
pub use style::{Axis, Series};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_with_their_text() {
        let s = lines(
            "Throughput vs clients",
            Axis::linear("clients", |v| format!("{v:.0}")),
            Axis::log("ops/s", |v| format!("{v:.0}")),
            &[Series {
                name: "balanced".into(),
                points: vec![(1.0, 1e3), (2.0, 1e5)],
            }],
        );
        assert!(s.starts_with("<svg"), "{}", &s[..80.min(s.len())]);
        for text in [
            "Throughput vs clients",
            "clients",
            "ops/s",
            "balanced",
            "<circle",
            "<polyline",
        ] {
            assert!(s.contains(text), "no {text}");
        }
        let h = heatmap(
            "CPU busy",
            "seconds",
            &[("client 0".into(), vec![10.0, 95.0])],
            &[0.0, 1.0, 2.0],
            None,
        );
        assert!(h.contains("client 0") && h.contains("<rect"), "{h}");
    }

    /// The x of every `<text>` holding `needle`.
    fn text_x(svg: &str, needle: &str) -> Vec<f64> {
        svg.split("<text")
            .skip(1)
            .filter(|t| {
                t.split_once('>')
                    .and_then(|(_, rest)| rest.split_once("</text>"))
                    .is_some_and(|(body, _)| body.trim() == needle)
            })
            .filter_map(|t| {
                let at = t.find("x=\"")? + 3;
                t[at..].split('"').next()?.parse().ok()
            })
            .collect()
    }

    #[test]
    fn ticks_are_unique_with_units_and_the_legend_is_beside_the_plot() {
        use wirebench_core::units::{format_ns, format_rate};
        // A latency axis over less than two decades: 1-2-5 ticks.
        let t = style::ticks(4.0, 5.7, true, format_ns, false);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "10.0us", "20.0us", "50.0us", "100.0us", "200.0us", "500.0us"
            ]
        );
        // 30us..3ms (two decades): decades alone would give two labels.
        let t = style::ticks(4.48, 6.48, true, format_ns, false);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "50.0us", "100.0us", "200.0us", "500.0us", "1.00ms", "2.00ms"
            ]
        );
        // Percentiles 50%..99.999% (x = 1 / (1 - p)): every decade, and
        // p50 in the partial decade below the first.
        let pct = |v: f64| format!("{}%", 100.0 * (1.0 - 1.0 / v));
        let t = style::ticks(2f64.log10() - 0.05, 5.05, true, pct, false);
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels[..3], ["50%", "90%", "99%"]);
        assert_eq!(labels.len(), 6, "{labels:?}");
        // Within one decade: linear ticks, still unique.
        let t = style::ticks(
            3.0f64.log10() + 3.0,
            3.9f64.log10() + 3.0,
            true,
            format_ns,
            false,
        );
        let mut l: Vec<&String> = t.iter().map(|(_, l)| l).collect();
        let n = l.len();
        l.dedup();
        assert!(n >= 2 && l.len() == n, "{t:?}");
        // Clients 1..2: whole numbers only, no "1, 2, 2".
        let t = style::ticks(0.95, 2.05, false, |v| format!("{v:.0}"), true);
        assert_eq!(
            t.iter().map(|(_, l)| l.as_str()).collect::<Vec<_>>(),
            ["1", "2"]
        );
        // A rate axis: 1-2-5 steps with k/M.
        let t = style::ticks(0.0, 520_000.0, false, format_rate, false);
        assert_eq!(t[1].1, "100.0k");
        let svg = lines(
            "t",
            Axis::linear("x", |v| format!("{v:.0}")),
            Axis::linear("y", format_rate),
            &[
                Series {
                    name: "arch=pool mean".into(),
                    points: vec![(2.0, 5.0), (1.0, 3.0)],
                },
                Series {
                    name: "arch=pool p99".into(),
                    points: vec![(1.0, 6.0), (2.0, 9.0)],
                },
            ],
        );
        let plot_right = f64::from(style::W - style::LEGEND_W);
        for name in ["arch=pool mean", "arch=pool p99"] {
            let xs = text_x(&svg, name);
            assert!(
                !xs.is_empty() && xs.iter().all(|x| *x >= plot_right),
                "{name}: {xs:?}"
            );
        }
        // One family, one colour; its p99 dashed; a hover title per point.
        assert!(svg.contains("stroke-dasharray") || svg.matches("<polyline").count() > 2);
        assert_eq!(svg.matches("<title>").count(), 4);
        assert!(
            svg.contains("<title>arch=pool mean: x 1, y 3</title>"),
            "{svg}"
        );
    }

    /// Sizes on powers of two with binary units; more than seven series
    /// bring the colours back with another marker.
    #[test]
    fn sizes_tick_on_powers_of_two_and_colours_repeat_with_another_marker() {
        let size = |v: f64| wirebench_core::units::format_size(wirebench_core::units::whole(v));
        let t = style::pow2_ticks(4096f64.log10(), 1_048_576f64.log10(), size).unwrap();
        let labels: Vec<&str> = t.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(
            labels,
            [
                "4KiB", "8KiB", "16KiB", "32KiB", "64KiB", "128KiB", "256KiB", "512KiB", "1MiB"
            ]
        );
        // 1 B to 1 GiB: every second or third power, no more than ten.
        let t = style::pow2_ticks(0.0, 1_073_741_824f64.log10(), size).unwrap();
        assert!(t.len() <= 10 && t.iter().any(|(_, l)| l == "1GiB"), "{t:?}");
        let series: Vec<Series> = (0..9)
            .map(|k| Series {
                name: format!("depth={k}"),
                points: vec![(1.0, f64::from(k)), (2.0, f64::from(k) + 1.0)],
            })
            .collect();
        let svg = lines(
            "t",
            Axis::pow2("size", size),
            Axis::linear("ops/s", |v| format!("{v:.0}")),
            &series,
        );
        let mut taken = Vec::new();
        let styles: Vec<_> = (0..9)
            .map(|k| style::color_of(&format!("depth={k}"), &mut taken))
            .collect();
        assert_eq!(
            styles
                .iter()
                .filter(|s| s.1 == style::Marker::Circle)
                .count(),
            7
        );
        let mut pairs: Vec<String> = styles.iter().map(|s| format!("{s:?}")).collect();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len(), 9, "each series its own colour and marker");
        assert!(svg.contains("<polygon") || svg.contains("<rect"), "{svg}");
    }
}
