//! Issue 45's answers against real servers, on the machine alone: where a
//! ramp broke, a backlog kept to its stage, a search that low-rate misses
//! cannot drive down, and nginx's workers observed by its master's PID.

use crate::fixtures::daemon::Daemon;
use crate::fixtures::nginx::Nginx;
use crate::helpers::*;
use crate::openloop::cpus;
use std::time::Duration;

/// A ramp from 2k to 30k/s against a server of capacity 20,000/s (one
/// worker, 50 us a request): the knee named is within 15% of 20,000/s, its
/// interval brackets it, `p99<2ms` fails for good near it, and the ramp
/// has a row per band in run.json.
#[test]
fn issue_45_a_ramp_names_its_knee_near_the_capacity() {
    let _g = exclusive();
    let (client, server) = cpus();
    let srv = Server::start(&["--cpus", &server, "--service", "50us"]);
    let mut kept = None;
    // A busy machine (two CPU hogs beside it) put the knee at 7,250/s: a
    // run that says the machine was busy is tried again, and skipped with
    // its figures after three.
    on_a_quiet_machine(|| {
        let dir = TempDir::new("knee");
        let (st, r, err) = run_json(
            &dir,
            &[
                "--target",
                &srv.endpoint,
                "--client-cpus",
                &client,
                "--stages",
                "2s:2k/s, 16s:2k->30k/s",
                "--slo",
                "p99<2ms",
            ],
        );
        // The objective fails over the whole run (the ramp overloads it).
        assert!(st.code() == Some(3) || st.success(), "{err}");
        let knee = r
            .ramp
            .as_ref()
            .and_then(|v| v.knee.as_ref())
            .map(|k| k.rate_per_s);
        let check = match knee {
            Some(k) if (k / 20_000.0 - 1.0).abs() <= 0.15 => Ok(()),
            _ => Err(format!(
                "knee {knee:?} against a capacity of 20000/s: {:?}",
                r.ramp
            )),
        };
        let busy = machine_busy(&r);
        kept = Some(r);
        (busy, check)
    });
    srv.stop();
    let Some(r) = kept.filter(|r| {
        r.ramp
            .as_ref()
            .and_then(|v| v.knee.as_ref())
            .is_some_and(|k| (k.rate_per_s / 20_000.0 - 1.0).abs() <= 0.15)
    }) else {
        return; // skipped, said above
    };
    assert_eq!(r.stages[1].bands.len(), 16, "{:?}", r.stages[1]);
    let v = r.ramp.as_ref().expect("a ramp verdict");
    let k = v.knee.as_ref().unwrap_or_else(|| panic!("a knee: {v:?}"));
    assert!(
        k.last_low_per_s <= 20_000.0 * 1.05 && k.first_high_per_s >= 20_000.0 * 0.9,
        "{k:?}"
    );
    assert!(
        (k.max_completed_per_s / 20_000.0 - 1.0).abs() < 0.05,
        "{k:?}"
    );
    // Past the capacity the objective fails for good (it may before: this
    // VM's own p99 passes 2 ms now and then at any rate).
    let b = &v.breaks[0];
    let failed = b.failed_from_per_s.expect("p99<2ms failed for good");
    assert!(failed <= 20_000.0 * 1.15, "{b:?}");
}

/// A stage asked far more than can be sent, then one at 1/s: the backlog of
/// the first is said as backlog in the second, not as its rate (before, it
/// read "sent 2.16M/s, late 0").
#[test]
fn issue_45_a_stages_backlog_is_not_the_next_stages_rate() {
    let _g = exclusive();
    let dir = TempDir::new("backlog");
    let (st, r, err) = run_json(&dir, &["--stages", "2s:9M/s, 2s:1/s"]);
    assert!(st.success(), "{err}");
    let (first, second) = (&r.stages[0], &r.stages[1]);
    assert!(!first.kept_up && first.late_sends > 1_000_000, "{first:?}");
    assert!(second.backlog_in > 1_000_000, "{second:?}");
    assert!(second.backlog_sent > 0, "{second:?}");
    // Its own requests: at most its 2 (and none sent while the backlog
    // was being worked off).
    assert!(second.sent_per_s <= 1.0, "{second:?}");
    assert!(!second.kept_up, "{second:?}");
}

