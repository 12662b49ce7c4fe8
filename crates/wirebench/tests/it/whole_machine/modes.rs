//! The tests of `modes` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;

#[test]
fn contention_for_a_cpu_shows_as_run_queue_wait() {
    let _g = exclusive();
    let dir = TempDir::new("runq");
    // Three busy-polling clients pinned to one CPU are always runnable:
    // they wait for it in turn (without --poll they would mostly sleep,
    // waiting for the server, and contend only by chance).
    let cpu = wirebench_core::topo::Topology::read().usable().cpus()[0].to_string();
    let args = [
        "--poll",
        "--clients",
        "3",
        "--client-cpus",
        &cpu,
        "--depth",
        "4",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ];
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    let wait = r.summary.client_runq_wait_s.expect("schedstat is readable");
    assert!(wait > 0.05, "client run-queue wait {wait} s");
    assert!(r.summary.server_runq_wait_s.is_some());
}

/// In count mode the measured phase ends when the workers do: their
/// threads must still be there for the last sample, or their run-queue
/// wait is lost (it was: about a third of it was reported).
#[test]
fn run_queue_wait_counts_the_workers_to_the_end_of_a_count_run() {
    let _g = exclusive();
    let dir = TempDir::new("runq-count");
    let cpu = wirebench_core::topo::Topology::read().usable().cpus()[0].to_string();
    let args = [
        "--poll",
        "--clients",
        "3",
        "--client-cpus",
        &cpu,
        "--depth",
        "4",
        "--count",
        "50000",
        "--warmup",
        "0s",
    ];
    let (st, r, err) = run_json(&dir, &args);
    assert!(st.success(), "{err}");
    let wait = r.summary.client_runq_wait_s.expect("schedstat is readable");
    let secs = r.summary.measured_ns as f64 / 1e9;
    // Three always-runnable threads on one CPU: each waits about two thirds
    // of the time, so about 2 x the phase in all.
    assert!(
        wait > secs,
        "client run-queue wait {wait} s over a {secs} s phase"
    );
}
