//! Change points in a series of runs: E-Divisive means (Matteson and
//! James's energy statistic, alpha = 1) splits a window of the series where
//! the two sides differ most, and Student's t-test on the two sides decides
//! whether the split is real, as Apache Otava (formerly hunter) does. The
//! series is read in overlapping windows (`window` points, half a window
//! apart) so that one change does not hide another far from it, and the
//! change points found are then merged: the weakest (the highest p-value,
//! or a change smaller than `min_magnitude`) is dropped and its neighbours
//! tested again against each other, until every one left passes.
//!
//! One run far from its neighbours on both sides (a host throttle, a
//! noisy neighbour, a lucky run) would otherwise widen the spread the
//! t-test sees so much that a real step beside it no longer passes: ten
//! runs at 1000/s, ten at 500/s and one at 2000/s read as "no change".
//! Such runs are found first with a Hampel rule (the median and the
//! scaled median absolute deviation of up to [`NEIGHBOURS`] runs each
//! side) and only if isolated (neither run next to it is as far out: two
//! runs out together may be a change starting); they are reported as
//! outliers, and the change points are searched among the other runs.

use serde::Serialize;
use wirebench_core::stats::median;

/// How change points are searched for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// The largest p-value of the t-test that counts as a change.
    pub pvalue: f64,
    /// The smallest relative change of the mean that counts (0.05: 5%).
    pub min_magnitude: f64,
    /// Points read at once by E-Divisive.
    pub window: usize,
}

impl Options {
    /// The flags' values checked: `--pvalue` (0 to 1), `--min-magnitude`
    /// (`5%` or `0.05`) and `--window` (4 or more); the error names the flag.
    pub fn checked(pvalue: f64, min_magnitude: &str, window: usize) -> Result<Options, String> {
        if !(pvalue > 0.0 && pvalue < 1.0) {
            return Err(format!(
                "--pvalue {pvalue}: give a probability between 0 and 1, e.g. 0.001"
            ));
        }
        if window < 4 {
            return Err(format!("--window {window}: at least 4 runs"));
        }
        let v = min_magnitude;
        let parsed = match v.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
            None => v.trim().parse::<f64>(),
        };
        match parsed {
            Ok(f) if (0.0..1.0).contains(&f) => Ok(Options {
                pvalue,
                min_magnitude: f,
                window,
            }),
            _ => Err(format!(
                "--min-magnitude {v}: give a change from 0% to 100%, e.g. 5% or 0.05"
            )),
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            pvalue: 0.001,
            min_magnitude: 0.05,
            window: 50,
        }
    }
}

/// A change of a series' mean at `index` (the first point after it).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChangePoint {
    pub index: usize,
    /// The means (and sample standard deviations) of the points between
    /// the previous change point and this one, and between this one and
    /// the next.
    pub mean_before: f64,
    pub mean_after: f64,
    pub std_before: f64,
    pub std_after: f64,
    /// Two-sided p-value of Student's t-test of the two sides.
    pub pvalue: f64,
}

impl ChangePoint {
    /// The relative change of the mean: +0.209 for 412 -> 498.
    pub fn change(&self) -> f64 {
        if self.mean_before == 0.0 {
            if self.mean_after == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }
}

/// The fewest points on each side of a split: the t-test needs a spread
/// on both.
const MIN_SIDE: usize = 2;

/// The fewest points a series needs to be checked at all.
pub const MIN_POINTS: usize = 2 * MIN_SIDE + 1;

/// How many runs on each side an outlier is judged against.
pub const NEIGHBOURS: usize = 5;
/// How many scaled median absolute deviations of its neighbours a run
/// must lie from their median to be an outlier (5: noise of any normal
/// kind almost never does).
const OUTLIER_MADS: f64 = 5.0;
/// ...and by at least this many times the smallest change that counts
/// (with 5%, 10% from their median): a run within the noise a change
/// must beat is no outlier, however quiet its neighbours.
const OUTLIER_MAGNITUDES: f64 = 2.0;

/// One run far from its neighbours on both sides: not a change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outlier {
    pub index: usize,
    pub value: f64,
    /// The median of its neighbours.
    pub neighbours: f64,
}

