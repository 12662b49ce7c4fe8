//! A run for the terminal: the headline (what is about to run, and where)
//! and the final summary, in the order of the messenger report's
//! `all(depth=N)` block, with latency percentiles, CPU cost, the S3
//! operations table, the objectives and the repetitions' spread added.

use std::io::{self, Write};
use std::path::Path;
use wirebench_core::hist::LatencySummary;
use wirebench_core::result::{Placement, RunResult, RunState};
use wirebench_core::slo::{Slo, SloOutcome};
use wirebench_core::spec::{Endpoint, RunSpec, StopSpec, TargetSpec};
use wirebench_core::units::{format_ns, format_size, whole};

mod parts;
mod search;
pub use parts::ramp_lines;
use parts::{print_agents, print_endpoints, print_stages};
pub use search::print_search;

/// One line saying what is about to run, and where.
/// Where the load runs: the client CPUs, or the agents.
fn clients_where(spec: &RunSpec, p: &Placement) -> String {
    if spec.agents.is_empty() {
        return format!("on CPUs {}", p.client_cpus);
    }
    let each: Vec<String> = spec
        .agents
        .iter()
        .map(|a| match a.weight {
            1 => a.address.clone(),
            w => format!("{} (weight {w})", a.address),
        })
        .collect();
    format!("on {} agents: {}", spec.agents.len(), each.join(", "))
}

pub fn headline(
    spec: &RunSpec,
    p: &Placement,
    endpoint: &Endpoint,
    server_pid: Option<u32>,
) -> String {
    let t = &spec.transport;
    let sizes = t.describe().workload(spec.depth);
    let stop = match spec.stop {
        StopSpec::DurationNs(ns) => format!("{} s", ns as f64 / 1e9),
        StopSpec::Count(c) => format!("{c} ops"),
    };
    let server = match &spec.target {
        TargetSpec::Embedded {
            arch, cpus, poll, ..
        } => format!(
            "embedded {} server{} (pid {}) on CPUs {cpus}",
            arch.map_or(spec.kind().to_string(), |a| a.to_string()),
            if *poll { ", busy-polling" } else { "" },
            server_pid.unwrap_or(0)
        ),
        TargetSpec::External { .. } if spec.observe.is_some() => "observed server".to_string(),
        TargetSpec::External { .. } => "external server".to_string(),
        TargetSpec::None => "no server".to_string(),
    };
    let load = match spec.rate_per_s {
        Some(_) if !spec.stages.is_empty() => format!(
            "open loop in stages {} ({}, at most {} outstanding per conn)",
            spec.stages
                .iter()
                .map(|s| s.text())
                .collect::<Vec<_>>()
                .join(", "),
            spec.arrival,
            spec.depth
        ),
        Some(rate) => format!(
            "open loop at {rate:.0}/s ({}, at most {} outstanding per conn)",
            spec.arrival, spec.depth
        ),
        None if !spec.stages.is_empty() => format!(
            "closed loop in stages {} (depth {})",
            spec.stages
                .iter()
                .map(|s| s.text())
                .collect::<Vec<_>>()
                .join(", "),
            spec.depth
        ),
        None => format!("depth {}", spec.depth),
    };
    let transport = spec
        .transport
        .describe()
        .headline()
        .unwrap_or_else(|| spec.kind().to_string());
    // Several endpoints: each named, and how the load reaches them.
    let targets = match spec.also_target.is_empty() {
        true => format!("target {endpoint}: {server}"),
        false => {
            let more: Vec<String> = spec.also_target.iter().map(|e| e.to_string()).collect();
            format!(
                "targets {endpoint}, {}: {}",
                more.join(", "),
                if spec.agents.is_empty() {
                    "the connections dealt to them in turn"
                } else {
                    "an agent's part to each in turn"
                }
            )
        }
    };
    let mut s = match spec.kind().about().own_program {
        true => format!(
            "wirebench run: exec {sizes}, {stop} ({{duration_s}}), {} client(s) x {} conn(s), {load} (as placeholders)\n  {}; the program on CPUs {}",
            spec.clients,
            spec.conns_per_client,
            match &spec.target {
                TargetSpec::None if spec.observe.is_some() => format!(
                    "no target; the server observed{}",
                    server_pid.map_or(String::new(), |p| format!(" (pid {p})"))
                ),
                TargetSpec::None => "no server".to_string(),
                _ => format!("target {endpoint}: {server}"),
            },
            p.client_cpus,
        ),
        false => format!(
            "wirebench run: {transport} {} {sizes}, {} client(s) x {} conn(s), {load}, warm-up {} s, then {stop}\n  {}; clients {}{}",
            t.mode_name(),
            spec.clients,
            spec.conns_per_client,
            spec.warmup_ns as f64 / 1e9,
            targets,
            clients_where(spec, p),
            if spec.poll { ", busy-polling" } else { "" },
        ),
    };
    for n in &p.notes {
        s.push_str(&format!("\n  note: {n}"));
    }
    s
}

