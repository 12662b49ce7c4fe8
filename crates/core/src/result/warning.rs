//! What the reader of a run's figures must know about it: [`Warning`].

use super::*;

/// The cause of the requests a connection still waited for, far too long,
/// at the end of the run.
pub const UNANSWERED: &str = "no answer by the end of the run";

/// Something about a run that the reader of its figures must know. The
/// rule that raises each one is in the runner's `outcome`; the summary,
/// run.json and the report all read them from here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Warning {
    /// The per-second throughput trends up or down over the measured phase.
    Drift { drift_pct: f64 },
    /// The hypervisor took CPU time from the run's CPUs (steal).
    Steal { max_steal_pct: f64 },
    /// Not a release build.
    DebugBuild,
    /// The client used nearly all the CPU it may use: it may be the limit.
    ClientBound { client_cpu_pct: f64, cpus: usize },
    /// The server used nearly all its CPUs: it is likely the limit.
    ServerBound { server_cpu_pct: f64, cpus: usize },
    /// The observed server's processes used almost no CPU while the run
    /// completed many operations: they are likely not what served them.
    ObservedIdle {
        server_cpu_s: f64,
        ops: u64,
        /// The processes observed at the end (0: not counted).
        processes: usize,
    },
    /// Both did: either may be the limit (never said as two verdicts that
    /// contradict each other).
    BothBound {
        client_cpu_pct: f64,
        client_cpus: usize,
        server_cpu_pct: f64,
        server_cpus: usize,
    },
    /// The run's threads waited for a CPU, or other processes used the
    /// run's CPUs: the figures include contention the server did not cause.
    MachineBusy {
        runq_wait_s: f64,
        foreign_cpu_s: f64,
        measured_s: f64,
        /// The server runs on this host unobserved: its CPU is among the
        /// other processes'.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        server_unobserved: bool,
    },
    /// Busy-polling: the polling cores read 100% busy whatever the load.
    Polling,
    /// Open loop: requests left at a lower rate than asked.
    RateNotSent {
        sent_per_s: f64,
        rate_per_s: f64,
        depth: usize,
    },
    /// Open loop: the server answered (successes and errors) at a lower
    /// rate than asked, or answered with errors so that fewer than asked
    /// succeeded.
    RateNotAnswered {
        /// Successes per second.
        ops_per_s: f64,
        rate_per_s: f64,
        /// Answers that were errors, per second (absent in results of
        /// before it was kept: 0).
        #[serde(default)]
        errors_per_s: f64,
    },
    /// The platform stalled: the hiccup meter's probe woke late by more
    /// than the threshold in some measured seconds.
    Stalls {
        seconds: usize,
        max_ns: u64,
        lost_s: f64,
        threshold_ns: u64,
    },
    /// The trace drain fell behind: events were overwritten unwritten, so
    /// the timelines miss operations (never whole seconds: each ring keeps
    /// its newest events).
    TraceLost {
        side: String,
        lost: u64,
        events: u64,
    },
    /// One load agent stands out: it, not the server, may set the result.
    AgentBound { agent: String, why: String },
    /// Requests still unanswered at the end of the run, waited for far
    /// longer than any answer took: counted as failed, and in the latency
    /// with the requests their connections would have sent meanwhile.
    Unanswered { requests: u64, max_wait_ns: u64 },
    /// A stage of an open loop in stages whose requests left at a lower
    /// rate than it asked: the generator fell behind there.
    StageBehind {
        stage: usize,
        text: String,
        asked_per_s: f64,
        sent_per_s: f64,
        late_sends: u64,
    },
    /// A warning of a result written before warnings were typed (schema 2),
    /// as it was written.
    Note { message: String },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::Drift { drift_pct } => write!(
                f,
                "throughput drifts by {drift_pct:+.0}% over the measured phase: the run is not stationary (warm-up too short, or the server's state changed)"
            ),
            Warning::Steal { max_steal_pct } => write!(
                f,
                "the hypervisor took up to {max_steal_pct:.0}% of a CPU (steal) in a measured second: this run is noisy; repeat it"
            ),
            Warning::DebugBuild => f.write_str("debug build: figures are not representative"),
            Warning::ClientBound {
                client_cpu_pct,
                cpus,
            } => write!(
                f,
                "the client used {client_cpu_pct:.0}% of the {cpus} CPU(s) it may use: the result may be client-bound (a faster server would not show)"
            ),
            Warning::ServerBound {
                server_cpu_pct,
                cpus,
            } => write!(
                f,
                "the server used {server_cpu_pct:.0}% of its {cpus} CPU(s): the result is likely server-bound"
            ),
            Warning::ObservedIdle {
                server_cpu_s,
                ops,
                processes,
            } => write!(
                f,
                "the observed server{} used {server_cpu_s:.3} s of CPU for {ops} operations ({:.3} us each): those processes are likely not what served them (a wrapper or supervisor whose workers are not its descendants: give their PIDs, or --server-cgroup; or the server runs elsewhere: another host, a VM, a container the PID is not in)",
                if *processes > 0 {
                    format!(" ({processes} process(es))")
                } else {
                    String::new()
                },
                server_cpu_s * 1e6 / (*ops).max(1) as f64
            ),
            Warning::BothBound {
                client_cpu_pct,
                client_cpus,
                server_cpu_pct,
                server_cpus,
            } => write!(
                f,
                "the client used {client_cpu_pct:.0}% of the {client_cpus} CPU(s) it may use and the server {server_cpu_pct:.0}% of its {server_cpus}: either may be the limit; give the client more CPUs (or the server fewer) to tell which"
            ),
            Warning::MachineBusy {
                runq_wait_s,
                foreign_cpu_s,
                measured_s,
                server_unobserved: false,
            } => write!(
                f,
                "the machine was busy: the run's threads waited {runq_wait_s:.2} s for a CPU and other processes took {foreign_cpu_s:.2} s of CPU on the run's CPUs, in {measured_s:.1} s measured; the figures include contention the server did not cause"
            ),
            Warning::MachineBusy {
                runq_wait_s,
                foreign_cpu_s,
                measured_s,
                server_unobserved: true,
            } => write!(
                f,
                "the run's CPUs were shared: its threads waited {runq_wait_s:.2} s for a CPU and other processes took {foreign_cpu_s:.2} s of CPU on them, in {measured_s:.1} s measured; the server under test runs on this host unobserved, so its own CPU is among them (observe it with --server-pid or --server-cmd, and keep the client off its CPUs with --client-cpus)"
            ),
            Warning::Polling => {
                f.write_str("busy-polling: polling cores show 100% busy whatever the load")
            }
            Warning::RateNotSent {
                sent_per_s,
                rate_per_s,
                depth,
            } => write!(
                f,
                "target rate not reached: requests were sent at {sent_per_s:.0}/s of the {rate_per_s:.0}/s asked ({:.0}%): the client could not keep up, or --depth {depth} capped the requests outstanding",
                100.0 * sent_per_s / rate_per_s
            ),
            Warning::RateNotAnswered {
                ops_per_s,
                rate_per_s,
                errors_per_s,
            } if *errors_per_s > 0.0 => {
                let answered = ops_per_s + errors_per_s;
                write!(
                    f,
                    "the server answered {answered:.0}/s of the {rate_per_s:.0}/s asked ({:.0}%), {errors_per_s:.0}/s of them errors: {ops_per_s:.0}/s succeeded",
                    100.0 * answered / rate_per_s
                )
            }
            Warning::RateNotAnswered {
                ops_per_s,
                rate_per_s,
                ..
            } => write!(
                f,
                "target rate not reached: the server answered {ops_per_s:.0}/s of the {rate_per_s:.0}/s asked ({:.0}%)",
                100.0 * ops_per_s / rate_per_s
            ),
            Warning::Stalls {
                seconds,
                max_ns,
                lost_s,
                threshold_ns,
            } => write!(
                f,
                "the platform stalled in {seconds} measured second(s) (the hiccup meter woke up to {} late, over {}; {:.1} ms lost in all): those seconds' figures include stalls the server did not cause",
                crate::units::format_ns(*max_ns as f64),
                crate::units::format_ns(*threshold_ns as f64),
                lost_s * 1e3
            ),
            Warning::TraceLost { side, lost, events } => write!(
                f,
                "the {side}'s trace lost {lost} event(s) (written: {events}): its drain fell behind, so its timelines miss some operations; trace fewer with --trace-sample"
            ),
            Warning::AgentBound { agent, why } => write!(
                f,
                "agent {agent} {why}: it may be the limit of the run, not the server; give it less load (--agent-weights) or add an agent"
            ),
            Warning::Unanswered {
                requests,
                max_wait_ns,
            } => write!(
                f,
                "{requests} request(s) had no answer by the end of the run, after up to {}: counted as failed, and in the latency as coordinated omission would count them (the requests their connections would have sent meanwhile, each late); the server stopped answering some connections",
                crate::units::format_ns(*max_wait_ns as f64)
            ),
            Warning::StageBehind {
                stage,
                text,
                asked_per_s,
                sent_per_s,
                late_sends,
            } => write!(
                f,
                "stage {stage} ({text}): requests left at {sent_per_s:.0}/s of the {asked_per_s:.0}/s asked, {late_sends} late at its end: the generator (or --depth) fell behind there, and that stage's latency counts the wait"
            ),
            Warning::Note { message } => f.write_str(message),
        }
    }
}