impl Outlier {
    /// Its value over its neighbours' median: 2.0 for 2000 among 1000s.
    pub fn ratio(&self) -> f64 {
        if self.neighbours == 0.0 {
            f64::INFINITY
        } else {
            self.value / self.neighbours
        }
    }
}

/// What a series holds: its change points and its outliers, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Analysis {
    pub changes: Vec<ChangePoint>,
    pub outliers: Vec<Outlier>,
}

/// The isolated outliers of `xs` (see the module's overview). Each side's
/// neighbours are judged apart: a run next to a change has one level on
/// each side, and both sides together would make their spread look wide.
/// An outlier is far from each side's median that has two runs or more
/// (in the same direction), and neither run next to it is as far out.
pub fn outliers(xs: &[f64], o: &Options) -> Vec<Outlier> {
    let n = xs.len();
    let mut found = Vec::new();
    for i in 0..n {
        let left: Vec<f64> = xs[i.saturating_sub(NEIGHBOURS)..i].to_vec();
        let right: Vec<f64> = xs[(i + 1).min(n)..(i + 1 + NEIGHBOURS).min(n)].to_vec();
        // (side's runs, the run next to it on that side)
        let sides: Vec<(Vec<f64>, f64)> = [(left, i.checked_sub(1)), (right, Some(i + 1))]
            .into_iter()
            .filter(|(side, _)| side.len() >= 2)
            .map(|(side, next)| {
                let next = next.and_then(|j| xs.get(j).copied()).unwrap_or(f64::NAN);
                (side, next)
            })
            .collect();
        if sides.iter().map(|(s, _)| s.len()).sum::<usize>() < 4 {
            continue;
        }
        let mut direction = 0.0;
        let mut medians = Vec::new();
        let far = sides.into_iter().all(|(mut side, next)| {
            let m = median(&mut side);
            let mut dev: Vec<f64> = side.iter().map(|x| (x - m).abs()).collect();
            let scale = 1.4826 * median(&mut dev);
            let d = xs[i] - m;
            let limit = (OUTLIER_MADS * scale).max(OUTLIER_MAGNITUDES * o.min_magnitude * m.abs());
            let same_way = direction == 0.0 || d.signum() == direction;
            direction = d.signum();
            medians.push(m);
            // The run next to it on this side is nearer this side's bulk
            // than half its distance (two runs out together may be a
            // change starting).
            let alone = next.is_nan() || (next - m) * d.signum() < d.abs() / 2.0;
            limit > 0.0 && d.abs() > limit && same_way && alone
        });
        let neighbours = median(&mut medians);
        // Whatever the sides, neither run next to it is as far out.
        let d = xs[i] - neighbours;
        let alone = [i.checked_sub(1), (i + 1 < n).then_some(i + 1)]
            .into_iter()
            .flatten()
            .all(|j| (xs[j] - neighbours) * d.signum() < d.abs() / 2.0);
        if far && alone {
            found.push(Outlier {
                index: i,
                value: xs[i],
                neighbours,
            });
        }
    }
    found
}

/// The outliers of `xs`, and the change points of the other runs (each
/// indexed in `xs`, its statistics over the other runs).
pub fn analyse(xs: &[f64], o: &Options) -> Analysis {
    let outliers = outliers(xs, o);
    let kept: Vec<usize> = (0..xs.len())
        .filter(|i| !outliers.iter().any(|out| out.index == *i))
        .collect();
    let clean: Vec<f64> = kept.iter().map(|&i| xs[i]).collect();
    let changes = change_points(&clean, o)
        .into_iter()
        .map(|mut c| {
            c.index = kept[c.index];
            c
        })
        .collect();
    Analysis { changes, outliers }
}