fn latency_line(out: &mut impl Write, label: &str, l: &LatencySummary) -> io::Result<()> {
    writeln!(
        out,
        "  {label} mean {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        format_ns(l.mean_ns),
        format_ns(l.p50_ns as f64),
        format_ns(l.p90_ns as f64),
        format_ns(l.p99_ns as f64),
        format_ns(l.p999_ns as f64),
        format_ns(l.max_ns as f64)
    )
}

/// An exec run: the latency statistics the program gave (no others),
/// then every figure it printed and how it measured them.
fn tool_lines(out: &mut impl Write, s: &wirebench_core::result::Summary) -> io::Result<()> {
    let Some(t) = &s.tool else { return Ok(()) };
    let l = &s.latency;
    let stats: Vec<String> = [
        ("mean", l.mean_ns),
        ("min", l.min_ns as f64),
        ("p50", l.p50_ns as f64),
        ("p90", l.p90_ns as f64),
        ("p99", l.p99_ns as f64),
        ("p999", l.p999_ns as f64),
        ("p9999", l.p9999_ns as f64),
        ("max", l.max_ns as f64),
    ]
    .into_iter()
    .filter(|(k, _)| s.has_latency(k))
    .map(|(k, v)| {
        let name = match k {
            "p999" => "p99.9",
            "p9999" => "p99.99",
            k => k,
        };
        format!("{name} {}", format_ns(v))
    })
    .collect();
    if stats.is_empty() {
        writeln!(out, "  latency:           none given by {}", t.program)?;
    } else {
        writeln!(out, "  latency ({}'s):  {}", t.program, stats.join("  "))?;
    }
    writeln!(
        out,
        "  program:           {} ({}), read by --parser {}",
        t.program, t.exit, t.parser
    )?;
    for (name, v) in &t.figures {
        writeln!(out, "    {name}: {v}")?;
    }
    for m in &t.method {
        writeln!(out, "  how:               {m}")?;
    }
    Ok(())
}

/// The S3 table: per operation type, ops/s, MiB/s, latency and time to
/// first byte; then failures by cause, and the phases run apart.
fn print_ops(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    let f = |ns: u64| format_ns(ns as f64);
    writeln!(
        out,
        "  {:<7} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "op", "ops", "errors", "ops/s", "MiB/s", "mean", "p99", "ttfb mean", "ttfb p99"
    )?;
    for (op, o) in &s.by_op {
        let (tm, t99) = match &o.ttfb {
            Some(t) => (f(whole(t.mean_ns)), f(t.p99_ns)),
            None => ("-".into(), "-".into()),
        };
        writeln!(
            out,
            "  {op:<7} {:>9} {:>7} {:>9.1} {:>9.2} {:>9} {:>9} {tm:>10} {t99:>10}",
            o.ops,
            o.errors,
            o.ops_per_s,
            o.mib_per_s,
            f(whole(o.latency.mean_ns)),
            f(o.latency.p99_ns),
        )?;
    }
    // Connections the operations opened themselves (HTTP churn,
    // reconnects): what connecting and the TLS handshake took of them.
    for (op, o) in &s.by_op {
        for (what, l) in [("connect", &o.connect), ("TLS handshake", &o.tls)] {
            if let Some(l) = l {
                writeln!(
                    out,
                    "  {op} {what}: mean {}  p50 {}  p99 {}  max {} (connections the operations opened)",
                    f(whole(l.mean_ns)),
                    f(l.p50_ns),
                    f(l.p99_ns),
                    f(l.max_ns)
                )?;
            }
        }
    }
    // Answers by status class (HTTP), failed ones included.
    for (op, o) in s.by_op.iter().filter(|(_, o)| !o.statuses.is_empty()) {
        let classes: Vec<String> = o
            .statuses
            .iter()
            .map(|(class, n)| format!("{class} {n}"))
            .collect();
        writeln!(out, "  {op} statuses: {}", classes.join(", "))?;
    }
    for (cause, n) in &s.failures {
        writeln!(out, "  failed:            {n} x {cause}")?;
    }
    let things = if r.spec.transport.kv().is_some() {
        "keys"
    } else {
        "objects"
    };
    for (name, p) in [("prepare", &r.prepare), ("cleanup", &r.cleanup)] {
        if let Some(p) = p {
            writeln!(
                out,
                "  {name}:{:w$}{} {things}, {} in {:.2} s{}",
                "",
                p.objects,
                format_size(p.bytes),
                p.seconds,
                if p.errors > 0 {
                    format!(", {} errors", p.errors)
                } else {
                    String::new()
                },
                w = 18 - name.len()
            )?;
        }
    }
    Ok(())
}

