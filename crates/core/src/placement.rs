//! CPU placement policies, computed from the topology for a client count
//! `n` (the server gets as many CPUs as the client, as in the messenger
//! report where clients = cores = smp):
//!
//! - `balanced`: server and client each use physical cores *and their
//!   hyper-thread siblings*, spread over the sockets; the server takes the
//!   first cores of each socket, the client the next ones;
//! - `separated`: physical cores only (no siblings), the server on one NUMA
//!   node and the client on another;
//! - `explicit`: a table of cpusets per client count, in the report's JSON
//!   shape (`{"server": {"2": "0,56", ...}, "client": {...}}`).
//!
//! When the machine is too small for a policy, the nearest placement is
//! used and the notes say what was used and why.

use crate::topo::{CpuList, Topology};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a sweep sets in each run's request (never a flag): the placement
/// that chose its cpusets, and which instance of its point it is.
/// Flattened into the run's [`RunRequest`](crate::request::RunRequest).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, clap::Args)]
pub struct SetBySweep {
    /// The placement policy that chose the cpusets (set by a sweep).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_policy: Option<String>,
    /// Notes on the placement (set by a sweep).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement_note: Vec<String>,
    /// Which of a sweep point's instances this run is: what `{instance}`
    /// stands for (set by a sweep; 0 otherwise).
    #[arg(skip)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<usize>,
}

/// A placement policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    Balanced,
    Separated,
    Explicit(ExplicitTable),
}

impl Policy {
    pub fn name(&self) -> &'static str {
        match self {
            Policy::Balanced => "balanced",
            Policy::Separated => "separated",
            Policy::Explicit(_) => "explicit",
        }
    }
}

/// The report's table: cpusets per client count, for the server and the
/// client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ExplicitTable {
    pub server: BTreeMap<String, String>,
    pub client: BTreeMap<String, String>,
}

impl ExplicitTable {
    /// Reads a table: `{"server": {...}, "client": {...}}`, or one entry of
    /// a file holding several (`{"balanced": {"server": ...}, ...}`), named
    /// by `entry`.
    pub fn parse(text: &str, entry: Option<&str>) -> Result<ExplicitTable, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let v = match entry {
            Some(name) => v
                .get(name)
                .cloned()
                .ok_or_else(|| format!("no entry '{name}' in the table"))?,
            None => v,
        };
        let t: ExplicitTable = serde_json::from_value(v).map_err(|e| {
            format!(
                "not a cpuset table ({{\"server\": {{\"N\": \"cpus\"}}, \"client\": {{...}}}}): {e}"
            )
        })?;
        for (side, map) in [("server", &t.server), ("client", &t.client)] {
            for (k, list) in map {
                k.parse::<usize>()
                    .map_err(|_| format!("{side}: '{k}' is not a client count"))?;
                CpuList::parse(list).map_err(|e| format!("{side} {k}: {e}"))?;
            }
        }
        Ok(t)
    }
}

/// Where a run's server and client go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planned {
    pub policy: String,
    pub clients: usize,
    pub server: CpuList,
    pub client: CpuList,
    /// What differs from the policy and why (empty: exactly the policy).
    pub notes: Vec<String>,
}

/// A physical core: its logical CPUs, lowest first.
#[derive(Debug, Clone)]
struct Core {
    threads: Vec<usize>,
}

/// The usable physical cores, grouped by `key` (socket or NUMA node), each
/// group sorted by lowest CPU id.
fn cores_by(topo: &Topology, key: impl Fn(&crate::topo::Cpu) -> usize) -> Vec<Vec<Core>> {
    let usable = topo.usable();
    let mut groups: BTreeMap<usize, BTreeMap<(usize, usize), Vec<usize>>> = BTreeMap::new();
    for c in topo.cpus.iter().filter(|c| usable.contains(c.id)) {
        groups
            .entry(key(c))
            .or_default()
            .entry((c.socket, c.core))
            .or_default()
            .push(c.id);
    }
    groups
        .into_values()
        .map(|cores| {
            let mut v: Vec<Core> = cores
                .into_values()
                .map(|mut threads| {
                    threads.sort_unstable();
                    Core { threads }
                })
                .collect();
            v.sort_by_key(|c| c.threads[0]);
            v
        })
        .collect()
}

fn list(cpus: Vec<usize>) -> CpuList {
    CpuList::from_cpus(cpus).expect("a policy never plans an empty cpuset")
}

/// Computes the placement of `n` clients (and an `n`-CPU server).
pub fn place(policy: &Policy, n: usize, topo: &Topology) -> Result<Planned, String> {
    if n == 0 {
        return Err("a placement needs at least 1 client".into());
    }
    let planned = match policy {
        Policy::Balanced => balanced(n, topo),
        Policy::Separated => separated(n, topo),
        Policy::Explicit(t) => return explicit(t, n, topo),
    };
    Ok(planned.unwrap_or_else(|why| nearest(policy.name(), n, topo, why)))
}

