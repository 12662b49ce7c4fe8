//! `wirebench topo`: the machine's topology and, for each placement policy,
//! the cpusets of the server and the client for each client count.

use super::error::usage;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_core::placement;
use wirebench_core::topo::Topology;

#[derive(Args, Debug)]
pub struct TopoArgs {
    /// Read the topology from this /sys tree instead of the machine's (e.g. a copy of another
    /// machine's /sys/devices/system).
    #[arg(long)]
    sys: Option<PathBuf>,
    /// Client counts to place (e.g. 2,4,8,16). Default: 1, 2, 4... up to half the usable CPUs.
    #[arg(long, value_delimiter = ',')]
    counts: Vec<usize>,
    /// text, or json: the report's shape ({"balanced": {"server": {"2": "0,56"}, "client":
    /// ...}}, plus notes).
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    format: String,
    /// Write the /sys tree of a machine of this shape, SOCKETSxCORESxTHREADS (one NUMA node per
    /// socket, Linux's usual numbering: siblings 0/56 on 2x28x2), into DIR, to plan for it
    /// with --sys: e.g. --write-sys /tmp/sys-2x28x2 --shape 2x28x2 (the messenger report's
    /// machine).
    #[arg(long, value_name = "DIR", requires = "shape")]
    write_sys: Option<PathBuf>,
    /// The shape --write-sys writes.
    #[arg(long, value_name = "SxCxT", requires = "write_sys")]
    shape: Option<String>,
}

/// The topology (the machine's, or a /sys tree's).
pub fn read(sys: Option<&PathBuf>) -> anyhow::Result<Topology> {
    Ok(match sys {
        None => Topology::read(),
        Some(p) => {
            if !p.join("devices/system/cpu/online").is_file() {
                usage!(
                    "--sys {}: no devices/system/cpu/online under it: give the root of a /sys tree",
                    p.display()
                );
            }
            Topology::read_from(p, None)
        }
    })
}

pub fn topo(a: TopoArgs) -> anyhow::Result<ExitCode> {
    if let (Some(dir), Some(text)) = (&a.write_sys, &a.shape) {
        let Some((s, c, th)) = wirebench_core::topo::fixture::parse_shape(text) else {
            usage!(
                "--shape {text}: SOCKETSxCORESxTHREADS, e.g. 2x28x2 (threads 1-8, at most 4096 CPUs)"
            );
        };
        if dir.join("devices").exists() {
            usage!("--write-sys {}: holds a /sys tree already", dir.display());
        }
        std::fs::create_dir_all(dir)?;
        wirebench_core::topo::fixture::write(
            dir,
            s,
            c,
            th,
            wirebench_core::topo::fixture::Numbering::ThreadMajor,
        );
        println!(
            "{}: the /sys tree of {s} socket(s) x {c} cores x {th} thread(s) ({} CPUs); plan with --sys {}",
            dir.display(),
            s * c * th,
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let t = read(a.sys.as_ref())?;
    if a.counts.contains(&0) {
        usage!("--counts: a client count must be at least 1");
    }
    let counts = match a.counts.is_empty() {
        true => placement::default_counts(&t),
        false => a.counts.clone(),
    };
    let tables = placement::tables(&t, &counts).map_err(anyhow::Error::msg)?;
    let mut out = crate::ui::stdout();
    if a.format == "json" {
        serde_json::to_writer_pretty(&mut out, &wirebench_report::topo::json(&t, &tables))?;
        writeln!(out)?;
    } else {
        write!(
            out,
            "{}",
            wirebench_report::topo::text(&t, &tables, &counts)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