pub fn print(out: &mut impl Write, r: &RunResult, path: &Path) -> io::Result<()> {
    let s = &r.summary;
    writeln!(out, "-------------- summary --------------")?;
    writeln!(
        out,
        "all(clients={} x conns={} x depth={}):",
        r.spec.clients, r.spec.conns_per_client, r.spec.depth
    )?;
    writeln!(out, "  status:            {}", state_text(r))?;
    count_lines(out, r)?;
    latency_lines(out, r)?;
    if !s.by_op.is_empty() {
        print_ops(out, r)?;
    }
    cpu_lines(out, r)?;
    print_server_threads(out, r)?;
    if let Some(st) = r.server.as_ref().and_then(|s| s.stats.as_ref()) {
        writeln!(
            out,
            "  server:            {} conns accepted, {} refused, most outstanding on a conn {}",
            st.conns_accepted, st.conns_refused, st.max_outstanding_per_conn
        )?;
    }
    if s.errors > 0 {
        writeln!(out, "  errors:            {}", s.errors)?;
    }
    print_agents(out, r)?;
    print_endpoints(out, r)?;
    print_stages(out, r)?;
    writeln!(out, "  result:            {}", path.display())?;
    for w in &r.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

/// A run's status, with why when it has a reason.
fn state_text(r: &RunResult) -> String {
    match r.status.state {
        // Complete, ended early by --abort-on-fail: why.
        RunState::Complete => match &r.status.reason {
            Some(why) => format!("complete ({why})"),
            None => "complete".to_string(),
        },
        RunState::Interrupted => {
            format!("interrupted ({})", r.status.reason.as_deref().unwrap_or(""))
        }
        RunState::Failed => format!("failed ({})", r.status.reason.as_deref().unwrap_or("")),
        RunState::Degraded => format!("degraded ({})", r.status.reason.as_deref().unwrap_or("")),
    }
}

/// What was sent and received, in what time, at what rate.
fn count_lines(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    if s.tool.is_none() || s.connect_time_ns > 0 {
        writeln!(
            out,
            "  connect time:      {:.6} s",
            s.connect_time_ns as f64 / 1e9
        )?;
    }
    writeln!(out, "  messages sent:     {}", s.messages_sent)?;
    // Requests and answers that cross the phase's edges: said, not hidden.
    let why = match s.messages_received.cmp(&s.messages_sent) {
        _ if !r.spec.transport.has_response() => String::new(),
        std::cmp::Ordering::Equal => String::new(),
        std::cmp::Ordering::Greater => format!(
            " ({} more than sent in the measured phase: requests sent in the warm-up, answered in it)",
            s.messages_received - s.messages_sent
        ),
        std::cmp::Ordering::Less => format!(
            " ({} fewer than sent: requests in flight when the measured phase ended)",
            s.messages_sent - s.messages_received
        ),
    };
    writeln!(out, "  messages received: {}{why}", s.messages_received)?;
    writeln!(
        out,
        "  messaging time:    {:.6} s",
        s.measured_ns as f64 / 1e9
    )?;
    writeln!(out, "  ops/s:             {:.1}", s.ops_per_s)?;
    writeln!(
        out,
        "  throughput:        out {:.3} MiB/s, in {:.3} MiB/s (payload)",
        s.mib_per_s_out, s.mib_per_s_in
    )?;
    if let (Some(o), Some(i)) = (s.wire_bytes_out, s.wire_bytes_in) {
        let secs = s.measured_ns as f64 / 1e9;
        if secs > 0.0 {
            writeln!(
                out,
                "  on the wire:       out {:.3} MiB/s, in {:.3} MiB/s (with {} B frame headers)",
                wirebench_core::units::mib(o as f64 / secs),
                wirebench_core::units::mib(i as f64 / secs),
                r.spec.transport.frame_header_bytes()
            )?;
        }
    }
    if let Some(rate) = s.requested_rate_per_s {
        writeln!(
            out,
            "  rate:              asked {rate:.0}/s, sent {:.1}/s, completed {:.1}/s",
            s.sent_per_s, s.ops_per_s
        )?;
    }
    Ok(())
}

/// The latency lines: round trip, from the intended send (with service
/// time and schedule lag), a program's own, or why there are none.
fn latency_lines(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    let open = r.spec.rate_per_s.is_some();
    let stream = r.spec.transport.describe().is_stream();
    let one_way = r.spec.transport.describe().one_way();
    match () {
        _ if s.tool.is_some() => tool_lines(out, s)?,
        _ if stream => writeln!(
            out,
            "  latency:           n/a (stream: the client only receives)"
        )?,
        _ if s.latency.count == 0 => writeln!(out, "  latency:           none measured")?,
        _ => {
            let what = match (one_way, open) {
                (_, true) => "from the intended send",
                (true, false) => "send call",
                _ => "round trip",
            };
            latency_line(out, &format!("latency ({what}):"), &s.latency)?;
            if open {
                latency_line(
                    out,
                    "service time (from the actual send):",
                    &s.service_latency,
                )?;
                if let Some(lag) = &s.schedule_lag {
                    latency_line(out, "schedule lag (send - intended):", lag)?;
                }
            }
        }
    }
    Ok(())
}

/// CPU time, platform stalls, run-queue wait, the CPUs and the limit, and
/// peak memory.
fn cpu_lines(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    let server_cpu = match (s.server_cpu_s, s.server_cpu_us_per_op) {
        (Some(c), Some(p)) => format!(", server {c:.2} s ({p:.2} us/op)"),
        _ => String::new(),
    };
    writeln!(
        out,
        "  CPU:               client {:.2} s ({:.2} us/op){server_cpu}",
        s.client_cpu_s, s.client_cpu_us_per_op
    )?;
    if let Some(h) = s.hiccup {
        writeln!(
            out,
            "  platform stalls:   p99 {}, max {}, {:.1} ms lost; {} second(s) over {} (hiccup meter{})",
            format_ns(h.p99_ns as f64),
            format_ns(h.max_ns as f64),
            h.lost_s * 1e3,
            h.stalled_seconds,
            format_ns(h.threshold_ns as f64),
            match h.period_ns {
                0 => String::new(),
                p => format!(", a probe every {}", format_ns(p as f64)),
            }
        )?;
    }
    if let Some(c) = s.client_runq_wait_s {
        let server = s
            .server_runq_wait_s
            .map(|w| format!(", server {:.1} ms", w * 1e3))
            .unwrap_or_default();
        writeln!(
            out,
            "  run-queue wait:    client {:.1} ms{server} (runnable, waiting for a CPU)",
            c * 1e3
        )?;
    }
    let server_cpus = r
        .placement
        .server_cpus
        .as_ref()
        .map(|c| format!(", server {c}"))
        .unwrap_or_default();
    if r.agents.is_empty() {
        writeln!(
            out,
            "  CPUs:              client {} (busiest {:.1}% busy){server_cpus}",
            r.placement.client_cpus, s.client_core_max_busy_pct
        )?;
        if let Some(limit) = limit_line(r) {
            writeln!(out, "  limit:             {limit}")?;
        }
    }
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let server_rss = s
        .server_peak_rss_bytes
        .map(|b| format!(", server {:.1} MiB", mib(b)))
        .unwrap_or_default();
    writeln!(
        out,
        "  peak RSS:          client {:.1} MiB{server_rss}",
        mib(s.client_peak_rss_bytes)
    )?;
    Ok(())
}

/// Below this share of its CPUs a side did not run out of CPU (at
/// `BOUND_PCT`, 90%, it did: between the two, neither is said).
const WELL_BELOW_PCT: f64 = 70.0;

/// Which side ran out of CPU: the run's verdicts (client-bound,
/// server-bound, both), or, in a closed loop where both sides' CPU is
/// known (the embedded server, or one observed) and each used well below
/// its CPUs, that neither did; between the two, undecided. None where CPU
/// says nothing of the load (busy-polling, an exec program, an open loop
/// that kept its rate).
fn limit_line(r: &RunResult) -> Option<String> {
    let s = &r.summary;
    if r.spec.poll || s.tool.is_some() {
        return None;
    }
    let c = s.client_cpu_pct?;
    let closed = r.spec.rate_per_s.is_none() && r.spec.stages.is_empty();
    let server_cpus = r.placement.server_cpus.as_ref().map_or(0, |c| c.len());
    let client = format!("the client used {c:.0}% of the CPU(s) it may use");
    Some(match (s.client_bound, s.server_bound, s.server_cpu_pct) {
        (true, true, sv) => format!(
            "either side: {client}, the server {:.0}% of its {server_cpus}",
            sv.unwrap_or(0.0)
        ),
        (true, false, _) => format!("the client: {client} (a faster server would not show)"),
        (false, true, sv) => format!(
            "the server: it used {:.0}% of its {server_cpus} CPU(s)",
            sv.unwrap_or(0.0)
        ),
        _ if !closed => return None,
        (false, false, Some(sv)) if c < WELL_BELOW_PCT && sv < WELL_BELOW_PCT => format!(
            "neither side ran out of CPU ({client}, the server {sv:.0}% of its {server_cpus}): the round trip sets the rate (each connection waits on its {} outstanding), or the network, locks or the protocol",
            r.spec.depth
        ),
        (false, false, Some(sv)) => format!(
            "undecided: {client} and the server {sv:.0}% of its {server_cpus}, neither near all its CPUs nor well below"
        ),
        (false, false, None) => format!(
            "{client}; the server's CPU was not observed (--server-pid, --server-cmd or --server-cgroup)"
        ),
    })
}

/// The server's cores actually used, its CPU by thread group, its context
/// switches, and its threads outside its cpuset.
fn print_server_threads(out: &mut impl Write, r: &RunResult) -> io::Result<()> {
    let s = &r.summary;
    if let (Some(used), Some(per_core)) = (s.server_cores_used, s.ops_per_core_used) {
        let of = r
            .placement
            .server_cpus
            .as_ref()
            .map(|c| format!(" (its cpuset: {} CPU(s), {c})", c.len()))
            .unwrap_or_default();
        writeln!(
            out,
            "  server cores used: {used:.2}{of}; {} ops/s per core used",
            fmt_count(per_core)
        )?;
    }
    let Some(t) = &s.server_threads else {
        return Ok(());
    };
    let shown: Vec<String> = t
        .groups
        .iter()
        .filter(|g| g.cpu_pct >= 0.5)
        .take(6)
        .map(|g| {
            let n = if g.threads > 1 {
                format!(" x{}", g.threads)
            } else {
                String::new()
            };
            format!("{}{n} {:.0}%", g.group, g.cpu_pct)
        })
        .collect();
    if !shown.is_empty() {
        writeln!(
            out,
            "  server threads:    {} (% of one core)",
            shown.join(", ")
        )?;
    }
    writeln!(
        out,
        "  context switches:  server {} voluntary, {} involuntary",
        t.voluntary_switches, t.involuntary_switches
    )?;
    for o in t.outside_cpuset.iter().take(8) {
        let mut why = Vec::new();
        if !o.ran_outside.is_empty() {
            let cpus: Vec<String> = o.ran_outside.iter().map(|c| c.to_string()).collect();
            why.push(format!("ran on CPU {}", cpus.join(",")));
        }
        if let Some(a) = &o.allowed {
            why.push(format!("may run on {a}"));
        }
        let set = t
            .cpuset
            .as_ref()
            .map(|c| format!(" {c}"))
            .unwrap_or_default();
        writeln!(
            out,
            "  outside cpuset{set}: thread {} (tid {}) {}; {:.2} s CPU",
            o.name,
            o.tid,
            why.join(", "),
            o.cpu_s
        )?;
    }
    Ok(())
}

/// A count with thousands separated: 12,345.
fn fmt_count(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line per objective: pass or MISSED, with the run's value.
pub fn print_slos(out: &mut impl Write, slos: &[Slo], outcomes: &[SloOutcome]) -> io::Result<()> {
    for (slo, o) in slos.iter().zip(outcomes) {
        writeln!(
            out,
            "  slo {:<14} {} ({}{})",
            slo.text,
            if o.pass { "pass" } else { "MISSED" },
            if o.windows.is_some() {
                "worst window "
            } else {
                "actual "
            },
            slo.format_value(o.actual)
        )?;
        if let Some(w) = &o.windows {
            let missed: Vec<String> = w
                .iter()
                .filter(|w| !w.pass)
                .map(|w| {
                    format!(
                        "{:.0}-{:.0}s: {}",
                        w.from_s,
                        w.to_s,
                        slo.format_value(w.actual)
                    )
                })
                .collect();
            if !missed.is_empty() {
                writeln!(
                    out,
                    "      missed in {} of {} windows: {}",
                    missed.len(),
                    w.len(),
                    missed.join(", ")
                )?;
            }
        }
    }
    Ok(())
}

/// The spread of each metric over repeated runs.
pub fn print_repetitions(
    out: &mut impl Write,
    agg: &wirebench_core::result::Repetitions,
) -> io::Result<()> {
    writeln!(
        out,
        "-------------- {} repetitions --------------",
        agg.runs.len()
    )?;
    writeln!(
        out,
        "  {:<22} {:>12} {:>12} {:>12} {:>12}",
        "metric", "mean", "95% CI +-", "min", "max"
    )?;
    for (name, s) in &agg.metrics {
        let f = |v: f64| {
            if name.ends_with("_ns") {
                format_ns(v)
            } else {
                format!("{v:.2}")
            }
        };
        writeln!(
            out,
            "  {:<22} {:>12} {:>12} {:>12} {:>12}",
            name,
            f(s.mean),
            f(s.ci95),
            f(s.min),
            f(s.max)
        )?;
    }
    if !agg.drifting.is_empty() {
        writeln!(
            out,
            "warning: throughput drifts (not stationary) in: {}",
            agg.drifting.join(", ")
        )?;
    }
    Ok(())
}

/// An ipc-compare's variants: medians with their range, ratios to the Unix
/// socket, and where the runs are.
pub fn print_ipc(
    out: &mut impl Write,
    rows: &[wirebench_core::summaries::IpcRow],
    dir: &Path,
    runs: usize,
) -> io::Result<()> {
    use crate::export::{Document, Exporter, Table, TextExporter};
    use wirebench_core::units::format_rate;
    let opt = |x: Option<f64>, f: &dyn Fn(f64) -> String| x.map_or("-".to_string(), f);
    let span = |lo: f64, hi: f64, f: &dyn Fn(f64) -> String| format!("({}-{})", f(lo), f(hi));
    let mut t = Table::new([
        "variant",
        "ops/s",
        "(min-max)",
        "messages/s",
        "p50",
        "(min-max)",
        "p99",
        "CPU us/op",
        "x unix",
        "p50/unix",
    ]);
    for r in rows {
        t.row([
            r.variant.clone(),
            format_rate(r.ops_per_s),
            span(r.ops_per_s_min, r.ops_per_s_max, &format_rate),
            format_rate(r.messages_per_s),
            opt(r.p50_ns, &format_ns),
            r.p50_ns_range
                .map_or("-".into(), |(lo, hi)| span(lo, hi, &format_ns)),
            opt(r.p99_ns, &format_ns),
            format!("{:.2}", r.client_cpu_us_per_op),
            opt(r.ops_vs_unix, &|x| format!("{x:.2}x")),
            opt(r.p50_vs_unix, &|x| format!("{x:.3}")),
        ]);
    }
    write!(out, "{}", TextExporter.export(&Document::new("").table(t)))?;
    writeln!(
        out,
        "medians over the rounds (the lowest and highest round in brackets); a round trip is two messages; shm-spin keeps a core busy on each side"
    )?;
    writeln!(
        out,
        "results: {} ({} runs, a directory per variant: compare or report them)",
        dir.display(),
        runs
    )?;
    Ok(())
}

/// What `run --repeat N` prints after its runs: the repetitions' summary
/// (text) or their aggregate (json), and where the group of runs is.
pub fn print_repetitions_as(
    out: &mut impl Write,
    format: wirebench_core::request::Format,
    agg: Option<&wirebench_core::result::Repetitions>,
    group: Option<&Path>,
) -> io::Result<()> {
    use wirebench_core::request::Format;
    let Some(agg) = agg else {
        return Ok(());
    };
    match format {
        Format::Text => {
            print_repetitions(out, agg)?;
            if let Some(g) = group {
                writeln!(
                    out,
                    "  runs in {} (compare and report take it as one variant)",
                    g.display()
                )?;
            }
        }
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, agg)?;
            writeln!(out)?;
        }
        Format::Csv => {}
    }
    out.flush()
}