fn balanced(n: usize, topo: &Topology) -> Result<Planned, String> {
    let sockets = cores_by(topo, |c| c.socket);
    let threads = sockets
        .iter()
        .flatten()
        .map(|c| c.threads.len())
        .max()
        .unwrap_or(1);
    let k = n.div_ceil(threads);
    let s = sockets.len();
    let mut server = Vec::new();
    let mut client = Vec::new();
    for (i, cores) in sockets.iter().enumerate() {
        let m = k / s + usize::from(i < k % s);
        if 2 * m > cores.len() {
            return Err(format!(
                "balanced needs {} cores on socket {i} for {n} clients, it has {}",
                2 * m,
                cores.len()
            ));
        }
        server.extend(cores[..m].iter().flat_map(|c| c.threads.iter().copied()));
        client.extend(
            cores[m..2 * m]
                .iter()
                .flat_map(|c| c.threads.iter().copied()),
        );
    }
    let mut notes = Vec::new();
    if threads == 1 {
        notes.push(
            "no hyper-thread siblings on this machine: balanced uses physical cores only".into(),
        );
    }
    // An odd count leaves one sibling of the last core unused.
    for side in [&mut server, &mut client] {
        if side.len() > n {
            side.sort_unstable();
            side.truncate(n);
            notes.push(format!(
                "{n} is not a multiple of {threads} threads per core: one sibling left unused"
            ));
        }
    }
    notes.dedup();
    Ok(Planned {
        policy: "balanced".into(),
        clients: n,
        server: list(server),
        client: list(client),
        notes,
    })
}

fn separated(n: usize, topo: &Topology) -> Result<Planned, String> {
    let nodes = cores_by(topo, |c| c.node);
    let firsts = |cores: &[Core]| -> Vec<usize> { cores.iter().map(|c| c.threads[0]).collect() };
    let mut notes = Vec::new();
    let (server, client) = if nodes.len() >= 2 {
        let (a, b) = (firsts(&nodes[0]), firsts(&nodes[1]));
        if n > a.len() || n > b.len() {
            // More clients than a node has physical cores: each side
            // takes the hyper-thread siblings of its own node's cores
            // too, never the other side's.
            let all = |cores: &[Core]| -> Vec<usize> {
                let mut v: Vec<usize> = cores.iter().map(|c| c.threads[0]).collect();
                v.extend(cores.iter().flat_map(|c| c.threads.iter().skip(1).copied()));
                v
            };
            let (a, b) = (all(&nodes[0]), all(&nodes[1]));
            if n > a.len() || n > b.len() {
                return Err(format!(
                    "separated needs {n} CPUs on each of two NUMA nodes, they have {} and {}",
                    a.len(),
                    b.len()
                ));
            }
            notes.push(format!(
                "{n} clients: more than the {} physical cores of a NUMA node; server and client each also take the hyper-thread siblings of their own node's cores",
                firsts(&nodes[0]).len().min(firsts(&nodes[1]).len())
            ));
            (a[..n].to_vec(), b[..n].to_vec())
        } else {
            (a[..n].to_vec(), b[..n].to_vec())
        }
    } else {
        let all = firsts(nodes.first().map_or(&[][..], |v| &v[..]));
        if 2 * n > all.len() {
            return Err(format!(
                "separated needs {} physical cores for {n} clients, this machine has {}",
                2 * n,
                all.len()
            ));
        }
        notes.push(
            "one NUMA node: server and client on separate physical cores of the same node".into(),
        );
        (all[..n].to_vec(), all[n..2 * n].to_vec())
    };
    Ok(Planned {
        policy: "separated".into(),
        clients: n,
        server: list(server),
        client: list(client),
        notes,
    })
}

fn explicit(t: &ExplicitTable, n: usize, topo: &Topology) -> Result<Planned, String> {
    let key = n.to_string();
    let get = |side: &str, map: &BTreeMap<String, String>| -> Result<CpuList, String> {
        let text = map.get(&key).ok_or_else(|| {
            format!(
                "the explicit table has no {side} cpuset for {n} clients (it has {})",
                map.keys().cloned().collect::<Vec<_>>().join(", ")
            )
        })?;
        let l = CpuList::parse(text).map_err(|e| e.to_string())?;
        let missing = l.missing_from(&topo.usable());
        if !missing.is_empty() {
            return Err(format!(
                "the explicit {side} cpuset for {n} clients ({l}) names CPUs this machine does not have or this process may not use: {missing:?}"
            ));
        }
        Ok(l)
    };
    Ok(Planned {
        policy: "explicit".into(),
        clients: n,
        server: get("server", &t.server)?,
        client: get("client", &t.client)?,
        notes: vec![],
    })
}

