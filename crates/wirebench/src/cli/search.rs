//! `wirebench search`: the highest rate a server takes within its
//! objectives. Open-loop steps against one server: a coarse phase (x1.5 per
//! step) until a step misses an objective or the server cannot keep up,
//! then bisection down to `--precision`. Every step is a full result kept
//! under `<results>/search-<id>/`.

use super::args;
use super::run::{self, EXIT_SLO_MISSED, RunArgs, Session};
use crate::usage;
use anyhow::Context;
use clap::Args;
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;
use wirebench_core::hist;
use wirebench_core::result::RunState;
use wirebench_core::slo::SloOutcome;
use wirebench_core::store;
use wirebench_core::topo::Topology;
use wirebench_core::units::{format_ns, format_rate};

#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    run: RunArgs,
    /// First rate of the coarse phase.
    #[arg(long, default_value = "1000", value_parser = args::rate)]
    start_rate: f64,
    /// Bisection stops when the highest passing and the lowest failing rate
    /// are closer than this fraction.
    #[arg(long, default_value_t = 0.05)]
    precision: f64,
    /// A step passes only when every objective is met with this fraction to spare
    /// (p99<5ms with 0.2: p99 at most 4 ms), so that the rate found still holds when
    /// run again on a noisy machine. 0 for the bare objectives.
    #[arg(long, default_value_t = 0.2)]
    headroom: f64,
    /// At most this many steps.
    #[arg(long, default_value_t = 16)]
    max_steps: usize,
}

/// One open-loop step.
#[derive(Debug, Clone, Serialize)]
struct Step {
    rate_per_s: f64,
    sent_per_s: f64,
    completed_per_s: f64,
    p50_ns: u64,
    p99_ns: u64,
    slos: Vec<SloOutcome>,
    /// Every objective met with the headroom, and the server kept up
    /// (completed >= 95% of the rate).
    pass: bool,
    run_id: String,
}

#[derive(Debug, Serialize)]
struct SearchResult {
    slos: Vec<String>,
    headroom: f64,
    steps: Vec<Step>,
    /// The highest rate that met every objective with the headroom, twice.
    best_rate_per_s: Option<f64>,
    /// The most operations per second completed in any step.
    saturation_ops_per_s: f64,
    interrupted: bool,
}

