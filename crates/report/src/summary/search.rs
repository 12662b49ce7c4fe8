//! A search's summary: its steps by rate, how each was decided, its answer.

use super::*;

/// A search's steps (by rate), its answers, and what it did not find.
pub fn print_search(
    out: &mut impl Write,
    r: &wirebench_core::summaries::SearchResult,
) -> io::Result<()> {
    search_table(out, r)?;
    search_how(out, r)?;
    search_answer(out, r)?;
    writeln!(out, "steps saved in {}", r.dir.display())?;
    Ok(())
}

/// The steps, a row each, by rate.
fn search_table(
    out: &mut impl Write,
    r: &wirebench_core::summaries::SearchResult,
) -> io::Result<()> {
    use crate::export::{Document, Exporter, Table, TextExporter};
    use wirebench_core::summaries::Step;
    let mut steps: Vec<(usize, &Step)> = r.steps.iter().enumerate().collect();
    steps.sort_by(|a, b| a.1.rate_per_s.total_cmp(&b.1.rate_per_s));
    let mut t = Table::new([
        "step",
        "asked/s",
        "sent/s",
        "completed/s",
        "p50",
        "p99",
        "figure [95% CI]",
        "CPU client/server",
        "objectives",
    ]);
    t.left = vec![6, 7, 8];
    for (i, s) in steps {
        t.row([
            (i + 1).to_string(),
            format!("{:.0}", s.rate_per_s),
            format!("{:.1}", s.sent_per_s),
            format!("{:.1}", s.completed_per_s),
            format_ns(s.p50_ns as f64),
            format_ns(s.p99_ns as f64),
            crate::progress::step_figures(s),
            crate::progress::step_cpu(s),
            step_verdict(s),
        ]);
    }
    write!(out, "{}", TextExporter.export(&Document::new("").table(t)))?;
    Ok(())
}

/// A step's verdict, as its row reads it.
fn step_verdict(s: &wirebench_core::summaries::Step) -> String {
    let v = match (s.pass, s.at_saturation, s.measured_again) {
        _ if s.remeasured => "measured again (its tries vote)",
        (true, false, _) => "pass",
        (true, true, _) => "pass, at saturation",
        (false, _, true) => "missed in a stall: not counted",
        (false, _, false) if s.undecided => "undecided",
        (false, _, false) if !s.kept_up => "MISSED (fell behind)",
        (false, _, false) if s.stalled_seconds > 0 => "MISSED (in a stall)",
        (false, _, false) => "MISSED",
    };
    match s.tries {
        0 | 1 => v.to_string(),
        n if s.voted => format!("{v} ({} of {n} tries held: voted)", s.tries_passed),
        n => format!("{v} ({n} tries pooled)"),
    }
}

/// How the search went: cut short, stalls left out, steps measured again,
/// rates undecided, latency that the load did not set, misses at low rates.
fn search_how(out: &mut impl Write, r: &wirebench_core::summaries::SearchResult) -> io::Result<()> {
    if r.interrupted {
        writeln!(
            out,
            "interrupted after {} step(s): what follows is partial",
            r.steps.len()
        )?;
    } else if r.budget_exhausted {
        writeln!(
            out,
            "the step budget (--max-steps) ran out after {} step(s), before the search bracketed and confirmed its answer: what follows is partial; raise --max-steps or --start-rate",
            r.steps.len()
        )?;
    }
    let left: usize = r.steps.iter().map(|s| s.stalled_left_out).sum();
    if left > 0 {
        writeln!(
            out,
            "{left} measured second(s) in which the platform stalled (the hiccup meter's probe woke late) were left out of the steps' figures"
        )?;
    }
    let again = r.steps.iter().filter(|s| s.measured_again).count();
    if again > 0 {
        writeln!(
            out,
            "{again} step(s) missed in a second the platform stalled in (the hiccup meter's probe woke late): measured again, and not counted"
        )?;
    }
    if !r.missed_in_stalls.is_empty() {
        let rates: Vec<String> = r
            .missed_in_stalls
            .iter()
            .map(|x| format!("{x:.0}/s"))
            .collect();
        writeln!(
            out,
            "warning: the platform stalled in every try at {} ({} tries each): those misses count, but the machine may have failed them, not the server; the answers below may be lower than the server's",
            rates.join(", "),
            wirebench_core::summaries::STALL_RETRIES + 1
        )?;
    }
    let again: Vec<f64> = r
        .steps
        .iter()
        .filter(|s| s.remeasured)
        .map(|s| s.rate_per_s)
        .collect();
    if !again.is_empty() {
        writeln!(
            out,
            "measured again where it decides the answer (the saturation, a rate of the edge under it and the edge rate that missed just above the answer, or a miss alone in the way of a higher band): {}; each try judged alone, two that agree deciding (three of five for a rate already voted)",
            rates_text(&again)
        )?;
    }
    let again = r.steps.iter().filter(|s| s.tries > 1 && !s.voted).count();
    if again > 0 {
        writeln!(
            out,
            "{again} step(s) had an objective's 95% interval straddle it: measured again, the seconds of every try pooled (up to {} tries)",
            wirebench_core::summaries::AGREEMENT_TRIES
        )?;
    }
    if !r.undecided_rates.is_empty() {
        writeln!(
            out,
            "undecided after every try (neither held nor failed, so not counted): {}",
            rates_text(&r.undecided_rates)
        )?;
    }
    if let Some(f) = &r.latency_flat {
        writeln!(
            out,
            "note: {} did not rise with the rate from {:.0}/s to {:.0}/s (between {} and {}, rank correlation {:.2}): the load does not set it",
            f.slo,
            f.from_rate_per_s,
            f.to_rate_per_s,
            format_ns(f.min),
            format_ns(f.max),
            f.rank_correlation
        )?;
    }
    if let (Some((lo, hi)), false) = (r.band, r.missed_below.is_empty()) {
        writeln!(
            out,
            "{} missed at {} and held from {lo:.0}/s to {hi:.0}/s: latency is worse at low rates, most likely wake-ups (a server or client that sleeps between requests wakes for each); those misses do not set the answer",
            r.slos.join(", "),
            rates_text(&r.missed_below)
        )?;
    }
    Ok(())
}

