//! The coordinator: a run whose load is made by agents on other hosts.
//!
//! It connects to every agent (handshake, then [`PROBES`] clock probes
//! each), sends each its part of the request (its clients, and the numbers
//! of its connections among the run's: see `wirebench_core::share`), waits
//! until every part is connected (the ready barrier), and starts them all
//! at one instant of its own clock, given to each agent on the agent's.
//! Each second it merges the agents' intervals into the live line; at the
//! end it pulls every part's whole result, the authoritative one, and
//! merges them exactly (histograms added, never percentiles averaged),
//! keeping each agent's part beside the merge.

use super::clock::{self, ClockEstimate};
use super::daemon::{HANDSHAKE_TIMEOUT, SILENCE};
use super::merge::{Ended, Seen};
use super::wire::{self, FromAgent, FromCoordinator};
use crate::RunError;
use crate::auth::{self, BuildId, Token};
use crate::command::Checked;
use crate::process::Cancel;
use crate::record::{self};
use crate::run::{RunEvents, RunReport};
use crate::session::SessionOptions;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wirebench_core::merge;
use wirebench_core::request::RunRequest;
use wirebench_core::result::{Interval, Repetitions, RunResult, RunState};
use wirebench_core::share::{self, AgentSpec};
use wirebench_core::spec::{RunSpec, TargetSpec};
use wirebench_core::store;
use wirebench_core::topo::Topology;
use wirebench_load::engine::IntervalReport;
use wirebench_load::os;

/// Clock probes per agent, before and after a run.
pub const PROBES: usize = 16;
/// A run does not start while an agent's clock offset is less certain than
/// this share of the reporting interval.
pub const MAX_UNCERTAINTY_SHARE: f64 = 0.10;
/// The reporting interval.
const INTERVAL: Duration = Duration::from_secs(1);

/// What a coordinator heard from agent `i`, and when (on its clock).
enum Heard {
    Msg(usize, FromAgent, u64),
    Gone(usize, String),
}

type Writer = Arc<Mutex<TcpStream>>;

/// One agent, connected and accepted.
struct Link {
    spec: AgentSpec,
    w: Writer,
    clock: ClockEstimate,
}

fn tell(w: &Writer, msg: &FromCoordinator) -> std::io::Result<()> {
    wire::send(&mut *w.lock().expect("not poisoned"), msg)
}

fn fail(agent: &str, why: impl std::fmt::Display) -> RunError {
    RunError::Failed(format!("agent {agent}: {why}"))
}

/// The agents of a run, connected.
struct Fleet {
    links: Vec<Link>,
    rx: mpsc::Receiver<Heard>,
    beating: Arc<AtomicBool>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.beating.store(false, Ordering::Release);
        for l in &self.links {
            let _ =
                l.w.lock()
                    .expect("not poisoned")
                    .shutdown(std::net::Shutdown::Both);
        }
    }
}

/// `HOST:PORT` as a test sees it: `$WIREBENCH_TEST_RESOLVE` maps names to
/// addresses (`NAME:PORT=ADDR:PORT,...`), as a cluster's DNS would.
fn test_resolved(dial: &str) -> String {
    std::env::var("WIREBENCH_TEST_RESOLVE")
        .ok()
        .and_then(|map| {
            map.split(',')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == dial)
                .map(|(_, v)| v.to_string())
        })
        .unwrap_or_else(|| dial.to_string())
}

