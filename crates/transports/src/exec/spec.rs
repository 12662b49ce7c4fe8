//! exec: the user's own benchmark program, run from a command template,
//! its output read by a parser.

use crate::command::*;
use crate::error::*;
use crate::transport::{About, Describe, Shared, TransportKind, TransportSpec};
use crate::transport::{Asked, heading};
use crate::values::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The parser of an exec run's output (`--parser NAME`, or `NAME:ARG`):
/// one of [`crate::parsers::PARSERS`], its argument checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Parser {
    name: String,
    arg: Option<String>,
}

impl Parser {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the program's output (`stderr` too, for programs that print
    /// there).
    pub fn parse(&self, stdout: &str, stderr: &str) -> Result<crate::parsers::Parsed, String> {
        let p = crate::parsers::find(&self.name).expect("a parser checked by name");
        p.parse(self.arg.as_deref().unwrap_or(""), stdout, stderr)
    }
}

impl fmt::Display for Parser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.arg {
            Some(a) => write!(f, "{}:{a}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

impl FromStr for Parser {
    type Err = String;
    fn from_str(s: &str) -> Result<Parser, String> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let Some(p) = crate::parsers::find(name) else {
            return Err(format!(
                "'{s}' is not a parser: use one of {}",
                crate::parsers::usage().join(", ")
            ));
        };
        match (p.arg(), arg) {
            (None, Some(_)) => return Err(format!("{name} takes no argument")),
            (Some(_), a) => p.check(a.unwrap_or(""))?,
            (None, None) => {}
        }
        Ok(Parser {
            name: p.name().to_string(),
            arg: arg.map(str::to_string),
        })
    }
}

impl From<Parser> for String {
    fn from(p: Parser) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for Parser {
    type Error = String;
    fn try_from(s: String) -> Result<Parser, String> {
        s.parse()
    }
}

/// exec's own flags: the user's program and what reads its output. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest): a spec file's keys and
/// `run`'s flags alike.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct ExecFlags {
    /// The program to run (sh -c, pinned to --client-cpus), with the placeholders of
    /// --server-cmd, e.g. 'sockperf ping-pong -i 127.0.0.1 -p {port} -t {duration_s}'.
    /// Its output is kept in the run's directory; a non-zero exit fails the run.
    #[arg(
        long,
        value_name = "CMD",
        help_heading = heading::EXEC
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cmd: Option<String>,
    /// What reads its output (the help lists the parsers of `crate::parsers`).
    #[arg(
        long,
        value_name = "NAME",
        help = crate::parsers::flag_help(),
        help_heading = heading::EXEC
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parser: Option<Parser>,
    /// An environment variable of the program (repeatable).
    #[arg(
        long,
        value_name = "NAME=VALUE",
        help_heading = heading::EXEC
    )]
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        with = "crate::command::env_list"
    )]
    pub client_env: Vec<EnvVars>,
}

/// An exec run: the user's program, run from a template, its output parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecSpec {
    /// The command template (`--client-cmd`), run by `sh -c` with its
    /// placeholders filled.
    pub client_cmd: String,
    pub parser: Parser,
    /// Its environment besides wirebench's (`--client-env`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub client_env: BTreeMap<String, String>,
    /// What `{size}` is (`--size`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
}

impl ExecSpec {
    /// The program's name (see [`program_of`]).
    pub fn program(&self) -> String {
        program_of(&self.client_cmd).unwrap_or_else(|| "exec".to_string())
    }
}

/// The program a command line runs: its first word that is not an
/// environment assignment, a wrapper (taskset, numactl, env, nice, timeout,
/// chrt) or a wrapper's option or placeholder (`{server_cpus}`), without its
/// directory. None: only wrappers.
pub fn program_of(cmd: &str) -> Option<String> {
    let mut words = cmd.split_whitespace().peekable();
    while let Some(w) = words.next() {
        if w.contains('=') && !w.starts_with('-') {
            continue;
        }
        let base = w.rsplit('/').next().unwrap_or(w);
        match base {
            "taskset" | "numactl" | "chrt" => {
                // Their options and cpu list come before the program.
                while let Some(n) = words.peek() {
                    if n.starts_with('-')
                        || n.starts_with('{')
                        || n.chars().all(|c| c.is_ascii_digit() || ",-:".contains(c))
                    {
                        words.next();
                    } else {
                        break;
                    }
                }
            }
            "env" | "nice" | "exec" | "stdbuf" => {}
            "timeout" => {
                words.next();
            }
            _ => return Some(base.to_string()),
        }
    }
    None
}

