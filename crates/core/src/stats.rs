//! Statistics over repetitions and series: mean with a 95% confidence
//! interval (Student's t), and a trend test that says whether a per-second
//! series drifts (is not stationary).

use serde::{Deserialize, Serialize};

/// Mean, 95% confidence half-width, min and max of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub n: usize,
    pub mean: f64,
    /// Half-width of the 95% confidence interval of the mean (0 when n < 2).
    pub ci95: f64,
    pub min: f64,
    pub max: f64,
}

/// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom.
/// The median of `xs` (sorted in place; the mean of the middle two for an
/// even count); 0 for none.
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => xs[n / 2],
        _ => (xs[n / 2 - 1] + xs[n / 2]) / 2.0,
    }
}

pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

impl Spread {
    /// None for an empty sample.
    pub fn of(xs: &[f64]) -> Option<Spread> {
        let n = xs.len();
        if n == 0 {
            return None;
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        let ci95 = if n < 2 {
            0.0
        } else {
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            t975(n - 1) * (var / n as f64).sqrt()
        };
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread {
            n,
            mean,
            ci95,
            min,
            max,
        })
    }
}

/// A linear trend fitted to a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// Change over the whole series, as % of its mean.
    pub drift_pct: f64,
    /// Slope over its standard error; a series on a perfect line has no
    /// error: the largest finite number with the slope's sign (JSON has no
    /// infinity; a `null` an older wirebench wrote reads as one).
    #[serde(deserialize_with = "infinite_if_null")]
    pub t: f64,
    /// The trend is both significant (|t| > 3) and large (> 5% of the mean).
    pub drifting: bool,
}

fn infinite_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

impl Trend {
    /// Fits `ys` (equally spaced); None with fewer than 4 points or a zero mean.
    pub fn of(ys: &[f64]) -> Option<Trend> {
        let n = ys.len();
        if n < 4 {
            return None;
        }
        let nf = n as f64;
        let xm = (nf - 1.0) / 2.0;
        let ym = ys.iter().sum::<f64>() / nf;
        if ym == 0.0 {
            return None;
        }
        let sxx: f64 = (0..n).map(|i| (i as f64 - xm).powi(2)).sum();
        let sxy: f64 = ys
            .iter()
            .enumerate()
            .map(|(i, y)| (i as f64 - xm) * (y - ym))
            .sum();
        let slope = sxy / sxx;
        let resid: f64 = ys
            .iter()
            .enumerate()
            .map(|(i, y)| (y - ym - slope * (i as f64 - xm)).powi(2))
            .sum();
        let se = (resid / (nf - 2.0) / sxx).sqrt();
        let t = if se == 0.0 {
            if slope == 0.0 {
                0.0
            } else {
                f64::MAX.copysign(slope)
            }
        } else {
            slope / se
        };
        let drift_pct = 100.0 * slope * (nf - 1.0) / ym;
        Some(Trend {
            drift_pct,
            t,
            drifting: t.abs() > 3.0 && drift_pct.abs() > 5.0,
        })
    }
}

#[cfg(test)]
mod tests {
    /// A series on a perfect line (a program's made-up figures) has a
    /// trend that reads back from JSON: run.json stays readable.
    #[test]
    fn issue_36_a_perfect_line_has_a_trend_that_reads_back() {
        let t = super::Trend::of(&[1000.0, 2000.0, 3000.0, 4000.0]).unwrap();
        assert!(t.drifting && t.t > 1e300);
        let back: super::Trend = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
        let old: super::Trend =
            serde_json::from_str(r#"{"drift_pct": 1.0, "t": null, "drifting": true}"#).unwrap();
        assert_eq!(old.t, f64::INFINITY);
    }

    use super::*;

    #[test]
    fn spread_of_a_known_sample() {
        let s = Spread::of(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!((s.n, s.mean, s.min, s.max), (3, 12.0, 10.0, 14.0));
        // sd 2, se 2/sqrt(3), t(2) 4.303
        assert!((s.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(Spread::of(&[5.0]).unwrap().ci95, 0.0);
        assert!(Spread::of(&[]).is_none());
    }

    #[test]
    fn a_ramp_drifts_and_noise_does_not() {
        let ramp: Vec<f64> = (0..10)
            .map(|i| 1000.0 + 30.0 * i as f64 + if i % 2 == 0 { 5.0 } else { -5.0 })
            .collect();
        let t = Trend::of(&ramp).unwrap();
        assert!(t.drifting, "{t:?}");
        assert!(t.drift_pct > 20.0);
        let noise = [
            1000.0, 1040.0, 980.0, 1010.0, 960.0, 1030.0, 990.0, 1020.0, 970.0, 1000.0,
        ];
        assert!(!Trend::of(&noise).unwrap().drifting);
        assert!(Trend::of(&[1.0, 2.0, 3.0]).is_none());
    }
}