/// A server that sleeps when idle: a request after 5 ms without one waits
/// 3 ms more, so p99<1ms misses at the low rates (100 and 200/s: a
/// request every 10 and 5 ms; the idle time is well above this VM's
/// hiccups, which would wake it at higher rates too) and holds above. The search names those
/// misses and answers the top of the band above them (before: a search
/// that halved after each miss answered below 100/s). How high that band
/// reaches is this VM's (a debug client's p99 passes 1 ms up to a few
/// thousand per second).
#[test]
fn issue_45_a_search_is_not_driven_down_by_misses_at_low_rates() {
    let _g = exclusive();
    let (client, server) = cpus();
    let srv = Server::start(&["--cpus", &server, "--wake", "3ms/5ms"]);
    // Two CPU hogs beside it made every rate miss (p99 6 ms at 100/s): a
    // search whose steps say the machine was busy is tried again, and
    // skipped with their figures after three.
    on_a_quiet_machine(|| {
        let dir = TempDir::new("wake");
        let mut p = Proc::spawn(&[
            "search",
            "--target",
            &srv.endpoint,
            "--client-cpus",
            &client,
            "--slo",
            "p99<1ms",
            "--start-rate",
            "100",
            "--duration",
            "2s",
            "--warmup",
            "500ms",
            "--results",
            dir.str(),
        ]);
        let st = p.wait(Duration::from_secs(300));
        let err = p.stderr_all();
        let out = p.stdout_all();
        // What its steps measured of the machine.
        let busy = walk_runs(dir.path()).iter().find_map(machine_busy);
        if !st.success() {
            // No rate met the objective: on a busy machine every rate may miss.
            return (busy, Err(format!("{st}: {err}")));
        }
        // The text for people; search.json beside its steps for the figures.
        assert!(out.contains("missed at 100/s"), "{out}");
        let search_dir = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().contains("search"))
            .expect("the search's directory")
            .path();
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(search_dir.join("search.json")).unwrap())
                .unwrap();
        let missed: Vec<f64> = r["missed_below"]
            .as_array()
            .unwrap_or_else(|| panic!("{r:#}"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(
            missed.contains(&100.0) && missed.contains(&200.0),
            "{missed:?} {r:#}"
        );
        let best = r["best_rate_per_s"].as_f64().unwrap_or(0.0);
        let band_from = r["band"][0].as_f64().unwrap_or(0.0);
        // 10x the rates the server's sleep fails (a debug client misses now
        // and then in between too, which is noise, not the server's).
        if best < 2000.0 || band_from <= 200.0 || r["confirmed"] != true {
            let e = format!("{best} against misses {missed:?}: {r:#}");
            return (busy, Err(e));
        }
        // A line per step on stderr: no connect line, no empty header.
        assert!(!err.contains("connected in"), "{err}");
        let steps = r["steps"].as_array().unwrap().len();
        assert_eq!(
            err.lines()
                .filter(|l| l.trim_start().starts_with("step "))
                .count(),
            steps,
            "{err}"
        );
        (busy, Ok(()))
    });
    srv.stop();
}

/// A search told of its server (`--server-pid`) observes it: each step has
/// the server's CPU beside the client's, and the answer says which side ran
/// out where it ends. The queueing server (one worker, 1 ms a request:
/// 1,000/s) waits in virtual time, using almost no CPU: neither side ran
/// out of CPU, and the search says so.
#[test]
fn issue_45_a_search_observes_the_server_it_is_told_of() {
    let _g = exclusive();
    let (client, server) = cpus();
    let srv = Server::start(&["--cpus", &server, "--service", "1ms"]);
    let dir = TempDir::new("search-observed");
    let mut p = Proc::spawn(&[
        "search",
        "--target",
        &srv.endpoint,
        "--client-cpus",
        &client,
        "--slo",
        "p99<50ms",
        "--start-rate",
        "250",
        "--duration",
        "1s",
        "--warmup",
        "300ms",
        "--server-pid",
        &srv.proc.pid.to_string(),
        "--results",
        dir.str(),
        "--format",
        "json",
    ]);
    let st = p.wait(Duration::from_secs(300));
    let err = p.stderr_all();
    srv.stop();
    assert!(st.code() == Some(0) || st.code() == Some(5), "{err}");
    let r: serde_json::Value = serde_json::from_str(&p.stdout_all()).unwrap();
    for s in r["steps"].as_array().unwrap() {
        assert!(
            s["server_cpu_pct"].is_number() && s["client_cpu_pct"].is_number(),
            "{s:#}"
        );
    }
    let limit = r["limit"]
        .as_str()
        .unwrap_or_else(|| panic!("which side ran out: {r:#}"));
    assert!(limit.starts_with("neither side ran out of CPU"), "{limit}");
}