/// The change points of `xs`, in order (every run counted: see
/// [`analyse`] for the outliers left out first).
pub fn change_points(xs: &[f64], o: &Options) -> Vec<ChangePoint> {
    let n = xs.len();
    if n < 2 * MIN_SIDE {
        return Vec::new();
    }
    let window = o.window.max(2 * MIN_SIDE);
    let step = (window / 2).max(1);
    let mut found = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + window).min(n);
        let mut here: Vec<usize> = e_divisive(&xs[start..end], o.pvalue)
            .into_iter()
            .map(|i| i + start)
            .collect();
        here.sort_unstable();
        let last = here.last().copied().unwrap_or(0);
        found.extend(here);
        if end == n {
            break;
        }
        start = last.max(start + step);
    }
    found.sort_unstable();
    found.dedup();
    merge(xs, found, o)
}

/// Drops the weakest change point until every one left is significant and
/// large enough, each tested between its neighbours.
fn merge(xs: &[f64], mut at: Vec<usize>, o: &Options) -> Vec<ChangePoint> {
    loop {
        let points = stats_between(xs, &at);
        // A side of fewer than MIN_SIDE points (two windows found changes
        // next to each other) fails too.
        let side = |i: usize| {
            let from = if i == 0 { 0 } else { at[i - 1] };
            let to = at.get(i + 1).copied().unwrap_or(xs.len());
            (at[i] - from).min(to - at[i])
        };
        let weakest = points
            .iter()
            .enumerate()
            .filter(|&(i, c)| {
                c.pvalue.is_nan()
                    || c.pvalue > o.pvalue
                    || c.change().abs() < o.min_magnitude
                    || side(i) < MIN_SIDE
            })
            .max_by(|(_, a), (_, b)| {
                a.pvalue
                    .total_cmp(&b.pvalue)
                    .then(b.change().abs().total_cmp(&a.change().abs()))
            })
            .map(|(i, _)| i);
        match weakest {
            Some(i) => {
                at.remove(i);
            }
            None => return points,
        }
    }
}

/// Each change point in `at` tested between its neighbours (the series'
/// ends for the first and the last).
fn stats_between(xs: &[f64], at: &[usize]) -> Vec<ChangePoint> {
    (0..at.len())
        .map(|i| {
            let from = if i == 0 { 0 } else { at[i - 1] };
            let to = at.get(i + 1).copied().unwrap_or(xs.len());
            split_stats(&xs[from..at[i]], &xs[at[i]..to], at[i])
        })
        .collect()
}

fn split_stats(before: &[f64], after: &[f64], index: usize) -> ChangePoint {
    let (m1, s1) = mean_std(before);
    let (m2, s2) = mean_std(after);
    ChangePoint {
        index,
        mean_before: m1,
        mean_after: m2,
        std_before: s1,
        std_after: s2,
        pvalue: t_test(before.len(), m1, s1, after.len(), m2, s2),
    }
}

/// Mean and sample standard deviation (0 for one point).
fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Two-sided p-value of Student's t-test (pooled variance) of two samples
/// given by their sizes, means and sample standard deviations. Two samples
/// with no spread are equal (1) or certainly apart (0).
pub fn t_test(n1: usize, m1: f64, s1: f64, n2: usize, m2: f64, s2: f64) -> f64 {
    if n1 < 1 || n2 < 1 || n1 + n2 < 3 {
        return 1.0;
    }
    let df = (n1 + n2 - 2) as f64;
    let pooled = (((n1 - 1) as f64 * s1 * s1 + (n2 - 1) as f64 * s2 * s2) / df).sqrt();
    let se = pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64).sqrt();
    if se == 0.0 {
        return if m1 == m2 { 1.0 } else { 0.0 };
    }
    let t = (m1 - m2) / se;
    // P(|T| > t) = I_{df / (df + t^2)}(df / 2, 1 / 2).
    statrs::function::beta::beta_reg(df / 2.0, 0.5, df / (df + t * t))
}

