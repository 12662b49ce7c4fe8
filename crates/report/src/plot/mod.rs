//! Plots as SVG text, in one style (plotters' SVG backend, with an embedded
//! DejaVu Sans so that text is measured the same everywhere): [`lines`]
//! (XY lines with optional log10 axes) and [`heatmap`]. Every plot has a
//! title and labelled axes. A new plot is a file here, in this style.

mod heatmap;
mod lines;
mod style;

pub use heatmap::heatmap;
pub use lines::lines;
pub use style::{Axis, Series};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_svg_with_their_text() {
        let s = lines(
            "Throughput vs clients",
            Axis {
                label: "clients",
                log: false,
                fmt: |v| format!("{v:.0}"),
            },
            Axis {
                label: "ops/s",
                log: true,
                fmt: |v| format!("{v:.0}"),
            },
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
        );
        assert!(h.contains("client 0") && h.contains("<rect"), "{h}");
    }
}
