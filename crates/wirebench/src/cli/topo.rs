//! `wirebench topo`: the machine's topology and, for each placement policy,
//! the cpusets of the server and the client for each client count.

use super::error::usage;
use clap::Args;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use wirebench_core::placement::{self, Policy};
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
    let t = read(a.sys.as_ref())?;
    let usable = t.usable();
    let counts = if a.counts.is_empty() {
        let half = (usable.len() / 2).max(1);
        std::iter::successors(Some(1usize), |n| Some(n * 2))
            .take_while(|n| *n <= half)
            .collect()
    } else {
        if a.counts.contains(&0) {
            usage!("--counts: a client count must be at least 1");
        }
        a.counts.clone()
    };
    let mut out = std::io::stdout().lock();
    let policies = [Policy::Balanced, Policy::Separated];
    if a.format == "json" {
        let mut all = serde_json::Map::new();
        for p in &policies {
            let (mut server, mut client, mut notes) =
                (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
            for &n in &counts {
                let pl = placement::place(p, n, &t).map_err(anyhow::Error::msg)?;
                server.insert(n.to_string(), pl.server.to_string());
                client.insert(n.to_string(), pl.client.to_string());
                if !pl.notes.is_empty() {
                    notes.insert(n.to_string(), pl.notes);
                }
            }
            all.insert(
                p.name().into(),
                json!({ "server": server, "client": client, "notes": notes }),
            );
        }
        all.insert("topology".into(), serde_json::to_value(&t)?);
        serde_json::to_writer_pretty(&mut out, &all)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let count = |f: &dyn Fn(&wirebench_core::topo::Cpu) -> usize| {
        let mut v: Vec<usize> = t.cpus.iter().map(f).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    let cores = {
        let mut v: Vec<(usize, usize)> = t.cpus.iter().map(|c| (c.socket, c.core)).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    };
    writeln!(
        out,
        "{} CPUs online ({}), {} usable ({usable}); {} socket(s), {} NUMA node(s), {cores} physical cores, {} thread(s) per core",
        t.online.len(),
        t.online,
        usable.len(),
        count(&|c| c.socket),
        count(&|c| c.node),
        t.cpus.len() / cores.max(1),
    )?;
    for p in &policies {
        writeln!(out, "\n{}:", p.name())?;
        writeln!(
            out,
            "  {:>7}  {:<28} {:<28} notes",
            "clients", "server", "client"
        )?;
        for &n in &counts {
            let pl = placement::place(p, n, &t).map_err(anyhow::Error::msg)?;
            writeln!(
                out,
                "  {n:>7}  {:<28} {:<28} {}",
                pl.server.to_string(),
                pl.client.to_string(),
                pl.notes.join("; ")
            )?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
