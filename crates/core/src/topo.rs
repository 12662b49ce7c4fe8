//! CPU lists (`0-3,8`) and the machine's topology, read from
//! /sys/devices/system/{cpu,node} and /proc/self/status. Reading files is the
//! only OS-specific thing here; everything else is pure.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// A sorted, duplicate-free list of CPU ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(into = "String", try_from = "String")]
pub struct CpuList(Vec<usize>);

/// Why a CPU list could not be read or used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuListError {
    #[error("'{0}' is not a CPU list: write ids and ranges such as 0-3,8")]
    Syntax(String),
    #[error("the CPU list is empty")]
    Empty,
}

impl CpuList {
    /// Parses the kernel's list format: `0-3,8,10-11`.
    pub fn parse(text: &str) -> Result<CpuList, CpuListError> {
        let err = || CpuListError::Syntax(text.to_string());
        let mut cpus = Vec::new();
        for part in text.trim().split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(err());
            }
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.parse().map_err(|_| err())?, b.parse().map_err(|_| err())?),
                None => {
                    let c: usize = part.parse().map_err(|_| err())?;
                    (c, c)
                }
            };
            if lo > hi || hi >= 1 << 16 {
                return Err(err());
            }
            cpus.extend(lo..=hi);
        }
        CpuList::from_cpus(cpus)
    }

    /// Builds a list from ids in any order.
    pub fn from_cpus(mut cpus: Vec<usize>) -> Result<CpuList, CpuListError> {
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            return Err(CpuListError::Empty);
        }
        Ok(CpuList(cpus))
    }

    pub fn cpus(&self) -> &[usize] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, cpu: usize) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// The ids of `self` missing from `other`.
    pub fn missing_from(&self, other: &CpuList) -> Vec<usize> {
        self.0
            .iter()
            .copied()
            .filter(|c| !other.contains(*c))
            .collect()
    }

    pub fn overlaps(&self, other: &CpuList) -> bool {
        self.0.iter().any(|c| other.contains(*c))
    }
}

impl fmt::Display for CpuList {
    /// Writes the kernel's compact form, ranges folded: `0-3,8`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        let mut first = true;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end = self.0[i];
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

impl std::str::FromStr for CpuList {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<CpuList, CpuListError> {
        CpuList::parse(s)
    }
}

impl From<CpuList> for String {
    fn from(l: CpuList) -> String {
        l.to_string()
    }
}

impl TryFrom<String> for CpuList {
    type Error = CpuListError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        CpuList::parse(&s)
    }
}

/// One logical CPU and where it sits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    pub id: usize,
    pub socket: usize,
    pub core: usize,
    pub node: usize,
    /// This CPU and its hyper-thread siblings.
    pub siblings: String,
}

/// The machine as the kernel describes it, plus what this process may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub online: CpuList,
    /// CPUs this process is allowed to run on (its affinity mask at start).
    pub allowed: CpuList,
    pub cpus: Vec<Cpu>,
}

fn read_trim(path: impl AsRef<Path>) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

impl Topology {
    /// Reads the topology of this machine. Missing files (containers often
    /// hide some) give zeros rather than an error.
    pub fn read() -> Topology {
        let allowed = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .and_then(|v| CpuList::parse(v).ok())
            });
        Topology::read_from(Path::new("/sys"), allowed)
    }

    /// Reads a topology from a /sys tree at `sys` (the machine's, or a
    /// fixture's); `allowed`: the affinity mask (None: every online CPU).
    pub fn read_from(sys: &Path, allowed: Option<CpuList>) -> Topology {
        let online = read_trim(sys.join("devices/system/cpu/online"))
            .and_then(|s| CpuList::parse(&s).ok())
            .or_else(|| {
                CpuList::from_cpus(
                    (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
                )
                .ok()
            })
            .expect("at least one CPU");
        let allowed = allowed.unwrap_or_else(|| online.clone());
        let mut node_of = std::collections::HashMap::new();
        if let Ok(dir) = std::fs::read_dir(sys.join("devices/system/node")) {
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if let Some(n) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<usize>().ok())
                    && let Some(list) = read_trim(entry.path().join("cpulist"))
                        .and_then(|s| CpuList::parse(&s).ok())
                {
                    for c in list.cpus() {
                        node_of.insert(*c, n);
                    }
                }
            }
        }
        let cpus = online
            .cpus()
            .iter()
            .map(|&id| {
                let base = sys.join(format!("devices/system/cpu/cpu{id}/topology"));
                let num = |f: &str| {
                    read_trim(base.join(f))
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0)
                };
                Cpu {
                    id,
                    socket: num("physical_package_id"),
                    core: num("core_id"),
                    node: node_of.get(&id).copied().unwrap_or(0),
                    siblings: read_trim(base.join("thread_siblings_list"))
                        .unwrap_or_else(|| id.to_string()),
                }
            })
            .collect();
        Topology {
            online,
            allowed,
            cpus,
        }
    }

    /// A flat machine of `cpus` (one socket, one core per CPU, no siblings),
    /// all usable: for tests and examples.
    pub fn with_cpus(cpus: CpuList) -> Topology {
        Topology {
            allowed: cpus.clone(),
            cpus: cpus
                .cpus()
                .iter()
                .map(|&id| Cpu {
                    id,
                    socket: 0,
                    core: id,
                    node: 0,
                    siblings: id.to_string(),
                })
                .collect(),
            online: cpus,
        }
    }

    /// The CPUs a run may use: online and in this process's affinity mask.
    pub fn usable(&self) -> CpuList {
        let v: Vec<usize> = self
            .online
            .cpus()
            .iter()
            .copied()
            .filter(|c| self.allowed.contains(*c))
            .collect();
        CpuList::from_cpus(v).unwrap_or_else(|_| self.online.clone())
    }

    /// One line: CPUs online and usable, sockets, NUMA nodes, cores, threads.
    pub fn describe(&self) -> String {
        let count = |f: &dyn Fn(&Cpu) -> (usize, usize)| {
            let mut v: Vec<(usize, usize)> = self.cpus.iter().map(f).collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        let cores = count(&|c| (c.socket, c.core));
        let usable = self.usable();
        format!(
            "{} CPUs online ({}), {} usable ({usable}); {} socket(s), {} NUMA node(s), {cores} physical cores, {} thread(s) per core",
            self.online.len(),
            self.online,
            usable.len(),
            count(&|c| (c.socket, 0)),
            count(&|c| (c.node, 0)),
            self.cpus.len() / cores.max(1),
        )
    }

    pub fn sockets(&self) -> usize {
        let mut s: Vec<usize> = self.cpus.iter().map(|c| c.socket).collect();
        s.sort_unstable();
        s.dedup();
        s.len().max(1)
    }
}

