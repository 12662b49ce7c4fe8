//! The check of a request: the defaults applied, every value checked
//! against the others and the machine, and the transport's settings
//! checked by its module; the result is the run's [`RunSpec`] and where
//! each side runs, or a [`SpecError`] naming the flag. The raw request
//! ([`crate::request`]) knows nothing of this.

use crate::command::{check_placeholders, env_map};
use crate::error::*;
use crate::limits::*;
use crate::request::*;
use crate::result::Placement;
use crate::slo::Slo;
use crate::spec::*;
use crate::topo::check_cpus;
use crate::topo::{CpuList, Topology};
use crate::units::Dur;
use std::path::Path;
use std::time::Duration;

impl RunRequest {
    /// Refuses the flags the transport does not take: those some other
    /// transport takes (its own group or a shared flag it lists). The message names that
    /// transport when it is the only one.
    fn refuse_others_flags(&self, kind: TransportKind) -> Result<(), SpecError> {
        let set = serde_json::to_value(self).expect("a request serializes");
        for &key in RunRequest::keys() {
            let on = match set.get(key) {
                None | Some(serde_json::Value::Null | serde_json::Value::Bool(false)) => false,
                Some(_) => true,
            };
            if !on || kind.takes(key) {
                continue;
            }
            let takers: Vec<TransportKind> = crate::kind::all()
                .iter()
                .copied()
                .filter(|k| k.takes(key))
                .collect();
            let flag = RunRequest::flag_of(key);
            match takers[..] {
                [] => {}
                [only] => {
                    return Err(SpecError::OtherTransport {
                        flag,
                        transport: only,
                    });
                }
                _ => {
                    return Err(self::flag(
                        flag,
                        format!("does not apply to --transport {kind}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// What the transport's check reads of this request.
    fn asked(&self) -> crate::transport::Asked {
        crate::transport::Asked {
            flags: self.flags.clone(),
            listen: self.listen.clone(),
            mode: self.mode.clone(),
            size: self.size.clone(),
            poll: self.poll,
            verify: self.verify,
            keys: self.keys,
            key_dist: self.key_dist,
            ca_file: self.ca_file.clone(),
            header: self.header.clone(),
            target: self.target.clone(),
            depth: self.depth,
            clients: self.clients,
            conns_per_client: self.conns_per_client,
            rate: self.rate,
            count: self.count,
            server_cmd: self.server.server_cmd.clone(),
        }
    }

    /// The transport asked for (msgr by default).
    pub fn transport_kind(&self) -> TransportKind {
        self.transport
            .or_else(|| self.target.as_ref().and_then(Endpoint::scheme_transport))
            .unwrap_or_default()
    }

    /// Checks where the run writes, before anything runs: the results
    /// directory is made (or refused), and the files of `hlog` and `trace`
    /// can be written and do not exist already (unless `force`).
    pub fn prepare_outputs(&self) -> Result<(), SpecError> {
        let dir = self.output.results_dir();
        crate::store::prepare_dir(&dir)
            .map_err(|why| invalid("--results", format!("{}: {why}", dir.display())))?;
        let force = self.output.force.unwrap_or(false);
        for (flag, file) in [
            ("--hlog", self.output.hlog.as_deref()),
            ("--trace", self.output.trace_file()),
        ] {
            if let Some(f) = file {
                crate::store::check_new_file(f, force)
                    .map_err(|why| invalid(flag, format!("{}: {why}", f.display())))?;
            }
        }
        Ok(())
    }

    /// The objectives, parsed.
    pub fn slos(&self) -> Result<Vec<Slo>, SpecError> {
        let mut all = Vec::new();
        for s in &self.objectives.slo {
            match Slo::parse_list(s) {
                Ok(v) => all.extend(v),
                Err(e) => return Err(invalid("--slo", e.to_string())),
            }
        }
        Ok(all)
    }

    /// Applies the defaults and checks every value against the others and
    /// the machine: the spec of the run and where each side runs.
    pub fn check(&self, topo: &Topology) -> Result<(RunSpec, Placement), SpecError> {
        let kind = self.transport_kind();
        self.target_matches(kind)?;
        if let Some(req) = self.default_ports(kind)? {
            return req.check(topo);
        }
        let (clients, conns) = self.connections_checked()?;
        let transport = crate::transport::check(&self.asked(), kind)?;
        self.refuse_others_flags(kind)?;
        let about = kind.about();
        let stream = transport.describe().is_stream();
        self.trace_checked(&transport)?;
        let stages = self.stages_checked(kind, clients, conns, stream)?;
        let rate = self.rate_checked(&stages, stream)?;
        let agents = self.agents_checked(kind, clients)?;
        let share = self.share_checked(clients * conns)?;
        Self::rate_per_conn_checked(rate, &stages, share.as_ref(), clients * conns)?;
        // Open loop: depth caps the requests outstanding, which keeps memory
        // bounded when the server falls behind the timetable.
        let depth = self
            .depth
            .unwrap_or(transport.describe().default_depth(rate.is_some()));
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(range("--depth", depth, 1, MAX_DEPTH));
        }
        let stop = self.stop_checked(&stages)?;
        let warmup_ns = self.warmup_checked(about)?;
        let op_timeout = self.op_timeout.map_or(DEFAULT_OP_TIMEOUT, |d| d.0);
        let hiccup = self.hiccup_checked()?;
        if op_timeout > MAX_PHASE {
            return Err(value(
                "--op-timeout",
                Dur(op_timeout),
                "at most 720h; 0s turns the limit off",
            ));
        }
        let arch = self.flags.msgr.arch.unwrap_or(Arch::Reactor);
        let poll = self.poll.unwrap_or(false);
        if poll && self.target.is_none() && about.arch && arch == Arch::Pool {
            return Err(invalid(
                "--poll",
                "the pool server has no poll mode; use --arch reactor, or drop --poll (with --target, --poll applies to the client only)",
            ));
        }
        let observe = self.observed()?;
        self.embedded_flags_checked(observe.is_some())?;
        self.repeat_checked(&transport)?;
        self.slos()?;
        if let Some(h) = &self.output.hlog {
            parent_exists("--hlog", h)?;
        }
        if let Some(f) = self.output.trace_file() {
            parent_exists("--trace", f)?;
        }
        let placement = self.placement(topo, clients)?;
        let target = self.target_spec(about, &placement, arch, poll);
        let spin = transport.describe().spins();
        let spec = RunSpec {
            target,
            clients,
            conns_per_client: conns,
            depth: if stream { 1 } else { depth },
            rate_per_s: match stages.is_empty() {
                true => self.rate.map(|r| r.0),
                // A closed loop's stages ask connections, not a rate.
                false if crate::stages::closed(&stages) => None,
                false => Some(crate::stages::mean_rate(&stages)),
            },
            stages,
            arrival: self.arrival.unwrap_or(Arrival::Uniform),
            stop,
            warmup_ns,
            op_timeout_ns: crate::units::nanos(op_timeout),
            hiccup_threshold_ns: hiccup,
            poll: poll || spin,
            verify: self.verify.unwrap_or(false),
            client_cpus: placement.client_cpus.clone(),
            trace_sample: self
                .output
                .traced()
                .then(|| self.output.trace_sample.unwrap_or(1)),
            transport,
            observe,
            server_env: env_map(&self.server.server_env),
            labels: env_map(&self.output.label),
            also_target: self.also_target.clone(),
            agents,
            share,
        };
        Ok((spec, placement))
    }

    /// `--clients` and `--conns-per-client` (a closed loop in stages opens
    /// the most connections a stage has, over the clients, unless told how
    /// many per client).
    fn connections_checked(&self) -> Result<(usize, usize), SpecError> {
        let clients = self.clients.unwrap_or(1);
        let peak_conns = self
            .stages
            .as_deref()
            .and_then(|t| crate::stages::parse(t).ok())
            .map_or(0, |s| crate::stages::peak_conns(&s));
        let conns = self.conns_per_client.unwrap_or_else(|| {
            usize::try_from(peak_conns)
                .unwrap_or(usize::MAX)
                .div_ceil(clients.max(1))
                .max(1)
        });
        if !(1..=MAX_CLIENTS).contains(&clients) {
            return Err(range("--clients", clients, 1, MAX_CLIENTS));
        }
        if conns == 0
            || clients
                .checked_mul(conns)
                .is_none_or(|n| n > MAX_CONNECTIONS)
        {
            return Err(value(
                "--conns-per-client",
                conns,
                format!(
                    "must be at least 1, and --clients x --conns-per-client at most {MAX_CONNECTIONS}"
                ),
            ));
        }
        Ok((clients, conns))
    }

    /// The request with the transport's default port where an endpoint of
    /// its own scheme leaves the port out (None: none does).
    fn default_ports(&self, kind: TransportKind) -> Result<Option<RunRequest>, SpecError> {
        let mut req = self.clone();
        let mut changed = false;
        let places = req
            .target
            .iter_mut()
            .chain(req.also_target.iter_mut())
            .map(|e| ("--target", e))
            .chain(req.listen.iter_mut().map(|e| ("--listen", e)));
        for (f, e) in places {
            let Some(port) = kind.about().default_port else {
                if e.with_default_port(0).is_some() {
                    let scheme = e.scheme().to_string();
                    return Err(value(
                        f,
                        &*e,
                        format!("give the port: {scheme}://HOST:PORT"),
                    ));
                }
                continue;
            };
            if let Some(with) = e.with_default_port(port) {
                *e = with;
                changed = true;
            }
        }
        Ok(changed.then_some(req))
    }

    /// A target of another transport's scheme names that transport; a
    /// scheme no transport lists names none.
    fn target_matches(&self, kind: TransportKind) -> Result<(), SpecError> {
        for t in self.target.iter().chain(&self.also_target) {
            if let Endpoint::Addr { scheme, .. } = t
                && t.scheme_transport().is_none()
            {
                let known: Vec<&str> = crate::kind::all()
                    .iter()
                    .flat_map(|k| k.about().schemes.iter().copied())
                    .collect();
                return Err(value(
                    "--target",
                    t,
                    format!(
                        "no transport speaks {scheme}://; the schemes are tcp, unix, {}",
                        known.join(", ")
                    ),
                ));
            }
        }
        if let Some(t) = &self.target
            && let Some(named) = t.scheme_transport()
            && named != kind
            && kind.about().schemes.is_empty()
        {
            return Err(value(
                "--target",
                t,
                format!("a {named} endpoint; add --transport {named}"),
            ));
        }
        Ok(())
    }

    /// `--trace` and `--trace-sample`.
    fn trace_checked(&self, transport: &TransportSpec) -> Result<(), SpecError> {
        if self.output.traced()
            && let Some(why) = transport.describe().untraceable()
        {
            return Err(invalid("--trace", why));
        }
        if self.output.trace_sample == Some(0) {
            return Err(value(
                "--trace-sample",
                0,
                "trace one request in N, N at least 1",
            ));
        }
        if self.output.trace_sample.is_some() && !self.output.traced() {
            return Err(flag("--trace-sample", "needs --trace"));
        }
        Ok(())
    }

    /// `--stages` (and `--depth` of a stream, checked first as before).
    fn stages_checked(
        &self,
        kind: TransportKind,
        clients: usize,
        conns: usize,
        stream: bool,
    ) -> Result<Vec<crate::stages::Stage>, SpecError> {
        if stream && self.depth.is_some() {
            return Err(flag(
                "--depth",
                "does not apply to --mode stream: the server sends without waiting for requests",
            ));
        }
        Ok(match &self.stages {
            None => Vec::new(),
            Some(text) => {
                let stages =
                    crate::stages::parse(text).map_err(|why| value("--stages", text, why))?;
                if self.rate.is_some() {
                    return Err(flag(
                        "--rate",
                        "and --stages: the stages set the rate; give one of them",
                    ));
                }
                if self.duration.is_some() || self.count.is_some() {
                    return Err(flag(
                        "--stages",
                        "set the run's length (their sum): drop --duration and --count",
                    ));
                }
                if crate::stages::closed(&stages) {
                    let have = (clients * conns) as u64;
                    if crate::stages::peak_conns(&stages) > have {
                        return Err(value(
                            "--stages",
                            text,
                            format!(
                                "conns={} needs that many connections, and --clients x --conns-per-client make {have}: raise them, or leave --conns-per-client out",
                                crate::stages::peak_conns(&stages)
                            ),
                        ));
                    }
                    if let Some(why) = kind.about().no_conn_stages {
                        return Err(value("--stages", text, why));
                    }
                }
                stages
            }
        })
    }

    /// The open loop's rate: the flag's, or the stages' highest (a closed
    /// loop's stages set none); refused for a stream, and `--arrival`
    /// without one.
    fn rate_checked(
        &self,
        stages: &[crate::stages::Stage],
        stream: bool,
    ) -> Result<Option<f64>, SpecError> {
        let rate = self.rate.map(|r| r.0).or_else(|| {
            (!stages.is_empty() && !crate::stages::closed(stages))
                .then(|| crate::stages::peak_rate(stages))
        });
        if stream && rate.is_some() {
            return Err(flag(
                if stages.is_empty() {
                    "--rate"
                } else {
                    "--stages"
                },
                "does not apply to --mode stream: the server sends as fast as it can",
            ));
        }
        if self.arrival.is_some() && rate.is_none() {
            return Err(flag(
                "--arrival",
                "applies to an open loop: add --rate (or --stages)",
            ));
        }
        Ok(rate)
    }

    /// What one connection must send: neither more than it can nor less
    /// than 0.1/s (an agent's share keeps the run's total rate over all
    /// its connections).
    fn rate_per_conn_checked(
        rate: Option<f64>,
        stages: &[crate::stages::Stage],
        share: Option<&crate::share::ConnShare>,
        all: usize,
    ) -> Result<(), SpecError> {
        let rate_flag = if stages.is_empty() {
            "--rate"
        } else {
            "--stages"
        };
        if let Some(rate) = rate {
            // An agent's share keeps the run's total rate over all its
            // connections.
            let all_conns = share.map_or(all as f64, |s| s.total as f64);
            let per_conn = rate / all_conns;
            if per_conn > MAX_RATE_PER_CONN {
                return Err(value(
                    rate_flag,
                    rate,
                    format!(
                        "{per_conn:.0}/s per connection is more than one connection can send ({MAX_RATE_PER_CONN:.0}/s); add connections (--clients, --conns-per-client) or lower the rate"
                    ),
                ));
            }
            if per_conn < 0.1 {
                return Err(value(
                    rate_flag,
                    rate,
                    "below 0.1/s per connection the run would send nothing; raise the rate or use fewer connections",
                ));
            }
        }
        Ok(())
    }

    /// How the measured phase ends: the stages' length, `--count` or
    /// `--duration`.
    fn stop_checked(&self, stages: &[crate::stages::Stage]) -> Result<StopSpec, SpecError> {
        Ok(match (self.count, self.duration) {
            _ if !stages.is_empty() => {
                StopSpec::DurationNs(phase_ns("--stages", crate::stages::total(stages))?)
            }
            (Some(_), Some(_)) => {
                return Err(flag("--count", "and --duration: give one of them"));
            }
            (Some(0), _) => return Err(value("--count", 0, "must be at least 1")),
            (Some(c), _) => StopSpec::Count(c),
            (None, Some(Dur(d))) if d.is_zero() => {
                return Err(flag("--duration", "must be longer than 0s"));
            }
            (None, d) => StopSpec::DurationNs(phase_ns(
                "--duration",
                d.map_or(Duration::from_secs(5), |d| d.0),
            )?),
        })
    }

    /// The warm-up (none for a program of the user's: it warms up as told).
    fn warmup_checked(&self, about: &crate::transport::About) -> Result<u64, SpecError> {
        if about.own_program && self.warmup.is_some() {
            return Err(flag(
                "--warmup",
                "does not apply to --transport exec: the program warms up as it is told (in --client-cmd)",
            ));
        }
        Ok(match about.own_program {
            true => 0,
            false => phase_ns(
                "--warmup",
                self.warmup.map_or(Duration::from_secs(1), |d| d.0),
            )?,
        })
    }

    /// The hiccup meter's threshold (None: `--no-hiccup`).
    fn hiccup_checked(&self) -> Result<Option<u64>, SpecError> {
        Ok(match (self.no_hiccup, self.hiccup_threshold) {
            (Some(true), Some(_)) => {
                return Err(flag(
                    "--hiccup-threshold",
                    "and --no-hiccup: give one of them",
                ));
            }
            (Some(true), None) => None,
            (_, Some(Dur(d))) if d < Duration::from_millis(1) || d > Duration::from_secs(60) => {
                return Err(range("--hiccup-threshold", Dur(d), "1ms", "1m"));
            }
            (_, t) => Some(crate::units::nanos(
                t.map_or(DEFAULT_HICCUP_THRESHOLD, |d| d.0),
            )),
        })
    }

    /// The embedded server's flags, refused with a target.
    fn embedded_flags_checked(&self, observed: bool) -> Result<(), SpecError> {
        if self.target.is_some() {
            for (name, set) in [
                ("--arch", self.flags.msgr.arch.is_some()),
                ("--server-cpus", self.server_cpus.is_some() && !observed),
                ("--listen", self.listen.is_some()),
                ("--max-frame", self.flags.msgr.max_frame.is_some()),
            ] {
                if set {
                    return Err(flag(
                        name,
                        "applies to the embedded server: drop it, or --target",
                    ));
                }
            }
        }
        Ok(())
    }

    /// `--repeat`, and what one run alone can record.
    fn repeat_checked(&self, transport: &TransportSpec) -> Result<(), SpecError> {
        let repeat = self.repeat();
        if !(1..=MAX_REPEAT).contains(&repeat) {
            return Err(range("--repeat", repeat, 1, MAX_REPEAT));
        }
        if repeat > 1 && self.output.traced() {
            return Err(flag(
                "--trace",
                "records one run's timeline: drop it, or --repeat",
            ));
        }
        if repeat > 1 && self.output.hlog.is_some() {
            return Err(flag("--hlog", "writes one run's log: drop it, or --repeat"));
        }
        if repeat > 1
            && let Some(why) = transport.describe().unrepeatable()
        {
            return Err(invalid("--repeat", why));
        }
        Ok(())
    }

    /// The server: the target given, the port a server command serves, none
    /// (a program of the user's), or the embedded one on its CPUs.
    fn target_spec(
        &self,
        about: &crate::transport::About,
        placement: &Placement,
        arch: Arch,
        poll: bool,
    ) -> TargetSpec {
        match &self.target {
            Some(endpoint) => TargetSpec::External {
                endpoint: endpoint.clone(),
            },
            // A server command without a target: the target is the port
            // `{port}` stands for.
            None if about.own_program && self.server.server_cmd.is_some() => TargetSpec::External {
                endpoint: crate::transport::loopback(),
            },
            None if about.own_program => TargetSpec::None,
            None => TargetSpec::Embedded {
                arch: about.arch.then_some(arch),
                cpus: placement
                    .server_cpus
                    .clone()
                    .expect("embedded server has CPUs"),
                poll,
                listen: self
                    .listen
                    .clone()
                    .or_else(|| about.embedded.map(|listen| listen()))
                    .unwrap_or_else(crate::transport::loopback),
            },
        }
    }
}

mod fleet;
mod observe;
mod placement;

/// The length of a phase in ns, at most [`MAX_PHASE`].
pub(crate) fn phase_ns(name: &'static str, d: Duration) -> Result<u64, SpecError> {
    if d > MAX_PHASE {
        return Err(value(
            name,
            Dur(d),
            "longer than 30 days: a phase is at most 720h; for a longer soak, repeat runs",
        ));
    }
    Ok(crate::units::nanos(d))
}

/// A file's directory must exist (checked before any load).
pub(crate) fn parent_exists(name: &'static str, f: &Path) -> Result<(), SpecError> {
    let parent = f
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if parent.is_dir() {
        Ok(())
    } else {
        Err(value(
            name,
            f.display(),
            format!("the directory {} does not exist", parent.display()),
        ))
    }
}

#[cfg(test)]
mod tests;