/// The default split (client on the lower half of the usable CPUs, server
/// on the upper half) when a policy does not fit the machine.
fn nearest(policy: &str, n: usize, topo: &Topology, why: String) -> Planned {
    let usable = topo.usable();
    let cpus = usable.cpus();
    let (client, server) = if cpus.len() >= 2 {
        let mid = cpus.len() / 2;
        (list(cpus[..mid].to_vec()), list(cpus[mid..].to_vec()))
    } else {
        (usable.clone(), usable.clone())
    };
    Planned {
        policy: policy.into(),
        clients: n,
        notes: vec![format!(
            "the machine is too small for {policy}: {why}; used the nearest placement instead: client {client}, server {server}"
        )],
        server,
        client,
    }
}

/// One policy's cpusets per client count, in the messenger report's JSON
/// shape (`{"server": {"2": "0,56"}, "client": {...}}`), with the notes of
/// the counts placed other than the policy says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyTable {
    pub server: BTreeMap<String, String>,
    pub client: BTreeMap<String, String>,
    pub notes: BTreeMap<String, Vec<String>>,
}

/// The client counts `topo` shows by default: 1, 2, 4... up to half its
/// usable CPUs.
pub fn default_counts(topo: &Topology) -> Vec<usize> {
    let half = (topo.usable().len() / 2).max(1);
    std::iter::successors(Some(1usize), |n| Some(n * 2))
        .take_while(|n| *n <= half)
        .collect()
}