/// Fake /sys trees for tests (and for `wirebench topo --sys`): machines of
/// any shape, written to a directory.
#[doc(hidden)]
pub mod fixture {
    use super::CpuList;
    use std::path::{Path, PathBuf};

    /// How logical CPU ids are numbered.
    #[derive(Debug, Clone, Copy)]
    pub enum Numbering {
        /// Linux's usual order: every core's first thread, socket by socket,
        /// then every core's second thread (the report's machine: siblings
        /// 0/56).
        ThreadMajor,
    }

    /// `SOCKETSxCORESxTHREADS` (`2x28x2`): threads 1-8, at most 4096 CPUs.
    pub fn parse_shape(text: &str) -> Option<(usize, usize, usize)> {
        let n: Vec<usize> = text
            .split('x')
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        match n.as_slice() {
            [s, c, t] if *s >= 1 && *c >= 1 && (1..=8).contains(t) && s * c * t <= 4096 => {
                Some((*s, *c, *t))
            }
            _ => None,
        }
    }

    /// Writes the /sys files wirebench reads for a machine of `sockets` x
    /// `cores` x `threads`, one NUMA node per socket.
    pub fn write(root: &Path, sockets: usize, cores: usize, threads: usize, _n: Numbering) {
        let total = sockets * cores * threads;
        let id = |t: usize, s: usize, c: usize| t * sockets * cores + s * cores + c;
        let put = |rel: String, text: String| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("fixture dir");
            std::fs::write(p, text + "\n").expect("fixture file");
        };
        put(
            "devices/system/cpu/online".into(),
            format!("0-{}", total - 1),
        );
        for s in 0..sockets {
            let mut node = Vec::new();
            for c in 0..cores {
                let sibs: Vec<usize> = (0..threads).map(|t| id(t, s, c)).collect();
                let sib_text = CpuList::from_cpus(sibs.clone()).expect("cpus").to_string();
                for &cpu in &sibs {
                    let base = format!("devices/system/cpu/cpu{cpu}/topology");
                    put(format!("{base}/physical_package_id"), s.to_string());
                    put(format!("{base}/core_id"), c.to_string());
                    put(format!("{base}/thread_siblings_list"), sib_text.clone());
                }
                node.extend(sibs);
            }
            let list = CpuList::from_cpus(node).expect("cpus").to_string();
            put(format!("devices/system/node/node{s}/cpulist"), list);
        }
    }

    /// A temporary directory, removed when dropped.
    pub struct TempSys(PathBuf);

    impl TempSys {
        pub fn new(tag: &str) -> TempSys {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p = std::env::temp_dir().join(format!("wb-sys-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).expect("temp dir");
            TempSys(p)
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempSys {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Checks that every CPU of `list` exists and may be used by this process.
pub fn check_cpus(
    name: &'static str,
    list: &CpuList,
    topo: &Topology,
) -> Result<(), crate::error::SpecError> {
    let usable = topo.usable();
    let missing = list.missing_from(&usable);
    if missing.is_empty() {
        return Ok(());
    }
    let missing: Vec<String> = missing.iter().map(|c| c.to_string()).collect();
    Err(crate::error::value(
        name,
        list,
        format!(
            "CPU {} is not usable on this machine (usable CPUs: {usable}); pick CPUs from that list",
            missing.join(",")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_format_round_trip() {
        let l = CpuList::parse("8,0-3, 2").unwrap();
        assert_eq!(l.cpus(), &[0, 1, 2, 3, 8]);
        assert_eq!(l.to_string(), "0-3,8");
        assert_eq!(CpuList::parse("5").unwrap().to_string(), "5");
        for bad in ["", "a", "3-1", "1,,2", "-1", "1-"] {
            assert!(CpuList::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn set_operations() {
        let a = CpuList::parse("0-3").unwrap();
        let b = CpuList::parse("2-5").unwrap();
        assert!(a.overlaps(&b));
        assert_eq!(b.missing_from(&a), vec![4, 5]);
    }

    #[test]
    fn this_machine_has_a_topology() {
        let t = Topology::read();
        assert!(!t.online.is_empty());
        assert_eq!(t.cpus.len(), t.online.len());
        assert!(!t.usable().is_empty());
    }
}