/// The answer, how sure it is, what ran out, and the saturation.
fn search_answer(
    out: &mut impl Write,
    r: &wirebench_core::summaries::SearchResult,
) -> io::Result<()> {
    let top = r.steps.iter().map(|s| s.rate_per_s).fold(0.0, f64::max);
    match (r.best_rate_per_s, r.confirmed, r.band) {
        (Some(b), true, Some((lo, _))) => writeln!(
            out,
            "highest rate meeting {}: {b:.0}/s (the top of the rates that held from {lo:.0}/s, each by its 95% interval)",
            r.slos.join(", ")
        )?,
        (Some(b), true, None) => {
            writeln!(out, "highest rate meeting {}: {b:.0}/s", r.slos.join(", "))?
        }
        (Some(b), false, _) => writeln!(
            out,
            "highest rate meeting {} so far: {b:.0}/s (not confirmed: it held alone, no rate next below it held)",
            r.slos.join(", ")
        )?,
        (None, ..) => writeln!(out, "no rate tried met {}", r.slos.join(", "))?,
    }
    if let Some(n) = &r.not_sharp {
        writeln!(
            out,
            "warning: the answer is not sharp: {} read {} to {} from {:.0}/s to {:.0}/s, all within {:.0}% of the {} a pass must stay under; there it barely tells one rate from another, so a search again may answer anywhere from about half this rate to well above it. For an answer that holds still: an objective further from that level, or longer steps (--duration)",
            n.slo,
            format_ns(n.min),
            format_ns(n.max),
            n.from_rate_per_s,
            n.to_rate_per_s,
            100.0 * (1.0 - wirebench_core::summaries::NEAR_LIMIT),
            format_ns(n.pass_line)
        )?;
    }
    if let Some(l) = &r.limit {
        writeln!(out, "what ran out where the answer ends: {l}")?;
    }
    match r.saturation_ops_per_s {
        Some(s) => {
            writeln!(
                out,
                "saturation throughput: {s:.0} ops/s (the most completed in a step the server fell behind)"
            )?;
            if r.steps.iter().any(|s| s.at_saturation) {
                writeln!(
                    out,
                    "steps at {:.0}/s or more are not taken though they passed: within {:.0}% of the saturation, one hiccup leaves a backlog the server never works off",
                    (1.0 - wirebench_core::summaries::SPARE_CAPACITY) * s,
                    100.0 * wirebench_core::summaries::SPARE_CAPACITY
                )?;
            }
        }
        None => writeln!(
            out,
            "saturation: not reached: the server kept up with every rate tried (up to {top:.0}/s)"
        )?,
    }
    Ok(())
}

/// `1000/s, 2000/s and 4000/s`.
fn rates_text(rates: &[f64]) -> String {
    let v: Vec<String> = rates.iter().map(|r| format!("{r:.0}/s")).collect();
    match v.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