/// E-Divisive means within one window: the split of most energy among the
/// segments found so far, taken while its t-test passes `pvalue`. Returns
/// the change points' indexes in `xs`.
fn e_divisive(xs: &[f64], pvalue: f64) -> Vec<usize> {
    let mut at: Vec<usize> = Vec::new();
    loop {
        let mut bounds = vec![0];
        bounds.extend(&at);
        bounds.push(xs.len());
        let best = bounds
            .windows(2)
            .filter_map(|w| best_split(&xs[w[0]..w[1]]).map(|(i, q)| (w[0] + i, q)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((candidate, _)) = best else {
            return at;
        };
        let pos = at.partition_point(|&i| i < candidate);
        let from = if pos == 0 { 0 } else { at[pos - 1] };
        let to = at.get(pos).copied().unwrap_or(xs.len());
        let c = split_stats(&xs[from..candidate], &xs[candidate..to], candidate);
        if c.pvalue > pvalue {
            return at;
        }
        at.insert(pos, candidate);
    }
}

/// The split of `xs` with the largest energy statistic Q (both sides at
/// least `MIN_SIDE` points), and its Q.
fn best_split(xs: &[f64]) -> Option<(usize, f64)> {
    let n = xs.len();
    if n < 2 * MIN_SIDE {
        return None;
    }
    // d[i][j] = |xi - xj|, and prefix sums over rows and columns make each
    // split's three sums O(1) after O(n^2) work.
    let mut within_left = vec![0.0; n + 1]; // sum over i < j < t of d
    for t in 1..=n {
        let add: f64 = (0..t - 1).map(|i| (xs[i] - xs[t - 1]).abs()).sum();
        within_left[t] = within_left[t - 1] + add;
    }
    let mut within_right = vec![0.0; n + 1]; // sum over t <= i < j of d
    for t in (0..n).rev() {
        let add: f64 = (t + 1..n).map(|j| (xs[t] - xs[j]).abs()).sum();
        within_right[t] = within_right[t + 1] + add;
    }
    let total = within_left[n];
    let mut best: Option<(usize, f64)> = None;
    for t in MIN_SIDE..=n - MIN_SIDE {
        let (m, k) = (t as f64, (n - t) as f64);
        // Pairs across the split: all pairs minus the pairs on each side.
        let across = total - within_left[t] - within_right[t];
        let e = 2.0 * across / (m * k)
            - within_left[t] / (m * (m - 1.0) / 2.0)
            - within_right[t] / (k * (k - 1.0) / 2.0);
        let q = m * k / (m + k) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic generator (xorshift64*) and normal deviates
    /// (Box-Muller), so that the tests need no seed crate.
    struct Noise(u64);
    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            let (u, v) = (self.uniform().max(1e-12), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
    }

    #[test]
    fn the_t_test_agrees_with_scipy() {
        // scipy.stats.ttest_ind_from_stats (scipy 1.x, equal_var=True):
        // (10, 1, 5, 12, 1.5, 7) -> 0.02732292020295866 and
        // (100, 3, 20, 112, 4, 15) -> 1.1007593981971526e-11.
        let p = t_test(5, 10.0, 1.0, 7, 12.0, 1.5);
        assert!((p - 0.02732292020295866).abs() < 1e-12, "{p}");
        let p = t_test(20, 100.0, 3.0, 15, 112.0, 4.0);
        assert!((p / 1.1007593981971526e-11 - 1.0).abs() < 1e-6, "{p}");
        assert_eq!(t_test(3, 1.0, 0.0, 3, 1.0, 0.0), 1.0);
        assert_eq!(t_test(3, 1.0, 0.0, 3, 2.0, 0.0), 0.0);
    }

    #[test]
    fn a_step_is_found_where_it_is_and_a_flat_series_has_none() {
        let mut noise = Noise(7);
        let xs: Vec<f64> = (0..30)
            .map(|i| if i < 12 { 100.0 } else { 120.0 } * (1.0 + 0.02 * noise.normal()))
            .collect();
        let found = change_points(&xs, &Options::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].index, 12);
        assert!((found[0].change() - 0.2).abs() < 0.03, "{found:?}");
        let flat: Vec<f64> = (0..60)
            .map(|_| 100.0 * (1.0 + 0.02 * noise.normal()))
            .collect();
        assert!(change_points(&flat, &Options::default()).is_empty());
    }

    #[test]
    fn ten_runs_with_a_step_after_the_third() {
        // The nightly loop's shape: 3 runs, then 7 slower.
        let xs = [
            61.0, 63.0, 60.0, 112.0, 110.0, 115.0, 111.0, 109.0, 113.0, 110.0,
        ];
        let found = change_points(&xs, &Options::default());
        assert_eq!(found.iter().map(|c| c.index).collect::<Vec<_>>(), [3]);
    }

    /// Synthetic series of this VM's kind of noise (2% run to run, and one
    /// run in 25 cut by a host throttle by 10-30%), with steps of 5-30% up
    /// or down every 15-40 runs: the change points found are the true ones
    /// (within 2 runs) with a precision and a recall of at least 0.9.
    #[test]
    fn precision_and_recall_on_synthetic_series() {
        let mut noise = Noise(0x5eed);
        let (mut hits, mut found_n, mut true_n) = (0, 0, 0);
        for _ in 0..40 {
            let mut xs = Vec::new();
            let mut truth = Vec::new();
            let mut level: f64 = 1000.0;
            while xs.len() < 200 {
                let len = 15 + (noise.uniform() * 26.0) as usize;
                for _ in 0..len {
                    let mut x = level * (1.0 + 0.02 * noise.normal());
                    if noise.uniform() < 0.04 {
                        x *= 1.0 - (0.1 + 0.2 * noise.uniform());
                    }
                    xs.push(x);
                }
                let step = 0.05 + 0.25 * noise.uniform();
                level *= if noise.uniform() < 0.5 {
                    1.0 + step
                } else {
                    1.0 - step
                };
                truth.push(xs.len());
            }
            truth.pop();
            truth.retain(|&t| t < xs.len());
            let found: Vec<usize> = analyse(&xs, &Options::default())
                .changes
                .iter()
                .map(|c| c.index)
                .collect();
            hits += found
                .iter()
                .filter(|&&f| truth.iter().any(|&t| t.abs_diff(f) <= 2))
                .count();
            found_n += found.len();
            true_n += truth.len();
        }
        let precision = hits as f64 / found_n as f64;
        let recall = hits as f64 / true_n as f64;
        eprintln!("precision {precision:.3}, recall {recall:.3} ({true_n} true changes)");
        assert!(
            precision >= 0.9 && recall >= 0.9,
            "precision {precision}, recall {recall}"
        );
    }

    /// `n` runs at `level` with relative noise `sd` (normal).
    fn level(noise: &mut Noise, n: usize, level: f64, sd: f64) -> Vec<f64> {
        (0..n)
            .map(|_| level * (1.0 + sd * noise.normal()))
            .collect()
    }

    fn indexes(a: &Analysis) -> (Vec<usize>, Vec<usize>) {
        (
            a.changes.iter().map(|c| c.index).collect(),
            a.outliers.iter().map(|o| o.index).collect(),
        )
    }

    /// Issue 45: ten runs at ~1000/s (c01-c10), ten at ~500/s (c11-c20),
    /// one at 2000/s (c21). The t-test over every run sees no change (the
    /// 2000 widens the spread); left out as an outlier, the step is found
    /// at c11 (index 10), and c21 is named.
    #[test]
    fn issue_45_one_outlier_cannot_hide_a_step() {
        let mut noise = Noise(45);
        let mut xs = level(&mut noise, 10, 1000.0, 0.02);
        xs.extend(level(&mut noise, 10, 500.0, 0.02));
        let o = Options::default();
        assert_eq!(indexes(&analyse(&xs, &o)), (vec![10], vec![]));
        xs.push(2000.0);
        // What the t-test alone answered.
        assert!(change_points(&xs, &o).is_empty());
        let a = analyse(&xs, &o);
        assert_eq!(indexes(&a), (vec![10], vec![20]), "{a:?}");
        assert!((a.outliers[0].ratio() - 4.0).abs() < 0.2, "{a:?}");
        assert!((a.changes[0].change() + 0.5).abs() < 0.02, "{a:?}");
        assert!(a.changes[0].pvalue < 1e-10, "{a:?}");
        // An outlier in the middle of a level, and one at the start.
        let mut ys = xs.clone();
        ys[4] = 3000.0;
        ys[0] = 200.0;
        assert_eq!(indexes(&analyse(&ys, &o)), (vec![10], vec![0, 4, 20]));
    }

    /// Two runs out together are not outliers: they may be a change
    /// starting at the end of the series.
    #[test]
    fn two_runs_out_together_are_no_outliers() {
        let mut noise = Noise(2);
        let mut xs = level(&mut noise, 12, 1000.0, 0.02);
        xs.extend([2000.0, 2010.0]);
        let a = analyse(&xs, &Options::default());
        assert!(a.outliers.is_empty(), "{a:?}");
        assert_eq!(indexes(&a).0, vec![12]);
    }

    /// One step of -30% after 20 runs, in noise of 5%, 10% and 20% (run to
    /// run): found at run 20 (within one run at 20%), and nothing else.
    #[test]
    fn one_step_in_noise_of_5_10_and_20_percent() {
        for (sd, seed, slack) in [(0.05, 5, 0), (0.10, 10, 0), (0.20, 20, 1)] {
            let mut noise = Noise(seed);
            let mut xs = level(&mut noise, 20, 1000.0, sd);
            xs.extend(level(&mut noise, 20, 700.0, sd));
            let a = analyse(&xs, &Options::default());
            assert_eq!(a.changes.len(), 1, "noise {sd}: {a:?}");
            assert!(
                a.changes[0].index.abs_diff(20) <= slack,
                "noise {sd}: {a:?}"
            );
            assert!(a.changes[0].mean_after < a.changes[0].mean_before);
        }
    }

    /// Two steps (-20% after 15 runs, +37.5% after 30): both, in place.
    #[test]
    fn two_steps_are_both_found() {
        let mut noise = Noise(22);
        let mut xs = level(&mut noise, 15, 1000.0, 0.03);
        xs.extend(level(&mut noise, 15, 800.0, 0.03));
        xs.extend(level(&mut noise, 15, 1100.0, 0.03));
        let a = analyse(&xs, &Options::default());
        assert_eq!(indexes(&a), (vec![15, 30], vec![]), "{a:?}");
    }

    /// A slow drift (-0.5% a run over 40 runs, 2% noise) has no one step,
    /// but it is no flat series either: it reads as a staircase of falls
    /// (each at least the 5% that counts), which together make the drift's
    /// -19.5% within a few points.
    #[test]
    fn a_slow_drift_is_split_into_falls() {
        let mut noise = Noise(40);
        let xs: Vec<f64> = (0..40)
            .map(|i| 1000.0 * (1.0 - 0.005 * i as f64) * (1.0 + 0.02 * noise.normal()))
            .collect();
        let a = analyse(&xs, &Options::default());
        assert!(!a.changes.is_empty(), "{a:?}");
        assert!(
            a.changes.iter().all(|c| c.mean_after < c.mean_before),
            "{a:?}"
        );
        let (first, last) = (a.changes[0], a.changes[a.changes.len() - 1]);
        let total = last.mean_after / first.mean_before - 1.0;
        // The level means of the first and last segments, not their ends.
        assert!((-0.20..=-0.10).contains(&total), "{total} {a:?}");
        assert!(a.outliers.is_empty(), "{a:?}");
    }

    /// Issue 45: p99 rising 2.7x (about 390 us to 1.1 ms) at the sixth of
    /// ten runs, with this VM's spread of p99 run to run and one run
    /// before the change caught in a 2 ms stall: flagged at the sixth run,
    /// and the stalled run named as an outlier.
    #[test]
    fn issue_45_a_p99_that_rose_2_7x_is_flagged() {
        let p99_us = [
            372.0, 405.0, 388.0, 2100.0, 395.0, 1050.0, 1180.0, 980.0, 1230.0, 1100.0,
        ];
        let a = analyse(&p99_us, &Options::default());
        assert_eq!(indexes(&a), (vec![5], vec![3]), "{a:?}");
        let c = a.changes[0];
        assert!((c.change() - 1.8).abs() < 0.2, "{c:?}");
        // The t-test over every run: the stall widens the spread of the
        // runs before the change, and the step no longer passes.
        assert!(change_points(&p99_us, &Options::default()).is_empty());
    }
}