impl Asked {
    /// The exec transport's settings: the program, its parser and its
    /// environment; the other transports' flags are refused.
    pub(crate) fn exec(&self) -> Result<TransportSpec, SpecError> {
        for (f, set, why) in [
            (
                "--mode",
                self.mode.is_some(),
                "the program has its own modes: put them in --client-cmd",
            ),
            (
                "--arch",
                self.flags.msgr.arch.is_some(),
                "applies to the embedded msgr server; exec starts --server-cmd",
            ),
            (
                "--count",
                self.count.is_some(),
                "exec runs the program for --duration ({duration_s} in --client-cmd); it counts what it does itself",
            ),
            (
                "--verify",
                self.verify == Some(true),
                "the program checks its own payloads, if it does",
            ),
            (
                "--response-size",
                self.flags.msgr.response_size.is_some(),
                "applies to msgr",
            ),
            (
                "--listen",
                self.listen.is_some(),
                "applies to the embedded server",
            ),
            (
                "--max-frame",
                self.flags.msgr.max_frame.is_some(),
                "applies to the embedded msgr server",
            ),
            (
                "--poll",
                self.poll == Some(true),
                "applies to wirebench's own client",
            ),
        ] {
            if set {
                return Err(flag(
                    f,
                    format!("does not apply to --transport exec: {why}"),
                ));
            }
        }
        let cmd = match &self.flags.exec.client_cmd {
            Some(c) if !c.trim().is_empty() => c.clone(),
            Some(_) => {
                return Err(value(
                    "--client-cmd",
                    "''",
                    "give the command that runs your benchmark",
                ));
            }
            None => {
                return Err(flag(
                    "--client-cmd",
                    "is needed with --transport exec: the command that runs your benchmark, e.g. 'sockperf ping-pong -i 127.0.0.1 -p {port} -t {duration_s}'",
                ));
            }
        };
        check_placeholders("--client-cmd", &cmd)?;
        let parser = self.flags.exec.parser.clone().ok_or_else(|| {
            flag(
                "--parser",
                format!(
                    "is needed with --transport exec: what reads the program's output ({})",
                    crate::parsers::usage().join(", ")
                ),
            )
        })?;
        for e in &self.flags.exec.client_env {
            e.check("--client-env")?;
        }
        let size_bytes = match &self.size {
            None => None,
            Some(_) => Some(self.fixed_size(0)?),
        };
        let uses =
            |p: &str| cmd.contains(p) || self.server_cmd.as_ref().is_some_and(|c| c.contains(p));
        if uses("{size}") && size_bytes.is_none() {
            return Err(flag("--size", "is needed: {size} is in a command"));
        }
        if uses("{rate}") && self.rate.is_none() {
            return Err(flag("--rate", "is needed: {rate} is in a command"));
        }
        Ok(TransportSpec::Exec(ExecSpec {
            client_cmd: cmd,
            parser,
            client_env: crate::command::env_map(&self.flags.exec.client_env),
            size_bytes,
        }))
    }
}

pub const ABOUT: About = About {
    shared: &[Shared::Size],
    schemes: &[],
    embedded: None,
    arch: false,
    no_agents: Some("an exec run's program makes its own load: drop --agents"),
    one_endpoint: Some("an exec run's program makes its own load: give one endpoint"),
    signs: false,
    own_program: true,
    no_conn_stages: Some("an exec run's program makes its own load: stages are wirebench's"),
    ..About::EXTERNAL
};

pub(crate) fn check(req: &Asked, _: TransportKind) -> Result<TransportSpec, SpecError> {
    req.exec()
}

impl Describe for ExecSpec {
    fn uses_port(&self) -> bool {
        self.client_cmd.contains("{port}")
    }

    fn has_size(&self) -> bool {
        self.size_bytes.is_some()
    }

    fn workload(&self, _depth: usize) -> String {
        format!("{} (parser {})", self.program(), self.parser.name())
    }

    fn mode_name(&self) -> String {
        self.parser.name().to_string()
    }
    fn size_bytes(&self) -> u64 {
        self.size_bytes.unwrap_or(0)
    }
    fn untraceable(&self) -> Option<&'static str> {
        Some("an exec run's program measures itself: wirebench has no events of its operations")
    }
    fn label(&self, _: &TargetSpec) -> String {
        format!("exec-{}", self.program())
    }
}

impl crate::transport::TransportSpec {
    /// The exec spec of a exec run.
    pub fn exec(&self) -> Option<&ExecSpec> {
        match self {
            crate::transport::TransportSpec::Exec(s) => Some(s),
            _ => None,
        }
    }
}
