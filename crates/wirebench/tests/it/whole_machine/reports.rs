//! The tests of `reports` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;
use crate::reports::*;

/// The messenger report: Figure 1.1 (IOPS against clients, a line per
/// server, a panel per placement), the table of runs in its columns, CPU
/// per core over time.
#[test]
fn messenger_report() {
    let _solo = exclusive();
    let r = reproduce("messenger");
    for placement in ["balanced", "separated"] {
        let f = r.figure(&format!("Throughput vs clients: placement={placement}"));
        assert!(has(f, "server=crimson") && has(f, "server=async"), "{f:?}");
        assert!(has(f, "clients") && has(f, "ops/s"), "axes: {f:?}");
    }
    let f = r.figure("CPU busy per core");
    assert!(f.iter().any(|t| t.starts_with("client cpu")), "{f:?}");
    assert!(f.iter().any(|t| t.starts_with("server cpu")), "{f:?}");
    let table = table_ok(&r.exp, &[]);
    let head = table.lines().next().unwrap();
    for col in [
        "| server |",
        "IOPS (k)",
        "placement",
        "connect time (s)",
        "latency mean (ms)",
        "messages received",
        "messaging time (s)",
        "out throughput (MiB/s)",
        "server CPUs (smp)",
    ] {
        assert!(head.contains(col), "{col}: {head}");
    }
    assert_eq!(table.matches("| complete |").count(), 8, "{table}");
}

/// The IPC report: its CSV lines (sessions, mt|mp, mode, size, nloop,
/// elapsed, messages/s, GB/s) and mt against mp.
#[test]
fn ipc_report() {
    let _solo = exclusive();
    let r = reproduce("ipc");
    // A panel per message size, a line per mode and mt/mp.
    for size in ["128B", "4KiB"] {
        let f = r.figure(&format!("Throughput vs clients: size={size}"));
        for line in [
            "mode=sync clients_as=mt",
            "mode=sync clients_as=mp",
            "mode=nores clients_as=mt",
            "mode=nores clients_as=mp",
        ] {
            assert!(has(f, line), "{line}: {f:?}");
        }
        assert!(has(f, "clients") && has(f, "ops/s"), "{f:?}");
    }
    let csv = table_ok(&r.exp, &["--format", "ipc"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "sessions,clients_as,mode,size_bytes,nloop,elapsed_s,messages_per_s,gib_per_s,operations,p50_us,p99_us"
    );
    assert_eq!(lines.len(), 17, "{csv}");
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        let sessions: f64 = f[0].parse().unwrap();
        assert!(
            ["mt", "mp"].contains(&f[1]) && ["sync", "nores"].contains(&f[2]),
            "{l}"
        );
        // nloop per session: 20000 operations in all.
        let nloop: f64 = f[4].parse().unwrap();
        assert_eq!(nloop * sessions, 20000.0, "{l}");
        let (elapsed, msgs, gib): (f64, f64, f64) = (
            f[5].parse().unwrap(),
            f[6].parse().unwrap(),
            f[7].parse().unwrap(),
        );
        let per_op = if f[2] == "sync" { 2.0 } else { 1.0 };
        assert!((msgs * elapsed / per_op - 20000.0).abs() < 200.0, "{l}");
        let size: f64 = f[3].parse().unwrap();
        assert!(
            (gib - msgs * size / 1073741824.0).abs() < 0.001 + gib * 0.01,
            "{l}"
        );
    }
}