/// A connection to the agent at `dial`, tried again until `wait` passed (an
/// agent starting at the same time, as in a Kubernetes Job).
fn dial_agent(agent: &AgentSpec, dial: &str, wait: Duration) -> Result<TcpStream, RunError> {
    let dial = test_resolved(dial);
    let deadline = Instant::now() + wait;
    loop {
        let why = match dial.to_socket_addrs() {
            Ok(addrs) => {
                let mut last = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, HANDSHAKE_TIMEOUT) {
                        Ok(s) => return Ok(s),
                        Err(e) => last = Some(e),
                    }
                }
                format!(
                    "cannot connect: {} (is `wirebench agent` running there?)",
                    last.map_or("no address".to_string(), |e| e.to_string())
                )
            }
            Err(e) => format!("cannot resolve it: {e}"),
        };
        if Instant::now() >= deadline {
            return Err(fail(&agent.address, why));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The index a Kubernetes Indexed Job's agent has by its name
/// (`JOB-INDEX.SERVICE:PORT`), if the name has one.
fn index_in_name(address: &str) -> Option<u32> {
    let host = address.split(['.', ':']).next()?;
    host.rsplit_once('-')?.1.parse().ok()
}

/// Connects to `agent` and does the handshake: its token proven, ours
/// proven to it, the same protocol and build on both sides.
fn handshake(
    agent: &AgentSpec,
    dial: &str,
    token: Option<&Token>,
    build: &BuildId,
    wait: Duration,
) -> Result<(TcpStream, BufReader<TcpStream>), RunError> {
    let stream = dial_agent(agent, dial, wait)?;
    let io = |e: std::io::Error| fail(&agent.address, e);
    stream.set_nodelay(true).map_err(io)?;
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    stream
        .set_write_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(io)?;
    let mut rd = BufReader::new(stream.try_clone().map_err(io)?);
    let mut w = stream;
    let hello = wire::recv::<FromAgent>(&mut rd, wire::HANDSHAKE_LINE_MAX)
        .map_err(|e| fail(&agent.address, format!("not a wirebench agent: {e}")))?;
    let Some(FromAgent::Hello {
        protocol,
        nonce,
        token: wants_token,
    }) = hello
    else {
        return Err(fail(&agent.address, "not a wirebench agent (no hello)"));
    };
    if protocol != wire::PROTOCOL {
        return Err(fail(
            &agent.address,
            format!(
                "protocol mismatch: the agent speaks agent protocol {protocol}, this coordinator {}",
                wire::PROTOCOL
            ),
        ));
    }
    if wants_token && token.is_none() {
        return Err(fail(
            &agent.address,
            "it requires a token: give this coordinator the agent's with --token-file or WIREBENCH_TOKEN",
        ));
    }
    let ours = auth::nonce();
    wire::send(
        &mut w,
        &FromCoordinator::Auth {
            protocol: wire::PROTOCOL,
            proof: token
                .filter(|_| wants_token)
                .map(|t| t.prove("coordinator", &nonce)),
            nonce: ours.clone(),
            build: build.clone(),
        },
    )
    .map_err(io)?;
    match wire::recv::<FromAgent>(&mut rd, wire::HANDSHAKE_LINE_MAX).map_err(io)? {
        Some(FromAgent::Welcome {
            proof,
            build: theirs,
            index,
        }) => {
            if let (Some(theirs), Some(ours)) = (index, index_in_name(&agent.address))
                && theirs != ours
            {
                return Err(fail(
                    &agent.address,
                    format!("it is agent {theirs} of its Job (JOB_COMPLETION_INDEX), not {ours}"),
                ));
            }
            if wants_token
                && let Some(t) = token
                && !proof.is_some_and(|p| t.verify("agent", &ours, &p))
            {
                return Err(fail(
                    &agent.address,
                    "it did not prove the token: it is not the agent the token names",
                ));
            }
            if &theirs != build {
                return Err(fail(
                    &agent.address,
                    format!("build mismatch: the coordinator runs {build}, the agent {theirs}"),
                ));
            }
        }
        Some(FromAgent::Refused { why }) => {
            return Err(fail(&agent.address, format!("refused: {why}")));
        }
        Some(_) => {
            return Err(fail(
                &agent.address,
                "an unexpected answer to the handshake",
            ));
        }
        None => {
            return Err(fail(
                &agent.address,
                "it closed the connection during the handshake",
            ));
        }
    }
    w.set_read_timeout(Some(SILENCE)).map_err(io)?;
    Ok((w, rd))
}

impl Fleet {
    /// Connects to every agent (agent `i` at `dial[i]`, proven with
    /// `tokens[i]`) and measures their clocks.
    fn connect(
        agents: &[AgentSpec],
        dial: &[String],
        tokens: &[Option<Token>],
        build: &BuildId,
        wait: Duration,
    ) -> Result<Fleet, RunError> {
        // Bounded: an agent that floods waits for the coordinator (TCP
        // holds the rest), it does not grow its memory.
        let (tx, rx) = mpsc::sync_channel(256);
        let mut links = Vec::new();
        for (i, a) in agents.iter().enumerate() {
            let (w, mut rd) = handshake(a, &dial[i], tokens[i].as_ref(), build, wait)?;
            let tx = tx.clone();
            std::thread::spawn(move || {
                loop {
                    let heard = match wire::recv_from_agent(&mut rd) {
                        Ok(Some(m)) => Heard::Msg(i, m, os::monotonic_ns()),
                        Ok(None) => Heard::Gone(i, "it closed the connection".into()),
                        Err(e)
                            if e.kind() == std::io::ErrorKind::WouldBlock
                                || e.kind() == std::io::ErrorKind::TimedOut =>
                        {
                            Heard::Gone(i, format!("it was silent for {SILENCE:?}"))
                        }
                        Err(e) => Heard::Gone(i, e.to_string()),
                    };
                    let gone = matches!(heard, Heard::Gone(..));
                    if tx.send(heard).is_err() || gone {
                        return;
                    }
                }
            });
            links.push(Link {
                spec: a.clone(),
                w: Arc::new(Mutex::new(w)),
                clock: ClockEstimate {
                    offset_ns: 0,
                    uncertainty_ns: u64::MAX,
                    rtt_ns: 0,
                    at_ns: 0,
                },
            });
        }
        let beating = Arc::new(AtomicBool::new(true));
        {
            let writers: Vec<Writer> = links.iter().map(|l| l.w.clone()).collect();
            let beating = beating.clone();
            std::thread::spawn(move || {
                while beating.load(Ordering::Acquire) {
                    for w in &writers {
                        let _ = tell(w, &FromCoordinator::Beat);
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
        let mut fleet = Fleet { links, rx, beating };
        for i in 0..fleet.links.len() {
            fleet.links[i].clock = fleet.probe(i)?;
        }
        Ok(fleet)
    }

    /// Measures agent `i`'s clock.
    fn probe(&mut self, i: usize) -> Result<ClockEstimate, RunError> {
        let addr = self.links[i].spec.address.clone();
        let mut probes = Vec::with_capacity(PROBES);
        for _ in 0..PROBES {
            let t1 = os::monotonic_ns();
            tell(&self.links[i].w, &FromCoordinator::Probe { t1 }).map_err(|e| fail(&addr, e))?;
            let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.rx.recv_timeout(left) {
                    Ok(Heard::Msg(j, FromAgent::Probe { t1: echo, t2, t3 }, t4))
                        if j == i && echo == t1 =>
                    {
                        probes.push(clock::Probe { t1, t2, t3, t4 });
                        break;
                    }
                    Ok(Heard::Gone(j, why)) if j == i => return Err(fail(&addr, why)),
                    Ok(_) => {}
                    Err(_) => return Err(fail(&addr, "no answer to a clock probe")),
                }
            }
        }
        Ok(clock::estimate(&probes).expect("probed"))
    }
}

/// A merged interval as the live line shows it (the agents' cores are
/// each host's own: none are shown).
fn report_of(index: usize, iv: &Interval) -> IntervalReport {
    let mut r = IntervalReport::from_point(index, iv);
    r.client_cores.clear();
    r.server_cores.clear();
    r
}

/// Where an agent's part stands.
enum Part {
    Preparing,
    Running,
    Done(Box<RunResult>, String),
    Failed(String),
    /// Gone while the load ran; the others go on.
    Lost(String),
}

/// Agent `i`'s part of `req`.
fn part_request(
    req: &RunRequest,
    clients: usize,
    share: share::ConnShare,
    target: Option<wirebench_core::spec::Endpoint>,
) -> RunRequest {
    let mut r = req.clone();
    r.target = target;
    r.also_target.clear();
    r.fleet.agents.clear();
    r.fleet.launch.clear();
    r.fleet.agent_weights.clear();
    r.clients = Some(clients);
    r.share = Some(share);
    r.objectives.slo.clear();
    // The coordinator judges the windows, on the merged seconds.
    r.objectives.abort_on_fail = None;
    r.output.hlog = None;
    r.output.results = None;
    // The coordinator uploads the merged run; each part stays on its agent.
    r.output.upload = None;
    r.repeat = None;
    r.output.force = None;
    r.output.format = None;
    // The coordinator serves the run's live metrics, of the merged seconds.
    r.watch = Default::default();
    r
}

/// Runs `req` on its agents: one run, recorded here, each part kept on its
/// agent too.
pub fn run(
    req: &RunRequest,
    opts: &SessionOptions,
    topo: &Topology,
    command_line: Vec<String>,
    cancel: Cancel,
    events: &mut dyn RunEvents,
) -> Result<RunReport, RunError> {
    let Checked {
        spec,
        placement,
        mut recorder,
    } = Checked::of(req, topo, None, command_line, None)?;
    recorder.history.clone_from(&opts.history);
    let build =
        BuildId::current().map_err(|e| RunError::Failed(format!("this binary's build id: {e}")))?;
    // Agents to start first (`--launch ssh:`), after those given.
    let hosts: Vec<String> = req
        .fleet
        .launch
        .iter()
        .filter_map(|l| l.strip_prefix("ssh:").map(str::to_string))
        .collect();
    let launched = match hosts.is_empty() {
        true => None,
        false => Some(super::launch::ssh(
            &hosts,
            opts.ssh_config.as_deref(),
            &build,
            &mut |line| events.note(line),
        )?),
    };
    let mut dial = req.fleet.agents.clone();
    let mut tokens = vec![opts.agent_token.clone(); req.fleet.agents.len()];
    if let Some((l, token)) = &launched {
        dial.extend(l.addresses());
        tokens.extend(std::iter::repeat_n(Some(token.clone()), hosts.len()));
    }
    let mut fleet = Fleet::connect(&spec.agents, &dial, &tokens, &build, opts.agents_wait)?;
    clocks_checked(&fleet, events)?;
    let endpoint = match &spec.target {
        TargetSpec::External { endpoint } => endpoint.clone(),
        _ => unreachable!("checked: agents need a target"),
    };
    // This host's CPUs make no load: the placement is each agent's own.
    let mut placement = placement;
    placement.notes = vec![format!(
        "the load is made by {} agents; each places its clients on its own host",
        spec.agents.len()
    )];
    events.started(&spec, &placement, &endpoint, None);
    // Repetitions are a group: one directory, which compare and report take
    // as one variant (as `run::run` makes them).
    let (label, repeat) = (spec.label(), req.repeat());
    let group = (repeat > 1).then(|| store::new_run_id(&format!("{label}-x{repeat}")));
    let recorder = match &group {
        Some(g) => recorder.group(g),
        None => recorder,
    };
    let mut runs = Vec::new();
    for k in 0..repeat {
        if repeat > 1 {
            events.repetition(k + 1, repeat);
            if k > 0 {
                // The clocks again: each run starts from fresh offsets.
                for i in 0..fleet.links.len() {
                    fleet.links[i].clock = fleet.probe(i)?;
                }
                clocks_checked(&fleet, events)?;
            }
        }
        let started_at = store::now_rfc3339();
        let mut result = measure(&mut fleet, req, &spec, &placement, &cancel, events)?;
        let name = match repeat {
            1 => label.clone(),
            _ => format!("{label}-r{}", k + 1),
        };
        let dir = recorder.save_as(&mut result, store::new_run_id(&name), started_at, events)?;
        if let Some(path) = &req.output.hlog {
            record::write_hlog(path, &result)?;
        }
        events.saved(&result, &dir, &recorder.slos);
        let last = result.status.state != RunState::Complete || cancel.is_cancelled();
        runs.push((result, dir));
        if last {
            break;
        }
    }
    // The agents this run started stop with it.
    drop(fleet);
    drop(launched);
    let repetitions = (repeat > 1)
        .then(|| Repetitions::of(&runs.iter().map(|(r, _)| r.clone()).collect::<Vec<_>>()));
    Ok(RunReport {
        runs,
        repetitions,
        group: group.map(|_| recorder.root.clone()),
    })
}

/// Tells each agent's clock offset, and refuses a run whose agents' seconds
/// would not line up (an offset known too loosely).
fn clocks_checked(fleet: &Fleet, events: &mut dyn RunEvents) -> Result<(), RunError> {
    let limit = wirebench_core::units::nanos(INTERVAL.mul_f64(MAX_UNCERTAINTY_SHARE));
    for l in &fleet.links {
        events.note(&format!(
            "agent {}: clock offset {:+} ns, within {} ns (round trip {} ns)",
            l.spec.address, l.clock.offset_ns, l.clock.uncertainty_ns, l.clock.rtt_ns
        ));
        if l.clock.uncertainty_ns > limit {
            return Err(fail(
                &l.spec.address,
                format!(
                    "its clock's offset is known within {} ms only, more than {:.0}% of the {} s interval: the agents' seconds would not line up (a slow or loaded network path?)",
                    l.clock.uncertainty_ns as f64 / 1e6,
                    MAX_UNCERTAINTY_SHARE * 100.0,
                    INTERVAL.as_secs()
                ),
            ));
        }
    }
    Ok(())
}

/// One measured run on the fleet: prepare, the ready barrier, the start,
/// the live lines, the parts' results merged.
fn measure(
    fleet: &mut Fleet,
    req: &RunRequest,
    spec: &RunSpec,
    placement: &wirebench_core::result::Placement,
    cancel: &Cancel,
    events: &mut dyn RunEvents,
) -> Result<RunResult, RunError> {
    let n = fleet.links.len();
    let weights: Vec<u32> = fleet.links.iter().map(|l| l.spec.weight).collect();
    let clients = share::split(spec.clients, &weights);
    let shares = share::conn_shares(&clients, spec.conns_per_client);
    // Several endpoints: agent i's part goes to endpoint i mod their number.
    let endpoints: Vec<_> = req.target.iter().chain(&req.also_target).cloned().collect();
    if endpoints.len() > 1 {
        for (k, e) in endpoints.iter().enumerate() {
            let who: Vec<&str> = (k..n)
                .step_by(endpoints.len())
                .map(|i| fleet.links[i].spec.address.as_str())
                .collect();
            events.note(&format!("endpoint {e}: agents {}", who.join(", ")));
        }
    }
    for (i, l) in fleet.links.iter().enumerate() {
        let target = endpoints.get(i % endpoints.len().max(1)).cloned();
        let part = part_request(req, clients[i], shares[i], target);
        let hash = auth::sha256(&serde_json::to_vec(&part).map_err(std::io::Error::other)?);
        tell(
            &l.w,
            &FromCoordinator::Prepare {
                request: Box::new(part),
                hash,
            },
        )
        .map_err(|e| fail(&l.spec.address, e))?;
    }
    let mut parts: Vec<Part> = (0..n).map(|_| Part::Preparing).collect();
    // Notes heard of each agent (the first AGENT_NOTES_MAX printed).
    let mut notes = vec![0usize; n];
    let mut heard = vec![Instant::now(); n];
    let mut connect_ns = 0;
    let mut started = false;
    let mut stopped = false;
    // Intervals by index, until every running agent gave its own.
    let mut pending: BTreeMap<usize, Vec<Option<Interval>>> = BTreeMap::new();
    // `--abort-on-fail`: the merged seconds' windows; the first miss stops
    // every part, and the run ends complete, saying why.
    let mut watch =
        crate::abort::Watch::of(req.objectives.abort_on_fail == Some(true), &req.slos()?);
    let mut ended_by: Option<String> = None;
    // Each agent's seconds as streamed: a lost agent's part is made of them.
    let mut streamed: Vec<Vec<Interval>> = vec![Vec::new(); n];
    // The most seconds a part reports: its warm-up and measured phase, and
    // the last short one (a run of a count has no known end: a month).
    let max_seconds = match spec.stop {
        wirebench_core::spec::StopSpec::DurationNs(ns) => {
            usize::try_from((spec.warmup_ns + ns).div_ceil(1_000_000_000)).unwrap_or(usize::MAX) + 2
        }
        wirebench_core::spec::StopSpec::Count(_) => 31 * 24 * 3600,
    };
    let stop_all = |fleet: &Fleet, why: &str| {
        for l in &fleet.links {
            let _ = tell(
                &l.w,
                &FromCoordinator::Stop {
                    why: why.to_string(),
                },
            );
        }
    };
    let settled = |p: &Part| matches!(p, Part::Done(..) | Part::Failed(_) | Part::Lost(_));
    // An agent gone while the load runs is lost (the others go on); before
    // the start, or after its part ended, it failed.
    let gone = |p: &Part, why: String| match p {
        Part::Running => Part::Lost(why),
        _ => Part::Failed(why),
    };
    while !parts.iter().all(settled) {
        if !stopped && let Some(why) = cancel.reason() {
            stop_all(fleet, why);
            stopped = true;
        }
        let msg = fleet.rx.recv_timeout(Duration::from_millis(100));
        let now = Instant::now();
        for (i, h) in heard.iter().enumerate() {
            if !settled(&parts[i]) && now.duration_since(*h) > SILENCE {
                parts[i] = gone(&parts[i], format!("it was silent for {SILENCE:?}"));
            }
        }
        let (i, msg) = match msg {
            Ok(Heard::Msg(i, m, _)) => (i, m),
            Ok(Heard::Gone(i, why)) => {
                if !settled(&parts[i]) {
                    parts[i] = gone(&parts[i], why);
                }
                continue;
            }
            Err(_) => continue,
        };
        heard[i] = now;
        let addr = fleet.links[i].spec.address.clone();
        match msg {
            FromAgent::Note { text } => {
                notes[i] += 1;
                match notes[i].cmp(&wire::AGENT_NOTES_MAX) {
                    std::cmp::Ordering::Less => {
                        events.note(&format!("agent {addr}: {}", agent_text(&text)))
                    }
                    std::cmp::Ordering::Equal => events.note(&format!(
                        "agent {addr}: more than {} notes: the rest are not shown",
                        wire::AGENT_NOTES_MAX - 1
                    )),
                    std::cmp::Ordering::Greater => {}
                }
            }
            FromAgent::Ready { connect_ns: c } => {
                connect_ns = connect_ns.max(c);
                parts[i] = Part::Running;
            }
            // Seconds come in order, and no more than the run has: what an
            // agent sends cannot grow the coordinator's memory past the
            // run's own result.
            FromAgent::Interval { index, .. }
                if index != streamed[i].len() || index >= max_seconds =>
            {
                parts[i] = Part::Failed(format!(
                    "it sent second {index}, where second {} (of at most {max_seconds}) was due",
                    streamed[i].len()
                ));
            }
            FromAgent::Interval {
                index,
                interval,
                live,
            } => {
                events.agent_interval(&fleet.links[i].spec.address, &interval, &live);
                streamed[i].push((*interval).clone());
                let row = pending.entry(index).or_insert_with(|| vec![None; n]);
                row[i] = Some(*interval);
            }
            FromAgent::Done { result, dir } => parts[i] = Part::Done(result, dir),
            FromAgent::Failed { why } => parts[i] = Part::Failed(agent_text(&why)),
            FromAgent::Refused { why } => {
                parts[i] = Part::Failed(format!("refused: {}", agent_text(&why)))
            }
            FromAgent::Beat
            | FromAgent::Probe { .. }
            | FromAgent::Hello { .. }
            | FromAgent::Welcome { .. } => {}
        }
        // One part failed: the others stop (what they measured is kept).
        if !stopped
            && let Some((j, why)) = parts.iter().enumerate().find_map(|(j, p)| match p {
                Part::Failed(w) => Some((j, w.clone())),
                _ => None,
            })
        {
            stop_all(
                fleet,
                &format!("agent {} failed: {why}", fleet.links[j].spec.address),
            );
            stopped = true;
        }
        // The barrier: every part connected; start them all at one instant.
        if !started && parts.iter().all(|p| matches!(p, Part::Running)) {
            let worst_rtt = fleet
                .links
                .iter()
                .map(|l| l.clock.rtt_ns)
                .max()
                .unwrap_or(0);
            let lead = Duration::from_millis(200).max(Duration::from_nanos(worst_rtt * 4));
            let at = os::monotonic_ns() + wirebench_core::units::nanos(lead);
            for l in &fleet.links {
                let at_ns = at.saturating_add_signed(l.clock.offset_ns);
                tell(&l.w, &FromCoordinator::Start { at_ns })
                    .map_err(|e| fail(&l.spec.address, e))?;
            }
            started = true;
            events.connected(connect_ns);
        }
        // Live lines: an index every running part has reported.
        let live: Vec<bool> = parts.iter().map(|p| matches!(p, Part::Running)).collect();
        while let Some((&index, row)) = pending.iter().next() {
            let complete = row
                .iter()
                .zip(&live)
                .all(|(iv, &running)| iv.is_some() || !running);
            if !complete {
                break;
            }
            let row = pending.remove(&index).expect("present");
            let got: Vec<Interval> = row.into_iter().flatten().collect();
            if let Ok(m) = merge::intervals_of(&got) {
                events.interval(&report_of(index, &m));
                watch.second(&m);
            }
            if !stopped && let Some(why) = watch.missed.take() {
                stop_all(fleet, &why);
                stopped = true;
                ended_by = Some(why);
            }
        }
    }
    // The clocks again, for their drift over the run.
    let mut drift = vec![None; n];
    for (i, d) in drift.iter_mut().enumerate() {
        if let Ok(end) = fleet.probe(i) {
            *d = clock::drift_ppm(&fleet.links[i].clock, &end);
        }
    }
    let ended = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| match p {
            Part::Done(r, dir) => Ended::Done(r, dir),
            Part::Failed(why) => Ended::Failed(why),
            Part::Lost(why) => Ended::Lost {
                why,
                seconds: std::mem::take(&mut streamed[i]),
            },
            Part::Preparing | Part::Running => unreachable!("settled"),
        })
        .collect();
    let seen: Vec<Seen> = fleet
        .links
        .iter()
        .zip(drift)
        .enumerate()
        .map(|(i, (l, drift))| Seen {
            address: l.spec.address.clone(),
            clients: clients[i],
            clock: l.clock,
            drift,
        })
        .collect();
    let mut merged = super::merge::parts(ended, &seen, spec, placement)?;
    if let Some(why) = ended_by
        && merged.status.state == RunState::Interrupted
    {
        // Stopped by the watch, not by a person: complete, as a local run
        // ended by --abort-on-fail is.
        merged.status.state = RunState::Complete;
        merged.status.reason = Some(why);
    }
    Ok(merged)
}

/// An agent's text as the coordinator keeps and prints it: one line, its
/// control characters shown, at most [`wire::AGENT_TEXT_MAX`] bytes.
fn agent_text(text: &str) -> String {
    let mut end = text.len().min(wire::AGENT_TEXT_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = match end < text.len() {
        true => format!(" ... ({} bytes more)", text.len() - end),
        false => String::new(),
    };
    format!("{}{cut}", wirebench_core::text::one_line(&text[..end]))
}