pub fn search(a: SearchArgs) -> anyhow::Result<ExitCode> {
    let slos = a.run.slos()?;
    if slos.is_empty() {
        usage!("search needs at least one --slo, e.g. --slo 'p99<1ms'");
    }
    if a.run.rate.is_some() {
        usage!("--rate: search chooses the rates itself; give --start-rate instead");
    }
    if !(0.001..=1.0).contains(&a.precision) {
        usage!("--precision {}: must be between 0.001 and 1", a.precision);
    }
    if !(0.0..0.9).contains(&a.headroom) {
        usage!(
            "--headroom {}: must be at least 0 and below 0.9",
            a.headroom
        );
    }
    if a.max_steps < 2 {
        usage!("--max-steps {}: must be at least 2", a.max_steps);
    }
    let topo = Topology::read();
    let (mut spec, placement) = run::validate(&a.run, &topo)?;
    if !spec.mode.has_response() {
        usage!("--mode {}: search needs responses (echo or rr)", spec.mode);
    }
    if a.run.depth.is_none() {
        spec.depth = 1024;
    }
    let text = a.run.format == "text";
    let root = a.run.results.join(store::new_run_id("search"));
    let mut session = Session::open(&spec)?;
    if text {
        let names: Vec<&str> = slos.iter().map(|s| s.text.as_str()).collect();
        eprintln!(
            "wirebench search: highest open-loop rate meeting {} against {}",
            names.join(", "),
            session.endpoint
        );
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut lo: Option<f64> = None;
    let mut rate = a.start_rate;
    let mut interrupted = false;
    while steps.len() < a.max_steps {
        spec.rate_per_s = Some(rate);
        let mut r = session.measure(&spec, &placement, false);
        r.run_id = store::new_run_id(&format!("step{}", steps.len() + 1));
        r.started_at = store::now_rfc3339();
        r.command_line = super::args::command_line();
        let h = hist::decode(&r.latency_hist)?;
        r.slos = slos.iter().map(|s| s.check(&r.summary, &h)).collect();
        store::save(&root, &r)
            .with_context(|| format!("saving a step under {}", root.display()))?;
        store::append_summary_csv(&root, &r)?;
        if r.status.state != RunState::Complete {
            interrupted = r.status.state == RunState::Interrupted || session.interrupted();
            if !interrupted {
                session.close(None);
                anyhow::bail!(
                    "step at {rate:.0}/s failed: {}",
                    r.status.reason.unwrap_or_default()
                );
            }
            break;
        }
        let keeps_up = r.summary.ops_per_s >= 0.95 * rate;
        let step = Step {
            rate_per_s: rate,
            sent_per_s: r.summary.sent_per_s,
            completed_per_s: r.summary.ops_per_s,
            p50_ns: r.summary.latency.p50_ns,
            p99_ns: r.summary.latency.p99_ns,
            pass: keeps_up
                && slos
                    .iter()
                    .zip(&r.slos)
                    .all(|(slo, o)| slo.holds(o.actual, a.headroom)),
            slos: r.slos.clone(),
            run_id: r.run_id.clone(),
        };
        if text {
            eprintln!(
                "  step {:>2}: {:>8}/s asked, {:>8}/s completed, p50 {:>8}, p99 {:>8}: {}",
                steps.len() + 1,
                format_rate(rate),
                format_rate(step.completed_per_s),
                format_ns(step.p50_ns as f64),
                format_ns(step.p99_ns as f64),
                if step.pass {
                    "pass"
                } else if keeps_up {
                    "missed"
                } else {
                    "missed (server fell behind)"
                }
            );
        }
        steps.push(step);
        // The lowest rate that missed, and the highest that passed below it.
        let hi = steps
            .iter()
            .filter(|s| !s.pass)
            .map(|s| s.rate_per_s)
            .min_by(f64::total_cmp);
        lo = steps
            .iter()
            .filter(|s| s.pass && hi.is_none_or(|h| s.rate_per_s < h))
            .map(|s| s.rate_per_s)
            .max_by(f64::total_cmp);
        // Coarse phase: up by half until the server falls behind, which
        // measures the saturation throughput; then bisection on the
        // objectives between the highest passing and the lowest failing rate.
        let saturated = steps
            .iter()
            .any(|s| s.completed_per_s < 0.95 * s.rate_per_s);
        rate = match (lo, hi) {
            _ if !saturated => steps.iter().map(|s| s.rate_per_s).fold(0.0, f64::max) * 1.5,
            (Some(l), None) => l * 1.5,
            (None, Some(h)) => h / 2.0,
            (Some(l), Some(h)) if h / l - 1.0 > a.precision => (l + h) / 2.0,
            // Bracketed: the best rate must pass twice, the machine being
            // noisy; if the second try misses, the search goes on below it.
            (Some(l), Some(_))
                if steps.iter().filter(|s| s.pass && s.rate_per_s == l).count() < 2 =>
            {
                l
            }
            _ => break,
        };
    }
    session.close(None);
    let result = SearchResult {
        slos: slos.iter().map(|s| s.text.clone()).collect(),
        headroom: a.headroom,
        saturation_ops_per_s: steps.iter().map(|s| s.completed_per_s).fold(0.0, f64::max),
        best_rate_per_s: lo,
        steps,
        interrupted,
    };
    std::fs::create_dir_all(&root)?;
    store::write_atomic(
        &root.join("search.json"),
        &serde_json::to_vec_pretty(&result)?,
    )?;
    let mut out = std::io::stdout().lock();
    if text {
        writeln!(
            out,
            "{:>4} {:>12} {:>12} {:>14} {:>10} {:>10}  objectives",
            "step", "asked/s", "sent/s", "completed/s", "p50", "p99"
        )?;
        let mut sorted: Vec<(usize, &Step)> = result.steps.iter().enumerate().collect();
        sorted.sort_by(|a, b| a.1.rate_per_s.total_cmp(&b.1.rate_per_s));
        for (i, s) in sorted {
            writeln!(
                out,
                "{:>4} {:>12.0} {:>12.1} {:>14.1} {:>10} {:>10}  {}",
                i + 1,
                s.rate_per_s,
                s.sent_per_s,
                s.completed_per_s,
                format_ns(s.p50_ns as f64),
                format_ns(s.p99_ns as f64),
                if s.pass { "pass" } else { "MISSED" }
            )?;
        }
        if result.interrupted {
            writeln!(
                out,
                "interrupted after {} step(s): what follows is partial",
                result.steps.len()
            )?;
        }
        match result.best_rate_per_s {
            Some(b) => writeln!(
                out,
                "highest rate meeting {}: {b:.0}/s",
                result.slos.join(", ")
            )?,
            None => writeln!(out, "no rate tried met {}", result.slos.join(", "))?,
        }
        writeln!(
            out,
            "saturation throughput: {:.0} ops/s",
            result.saturation_ops_per_s
        )?;
        writeln!(out, "steps saved in {}", root.display())?;
    } else {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(if result.interrupted {
        ExitCode::from(130)
    } else if result.best_rate_per_s.is_none() {
        ExitCode::from(EXIT_SLO_MISSED)
    } else {
        ExitCode::SUCCESS
    })
}