/// The balanced and separated policies' tables for `counts` clients.
pub fn tables(
    topo: &Topology,
    counts: &[usize],
) -> Result<Vec<(&'static str, PolicyTable)>, String> {
    let mut out = Vec::new();
    for p in [Policy::Balanced, Policy::Separated] {
        let mut t = PolicyTable::default();
        for &n in counts {
            let pl = place(&p, n, topo)?;
            t.server.insert(n.to_string(), pl.server.to_string());
            t.client.insert(n.to_string(), pl.client.to_string());
            if !pl.notes.is_empty() {
                t.notes.insert(n.to_string(), pl.notes);
            }
        }
        out.push((p.name(), t));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::fixture;

    /// The report's JSON table (crimson-vs-async-messenger.md).
    const REPORT: &str = r#"{
"balanced": {
  "server": {"2": "0,56", "4": "0,56,28,84", "8": "0-1,56-57,28-29,84-85", "16": "0-3,56-59,28-31,84-87",
             "28": "0-6,56-62,28-34,84-90", "32": "0-7,56-63,28-35,84-91", "40": "0-9,56-65,28-37,84-93",
             "56": "0-13,56-69,28-41,84-97"},
  "client": {"2": "1,57", "4": "1,57,29,85", "8": "2-3,58-59,30-31,86-87", "16": "4-7,60-63,32-35,88-91",
             "28": "7-13,63-69,35-41,91-97", "32": "8-15,64-71,36-43,92-99", "40": "10-19,66-75,38-47,94-103",
             "56": "14-27,70-83,42-55,98-111"}
},
"separated": {
  "server": {"2": "0-1", "4": "0-3", "8": "0-7", "16": "0-15", "28": "0-27"},
  "client": {"2": "28-29", "4": "28-31", "8": "28-35", "16": "28-43", "28": "28-55"}
}
}"#;

    #[test]
    fn the_reports_table_is_reproduced_on_its_machine() {
        let dir = fixture::TempSys::new("report");
        fixture::write(dir.path(), 2, 28, 2, fixture::Numbering::ThreadMajor);
        let topo = Topology::read_from(dir.path(), None);
        assert_eq!(topo.cpus.len(), 112);
        for (name, policy) in [
            ("balanced", Policy::Balanced),
            ("separated", Policy::Separated),
        ] {
            let table = ExplicitTable::parse(REPORT, Some(name)).unwrap();
            for (n, server) in &table.server {
                let n: usize = n.parse().unwrap();
                let p = place(&policy, n, &topo).unwrap();
                assert_eq!(
                    p.server,
                    CpuList::parse(server).unwrap(),
                    "{name} {n} server"
                );
                let client = &table.client[&n.to_string()];
                assert_eq!(
                    p.client,
                    CpuList::parse(client).unwrap(),
                    "{name} {n} client"
                );
                assert!(p.notes.is_empty(), "{name} {n}: {:?}", p.notes);
                assert_eq!(p.server.len(), n);
                assert!(!p.server.overlaps(&p.client));
            }
        }
        // And the table itself, used as an explicit policy, gives the same.
        let t = ExplicitTable::parse(REPORT, Some("balanced")).unwrap();
        let p = place(&Policy::Explicit(t), 8, &topo).unwrap();
        assert_eq!(p.client.to_string(), "2-3,30-31,58-59,86-87");
    }

    /// Issue 36: separated past a node's physical cores (32..56 clients on
    /// the report's machine) keeps each side on its own node, with its own
    /// cores' siblings, never the other side's.
    #[test]
    fn issue_36_separated_past_the_physical_cores_stays_on_its_own_node() {
        let dir = fixture::TempSys::new("sep56");
        fixture::write(dir.path(), 2, 28, 2, fixture::Numbering::ThreadMajor);
        let topo = Topology::read_from(dir.path(), None);
        let node = |cpu: usize| topo.cpus.iter().find(|c| c.id == cpu).unwrap().node;
        for n in [32, 40, 56] {
            let p = place(&Policy::Separated, n, &topo).unwrap();
            assert_eq!((p.server.len(), p.client.len()), (n, n), "{n}");
            assert!(
                p.server.cpus().iter().all(|&c| node(c) == 0),
                "{n}: {}",
                p.server
            );
            assert!(
                p.client.cpus().iter().all(|&c| node(c) == 1),
                "{n}: {}",
                p.client
            );
            assert!(
                p.notes[0].contains("hyper-thread siblings of their own node"),
                "{:?}",
                p.notes
            );
        }
        let p = place(&Policy::Separated, 32, &topo).unwrap();
        assert_eq!(p.server.to_string(), "0-27,56-59");
        assert_eq!(p.client.to_string(), "28-55,84-87");
    }

    #[test]
    fn a_two_core_vm_gets_the_nearest_placement_and_says_why() {
        let dir = fixture::TempSys::new("vm");
        fixture::write(dir.path(), 1, 2, 1, fixture::Numbering::ThreadMajor);
        let topo = Topology::read_from(dir.path(), None);
        let p = place(&Policy::Balanced, 1, &topo).unwrap();
        assert_eq!(
            (p.server.to_string(), p.client.to_string()),
            ("0".into(), "1".into())
        );
        assert!(
            p.notes[0].contains("no hyper-thread siblings"),
            "{:?}",
            p.notes
        );
        let p = place(&Policy::Separated, 1, &topo).unwrap();
        assert_eq!(
            (p.server.to_string(), p.client.to_string()),
            ("0".into(), "1".into())
        );
        assert!(p.notes[0].contains("one NUMA node"), "{:?}", p.notes);
        let p = place(&Policy::Separated, 2, &topo).unwrap();
        assert!(
            p.notes[0].contains("too small for separated"),
            "{:?}",
            p.notes
        );
        assert_eq!(
            (p.server.to_string(), p.client.to_string()),
            ("1".into(), "0".into())
        );
    }

    #[test]
    fn a_four_core_laptop_pairs_siblings() {
        let dir = fixture::TempSys::new("laptop");
        // Siblings 0/4, 1/5, 2/6, 3/7.
        fixture::write(dir.path(), 1, 4, 2, fixture::Numbering::ThreadMajor);
        let topo = Topology::read_from(dir.path(), None);
        let p = place(&Policy::Balanced, 4, &topo).unwrap();
        assert_eq!(p.server.to_string(), "0-1,4-5");
        assert_eq!(p.client.to_string(), "2-3,6-7");
        assert!(p.notes.is_empty(), "{:?}", p.notes);
        let p = place(&Policy::Balanced, 3, &topo).unwrap();
        assert_eq!(p.server.len(), 3);
        assert!(p.notes[0].contains("sibling left unused"), "{:?}", p.notes);
        let p = place(&Policy::Separated, 2, &topo).unwrap();
        assert_eq!(p.server.to_string(), "0-1");
        assert_eq!(p.client.to_string(), "2-3");
        let p = place(&Policy::Balanced, 8, &topo).unwrap();
        assert!(p.notes[0].contains("too small"), "{:?}", p.notes);
    }

    #[test]
    fn explicit_tables_are_checked() {
        assert!(ExplicitTable::parse("{", None).is_err());
        assert!(ExplicitTable::parse(r#"{"server": {"x": "0"}, "client": {}}"#, None).is_err());
        assert!(ExplicitTable::parse(r#"{"server": {"2": "0-"}, "client": {}}"#, None).is_err());
        let t = ExplicitTable::parse(r#"{"server": {"1": "0"}, "client": {"1": "999"}}"#, None)
            .unwrap();
        let dir = fixture::TempSys::new("explicit");
        fixture::write(dir.path(), 1, 2, 1, fixture::Numbering::ThreadMajor);
        let topo = Topology::read_from(dir.path(), None);
        let e = place(&Policy::Explicit(t.clone()), 1, &topo).unwrap_err();
        assert!(e.contains("999"), "{e}");
        let e = place(&Policy::Explicit(t), 2, &topo).unwrap_err();
        assert!(e.contains("no server cpuset for 2 clients"), "{e}");
    }
}
