//! Value parsers shared by the subcommands: each error names the value and
//! the expected form (clap adds the flag's name).

use std::time::Duration;
use wirebench_core::spec::Endpoint;
use wirebench_core::topo::{CpuList, Topology};
use wirebench_core::units;

pub fn size(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.to_string())
}

pub fn size_spec(s: &str) -> Result<wirebench_core::spec::SizeSpec, String> {
    wirebench_core::spec::SizeSpec::parse(s)
}

/// The weights of a mixed workload (a type of its own: clap takes a bare
/// Vec for a repeated flag).
#[derive(Debug, Clone, PartialEq)]
pub struct Mix(pub Vec<(wirebench_core::spec::Mode, u32)>);

/// Parses `get=70,put=20,delete=10`.
pub fn mix(s: &str) -> Result<Mix, String> {
    use wirebench_core::spec::Mode;
    let mut v = Vec::new();
    for part in s.split(',') {
        let (op, w) = part
            .split_once('=')
            .ok_or_else(|| format!("'{part}': write OP=WEIGHT, e.g. get=70,put=20,delete=10"))?;
        let op: Mode = op.trim().parse()?;
        if !matches!(
            op,
            Mode::Get | Mode::Put | Mode::Head | Mode::Delete | Mode::List
        ) {
            return Err(format!(
                "'{op}': the operations are get, put, head, delete, list"
            ));
        }
        let w: u32 = w
            .trim()
            .parse()
            .map_err(|_| format!("'{w}': a weight is a whole number"))?;
        if v.iter().any(|(o, _)| *o == op) {
            return Err(format!("'{op}' appears twice"));
        }
        if w > 0 {
            v.push((op, w));
        }
    }
    if v.is_empty() {
        return Err(format!("'{s}': every weight is 0"));
    }
    Ok(Mix(v))
}

pub fn rate(s: &str) -> Result<f64, String> {
    units::parse_rate(s).map_err(|e| e.to_string())
}

pub fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|e| e.to_string())
}

pub fn endpoint(s: &str) -> Result<Endpoint, String> {
    s.parse()
}

pub fn cpu_list(s: &str) -> Result<CpuList, String> {
    CpuList::parse(s).map_err(|e| e.to_string())
}

/// Checks that every CPU of `list` exists and may be used by this process.
pub fn check_cpus(flag: &str, list: &CpuList, topo: &Topology) -> Result<(), crate::UsageError> {
    let usable = topo.usable();
    let missing = list.missing_from(&usable);
    if missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<String> = missing.iter().map(|c| c.to_string()).collect();
    Err(crate::UsageError(format!(
        "{flag} {list}: CPU {} is not usable on this machine (usable CPUs: {usable}); pick CPUs from that list",
        missing.join(",")
    )))
}

/// Flags whose values are credentials: never printed nor stored.
const SECRET_FLAGS: [&str; 2] = ["--access-key", "--secret-key"];

/// This process's command line with credential values replaced by `***`.
pub fn command_line() -> Vec<String> {
    redact(std::env::args())
}

fn redact(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
        } else if let Some((flag, _)) = a.split_once('=').filter(|(f, _)| SECRET_FLAGS.contains(f))
        {
            out.push(format!("{flag}=***"));
        } else {
            hide_next = SECRET_FLAGS.contains(&a.as_str());
            out.push(a);
        }
    }
    out
}

#[cfg(test)]
mod redact_tests {
    #[test]
    fn credentials_are_redacted() {
        let a = [
            "wb",
            "run",
            "--secret-key",
            "s3cr3t",
            "--access-key=AK",
            "--size",
            "1",
        ];
        let r = super::redact(a.iter().map(|s| s.to_string()));
        assert_eq!(
            r,
            [
                "wb",
                "run",
                "--secret-key",
                "***",
                "--access-key=***",
                "--size",
                "1"
            ]
        );
    }
}