/// nginx as it is run: a master and 2 workers. Observed by the master's
/// PID, the run reads the workers' CPU (before: 0.00 s, with no warning),
/// sees the 3 processes' threads, and no warning says the server was idle.
#[test]
fn issue_45_nginx_observed_by_its_master_pid_gets_its_workers_cpu() {
    let _g = exclusive();
    let Some(Nginx {
        _daemon: nginx,
        dir: _www,
        h1,
        ..
    }) = Nginx::master_and_workers(2)
    else {
        return;
    };
    let master = nginx.pid();
    let results = TempDir::new("nginx-master-results");
    let (st, r, err) = run_json(
        &results,
        &[
            "--target",
            &format!("http://127.0.0.1:{h1}/1k.bin"),
            "--conns-per-client",
            "4",
            "--duration",
            "2s",
            "--server-pid",
            &master.to_string(),
        ],
    );
    let workers = children_of(master);
    nginx.stop_tree(&workers);
    assert!(st.success(), "{err}");
    assert_eq!(workers.len(), 2, "nginx's workers: {workers:?}");
    let groups = &r.summary.server_threads.as_ref().expect("threads").groups;
    let nginx_threads: usize = groups
        .iter()
        .filter(|g| g.group.starts_with("nginx"))
        .map(|g| g.threads)
        .sum();
    assert_eq!(nginx_threads, 3, "{groups:?}");
    let cpu = r.summary.server_cpu_s.expect("the server's CPU");
    // Each request costs nginx some microseconds: far more than 0.1 us.
    assert!(
        cpu * 1e9 > 100.0 * r.summary.ops as f64 && r.summary.ops > 10_000,
        "{cpu} s for {} requests",
        r.summary.ops
    );
    let idle = r
        .warnings
        .iter()
        .any(|w| matches!(w, wirebench_core::result::Warning::ObservedIdle { .. }));
    assert!(!idle, "{:?}", r.warnings);
}

/// An observed server's processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|t| {
                t.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

/// One `wirebench` command to its end: its stdout as JSON.
fn json_of(args: &[&str]) -> serde_json::Value {
    let mut p = Proc::spawn(args);
    let st = p.wait(Duration::from_secs(300));
    let (out, err) = (p.stdout_all(), p.stderr_all());
    assert!(st.success(), "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

/// Two searches of a real redis-server agree with each other and with a
/// grid of `run --rate` the test measures. One connection, one request at
/// a time: the server's capacity is the round trip (about 15k/s for this
/// debug build here), and `p99<50ms` holds up to where it falls behind, an
/// answer the objective marks sharply (at p99<1ms this VM's own
/// millisecond hiccups set p99, and the answer says it is not sharp; see
/// `docs/benchmarks/`).
///
/// Issue 45's tolerances: 10% between the searches, 15% from each to the
/// grid. Each is widened by what this run measured of the machine:
/// - the grid's own noise: the highest rate that held in one of its rounds
///   over the highest that held in all, or that over the highest up to
///   which every rate held in all (a rate below the grid's answer that
///   missed once);
/// - the searches' saturations (the most a step completed while the
///   server fell behind) and the grid's (the most a run of it completed
///   while the server fell behind): the highest over the lowest is how
///   far the server's capacity moved between the two searches and the
///   grid.
///
/// A machine whose capacity moved by more than 30% cannot judge 10%: the
/// test then says "skipped" with its figures, and never passes on them. A
/// search that answered a fraction of the capacity (the 4/s of issue 45)
/// fails whatever the noise.
#[test]
fn issue_45_two_searches_of_redis_agree_with_each_other_and_with_a_grid() {
    let _g = exclusive();
    let (client, server) = cpus();
    // The server on its own CPU, the client on another.
    let Some(redis) = Daemon::redis_on(&server) else {
        return;
    };
    let url = format!("redis://{}", redis.addr);
    let dir = TempDir::new("agree");
    // A search's answer and its saturation.
    let search = || {
        let r = json_of(&[
            "search",
            "--target",
            &url,
            "--slo",
            "p99<50ms",
            "--depth",
            "1",
            "--client-cpus",
            &client,
            "--results",
            dir.str(),
            "--format",
            "json",
        ]);
        let answer = r["best_rate_per_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("no answer: {r:#}"));
        let saturation = r["saturation_ops_per_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("no saturation: {r:#}"));
        (answer, saturation)
    };
    // Judged by what its runs measured of the machine: a disagreement
    // while they say it was busy (other processes took CPU on their CPUs)
    // is skipped with its figures, never passed.
    let verdict = (|| -> Result<(), String> {
        let (first, second) = (search(), search());
        let answers = [first.0, second.0];
        let saturations = [first.1, second.1];
        let (lo, hi) = (answers[0].min(answers[1]), answers[0].max(answers[1]));
        // The grid: 6 rates from below the answers to past the capacity, 8%
        // apart, two rounds (its top must fail once: a grid that held
        // everywhere bounds nothing). A run
        // holds when it completed 95% of the rate with p99 under 40 ms (the
        // search's 20% headroom); one that missed in a second the platform
        // stalled in is run again (twice at most), as a search's step is.
        let mid = (lo + hi) / 2.0;
        let rates: Vec<f64> = (-2..=3).map(|k| mid * 1.08f64.powi(k)).collect();
        // What the grid's runs completed where the server fell behind: the
        // capacity while the grid ran.
        let behind = std::cell::RefCell::new(Vec::<f64>::new());
        let holds = |rate: f64| {
            for _ in 0..3 {
                let r = json_of(&[
                    "run",
                    "--target",
                    &url,
                    "--rate",
                    &format!("{rate:.0}/s"),
                    "--depth",
                    "1",
                    "--duration",
                    "3s",
                    "--warmup",
                    "1s",
                    "--client-cpus",
                    &client,
                    "--results",
                    dir.str(),
                    "--format",
                    "json",
                ]);
                let s = &r["summary"];
                let ops = s["ops_per_s"].as_f64().unwrap();
                if ops < 0.95 * rate {
                    behind.borrow_mut().push(ops);
                }
                let held = ops >= 0.95 * rate && s["latency"]["p99_ns"].as_f64().unwrap() < 40e6;
                let stalled = s["hiccup"]["stalled_seconds"].as_u64().unwrap_or(0) > 0;
                if held || !stalled {
                    return held;
                }
            }
            false
        };
        let round = || -> Vec<bool> { rates.iter().map(|&r| holds(r)).collect() };
        let mut rounds: Vec<Vec<bool>> = vec![round(), round()];
        let held_twice =
            |rounds: &[Vec<bool>], i: usize| rounds.iter().filter(|r| r[i]).count() >= 2;
        // No rate held in both rounds (a CI run here: round 1 held up to
        // 14.5k/s, round 2 nothing from 13.4k/s up): the machine's capacity
        // moved under the grid. A third round decides, two of three.
        if !(0..rates.len()).any(|i| held_twice(&rounds, i)) {
            rounds.push(round());
        }
        let twice = (0..rates.len())
            .filter(|&i| held_twice(&rounds, i))
            .map(|i| rates[i])
            .fold(0.0, f64::max);
        let once = (0..rates.len())
            .filter(|&i| rounds.iter().any(|r| r[i]))
            .map(|i| rates[i])
            .fold(0.0, f64::max);
        // The highest rate up to which every rate held twice: where a rate
        // below the grid's answer missed once, the grid is unsure between the
        // two.
        let steady = (0..rates.len())
            .take_while(|&i| held_twice(&rounds, i))
            .map(|i| rates[i])
            .fold(0.0, f64::max);
        let seen = format!(
            "searches {answers:?} (saturations {saturations:.0?}); grid {rates:.0?}: {rounds:?} (saturation {:.0})",
            behind.borrow().iter().copied().fold(0.0, f64::max)
        );
        // Issue 45's tolerances. Before the search measured the edge under
        // the saturation (voted), the climb's one try at 16,000/s, 90% of
        // a release build's capacity, decided which side the search
        // explored: 14,875 and 17,500/s in two searches whose saturations
        // were 5% apart, so the test checked 25% unless asked. Now each
        // answer is a fixed share of its own saturation
        // (docs/benchmarks/2026-11-30-search-edge-2vcpu.md).
        let (agree, near) = (1.10, 1.15);
        // How far the server's capacity moved between the two searches and
        // the grid (the most a grid run completed while it fell behind).
        let grid_saturation = behind.borrow().iter().copied().fold(0.0, f64::max);
        let capacities: Vec<f64> = saturations
            .iter()
            .copied()
            .chain((grid_saturation > 0.0).then_some(grid_saturation))
            .collect();
        let moved = capacities.iter().copied().fold(0.0, f64::max)
            / capacities.iter().copied().fold(f64::MAX, f64::min);
        if twice == 0.0 {
            // The grid measured the machine, not the server: it cannot judge
            // the searches. They are still judged against each other.
            if !(lo > 0.0 && hi / lo <= agree * moved) {
                return Err(format!(
                    "the searches disagree (capacity moved {moved:.2}x between them): {seen}"
                ));
            }
            crate::helpers::skip(format!(
                "the grid: no rate held in two of its {} rounds (the machine's capacity moved under it): {seen}; the searches were checked against each other only",
                rounds.len()
            ));
            return Ok(());
        }
        if held_twice(&rounds, 5) {
            return Err(format!(
                "the grid's top held twice: it bounds nothing: {seen}"
            ));
        }
        let grid_noise = (once / twice).max(if steady > 0.0 { twice / steady } else { 1.0 });
        let noise = grid_noise.max(moved);
        let judged = format!(
            "{seen}; grid {twice:.0}, machine noise {noise:.2} (grid {grid_noise:.2}, saturations {moved:.2})"
        );
        let verdict = if hi / lo > agree * noise {
            Err(format!("the searches disagree: {judged}"))
        } else {
            answers
                .iter()
                .find(|&&a| {
                    let ratio = a / twice;
                    !(ratio >= 1.0 / (near * noise) && ratio <= near * noise)
                })
                .map_or(Ok(()), |a| {
                    Err(format!("{a} against the grid's {twice:.0}: {judged}"))
                })
        };
        // A machine that moved by more than 30% under the test judges
        // nothing: said, with its figures, and never passed. An answer off
        // by 2x or more (issue 45's 4/s) still fails.
        let gross = hi / lo >= 2.0 || answers.iter().any(|&a| a <= twice / 2.0);
        if noise > 1.3 && !gross {
            crate::helpers::skip(format!(
                "the machine's capacity moved {noise:.2}x under the test, too much to judge 10%: {judged}; verdict on it: {verdict:?}"
            ));
            return Ok(());
        }
        verdict?;
        eprintln!(
            "{judged}; searches {:.3} apart, {:.3} and {:.3} of the grid",
            hi / lo,
            answers[0] / twice,
            answers[1] / twice
        );
        Ok(())
    })();
    drop(redis);
    let busy = crate::helpers::walk_runs(dir.path())
        .iter()
        .find_map(crate::helpers::machine_busy);
    match (verdict, busy) {
        (Ok(()), _) => {}
        (Err(e), None) => panic!("{e}"),
        (Err(e), Some(b)) => crate::helpers::skip(format!(
            "its runs found the machine busy ({b}), and then: {e}"
        )),
    }
}
