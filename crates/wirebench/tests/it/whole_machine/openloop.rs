//! The tests of `openloop` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;
use crate::openloop::*;
use wirebench_core::result::RunState;

#[test]
fn open_loop_measures_an_injected_delay() {
    let _g = exclusive();
    let (client, server) = cpus();
    // Busy-polling on both sides: waking an idle vCPU would add tens of
    // microseconds that have nothing to do with the 1 ms under test.
    let srv = Server::start(&["--cpus", &server, "--delay", "1ms", "--poll"]);
    let args = [
        "--target",
        &srv.endpoint,
        "--rate",
        "500",
        "--poll",
        "--client-cpus",
        &client,
        "--duration",
        "3s",
    ];
    // Busy-polling client and server need their CPUs: a run that says the
    // machine was busy (two CPU hogs beside it read p50 4.6 ms) is tried
    // again, and skipped with its figures after three.
    on_a_quiet_machine(|| {
        let dir = TempDir::new("delay");
        let (st, r, err) = run_json(&dir, &args);
        assert!(st.success(), "{err}");
        let p50 = r.summary.latency.p50_ns;
        let check = if !(1_000_000..=1_150_000).contains(&p50) {
            Err(format!("p50 {p50} ns"))
        } else if (r.summary.sent_per_s - 500.0).abs() >= 25.0 {
            Err(format!("sent {}/s", r.summary.sent_per_s))
        } else {
            Ok(())
        };
        (machine_busy(&r), check)
    });
    srv.stop();
}

#[test]
fn open_loop_exposes_stalls_that_a_closed_loop_hides() {
    let _g = exclusive();
    let (client, server) = cpus();
    let srv = Server::start(&["--cpus", &server, "--stall", "100ms/1s"]);
    let dir = TempDir::new("stall");
    // One connection, one request outstanding at most: during a stall the
    // timetable's requests wait in the client, late; latency counts that.
    let open = [
        "--target",
        &srv.endpoint,
        "--rate",
        "1000",
        "--depth",
        "1",
        "--client-cpus",
        &client,
    ];
    let mut args = open.to_vec();
    args.extend(["--duration", "5s", "--warmup", "0s"]);
    let ms = |ns: u64| ns as f64 / 1e6;
    // The stalls show at p99 (about 10% of the requests wait in one), and
    // the time from the actual send does not have them. A stall of this VM
    // next to one of the server's adds to it (p99 179 ms once in CI), so
    // one run of three must show exactly the server's.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (st, r, err) = run_json(&dir, &args);
        assert!(st.success(), "{err}");
        assert_eq!(r.status.state, RunState::Complete);
        let (p99, service_p99) = (
            ms(r.summary.latency.p99_ns),
            ms(r.summary.service_latency.p99_ns),
        );
        seen.push((p99, service_p99, r.summary.hiccup.map(|h| ms(h.max_ns))));
        if (70.0..=110.0).contains(&p99) && service_p99 < 20.0 {
            break;
        }
    }
    assert!(
        seen.last()
            .is_some_and(|&(p99, service, _)| (70.0..=110.0).contains(&p99) && service < 20.0),
        "open-loop p99, service-time p99 and worst hiccup (ms) of each try: {seen:?}"
    );

    let closed = [
        "--target",
        &srv.endpoint,
        "--depth",
        "1",
        "--client-cpus",
        &client,
        "--duration",
        "3s",
    ];
    let (st, r, err) = run_json(&dir, &closed);
    assert!(st.success(), "{err}");
    let closed_p99 = ms(r.summary.latency.p99_ns);
    assert!(
        closed_p99 < 20.0,
        "closed-loop p99 {closed_p99} ms: the stall should hide in a closed loop"
    );
    assert!(
        ms(r.summary.latency.max_ns) >= 50.0,
        "the stall shows in the closed loop's max only"
    );
    srv.stop();
}

/// One queueing server, searched twice: the first search finds its
/// capacity and a rate below it that holds (follow-up runs at that rate
/// meet the objective), and the second's answer agrees with it within 10%
/// (issue 35). One test, not two, so that the server is searched twice,
/// not three times; it checks what the two tests it was made of checked.
#[test]
fn searches_of_a_queueing_server_find_its_capacity_agree_within_10_percent_and_hold() {
    let _g = exclusive();
    let (client, server) = cpus();
    // 2 workers x 1 ms: a capacity of 2,000 requests/s. Evenly spaced
    // requests queue only near it, so p99 stays under 2 ms below it here;
    // the objective leaves room for this VM's short stalls (a CI machine's
    // p99 at 11/s read 5.8-6.2 ms in 4 runs of 5), and longer ones are the
    // hiccup meter's to flag: the search measures a step that missed in
    // one again.
    let srv = Server::start(&["--cpus", &server, "--service", "1ms", "--workers", "2"]);
    let dir = TempDir::new("search");
    let search = || {
        let mut p = Proc::spawn(&[
            "search",
            "--target",
            &srv.endpoint,
            "--slo",
            "p99<20ms",
            "--duration",
            "2s",
            "--client-cpus",
            &client,
            "--results",
            dir.str(),
            "--format",
            "json",
        ]);
        let st = p.wait(std::time::Duration::from_secs(300));
        let out = p.stdout_all();
        assert!(st.success(), "{}\n{out}", p.stderr_all());
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        check_search(&v);
        v
    };
    // The first search's answer: the capacity, and a rate below it.
    let v = search();
    let saturation = v["saturation_ops_per_s"].as_f64().unwrap();
    assert!(
        (1700.0..=2300.0).contains(&saturation),
        "saturation {saturation}/s"
    );
    let best = v["best_rate_per_s"]
        .as_f64()
        .expect("a rate met the objective");
    // Below what the server completes when it falls behind, with
    // capacity to spare: evenly spaced requests at exactly 2 x 1 ms
    // workers' capacity can pass a step, but one hiccup there leaves a
    // backlog that never drains, and follow-ups failed (a CI run found
    // both).
    assert!(
        best < saturation * 0.95,
        "best {best}/s, saturation {saturation}/s"
    );
    assert!(v["steps"].as_array().unwrap().len() >= 4);
    let again = search()["best_rate_per_s"].as_f64().expect("an answer");
    let apart = (best - again).abs() / best.max(again);
    assert!(
        apart <= 0.10,
        "the two answers: {best:.0}/s and {again:.0}/s"
    );

    // Follow-up runs at that rate meet the objective (exit 0, not 3). At
    // ~90% of capacity one host throttle (up to ~300 ms here) leaves a
    // backlog that takes seconds to drain, and this VM has noisy spells of
    // several seconds, so one run is not trusted: two of at most eight
    // must pass. A run whose CPUs were more than 10% stolen proves nothing
    // either way (CI once had five in a row at 25-70%, p99 30-630 ms at
    // half the capacity) and does not count.
    let rate = format!("{best:.0}");
    let args = [
        "--target",
        &srv.endpoint,
        "--rate",
        &rate,
        "--slo",
        "p99<20ms",
        "--client-cpus",
        &client,
        "--duration",
        "2s",
    ];
    let (mut passed, mut missed) = (0, 0);
    let mut seen = Vec::new();
    for _ in 0..8 {
        let (st, r, _) = run_json(&dir, &args);
        if st.success() && r.slos.iter().all(|s| s.pass) {
            passed += 1;
        } else if r.summary.max_steal_pct <= 10.0 {
            missed += 1;
        }
        seen.push((st.code(), r.slos, r.summary.max_steal_pct));
        if passed == 2 || missed > 3 {
            break;
        }
    }
    assert_eq!(passed, 2, "follow-ups at {rate}/s: {seen:?}");
    srv.stop();
}

#[test]
fn a_step_missed_while_the_search_was_stopped_is_measured_again() {
    let _g = exclusive();
    let srv = Server::start(&["--service", "1ms", "--workers", "2"]);
    let dir = TempDir::new("search-stall");
    let mut p = Proc::spawn(&[
        "search",
        "--target",
        &srv.endpoint,
        "--slo",
        "p99<20ms",
        "--start-rate",
        "500",
        "--duration",
        "1s",
        "--warmup",
        "500ms",
        "--max-steps",
        "2",
        "--results",
        dir.str(),
    ]);
    // Stop the whole search for 300 ms inside its first step (1.5 s from
    // the line that says it started, printed as it connects): every
    // request sent in and after it waits 300 ms. The step's one measured
    // second stalled, so it cannot be left out: the step is measured again.
    p.stderr_until(std::time::Duration::from_secs(30), |l| {
        l.starts_with("wirebench search:")
    });
    std::thread::sleep(std::time::Duration::from_millis(400));
    p.signal(nix::sys::signal::Signal::SIGSTOP);
    std::thread::sleep(std::time::Duration::from_millis(300));
    p.signal(nix::sys::signal::Signal::SIGCONT);
    let st = p.wait(std::time::Duration::from_secs(60));
    let text = p.stderr_all();
    let json = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path().join("search.json"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no search.json: {text}"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    check_search(&v);
    assert!(
        text.contains("missed while the platform stalled") && text.contains("measured again"),
        "{text}"
    );
    let steps = v["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{v}");
    // The first step missed in the stall, was not counted, and its rate
    // was measured again (not halved, as a counted miss would be).
    assert_eq!(steps[0]["pass"], false, "{v}");
    assert!(steps[0]["stalled_seconds"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(steps[0]["measured_again"], true, "{v}");
    assert_eq!(steps[1]["rate_per_s"], 500.0, "{v}");
    // Two steps cannot finish a search: it says so (with no answer if the
    // VM stalled in the second too).
    assert_eq!(st.code(), Some(unfinished(&v)), "{v}");
    srv.stop();
}

#[test]
fn issue_15_search_finds_saturation_or_says_it_did_not() {
    let _g = exclusive();
    let dir = TempDir::new("search-embedded");
    let search = |extra: &[&str]| {
        let mut args = vec![
            "search",
            "--slo",
            "p99<5ms",
            "--duration",
            "500ms",
            "--warmup",
            "100ms",
            "--results",
            dir.str(),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        let mut p = Proc::spawn(&args);
        let st = p.wait(std::time::Duration::from_secs(240));
        let out = p.stdout_all();
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{}", p.stderr_all()));
        (st.code(), v)
    };
    // A finished search confirms its answer and saw the saturation; beside
    // two CPU hogs one did not confirm: a try whose steps say the machine
    // was busy is tried again, and skipped with their figures after three.
    let mut tries = 0;
    on_a_quiet_machine(|| {
        tries += 1;
        let before: Vec<String> = walk_runs(dir.path())
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        let (code, v) = search(&[]);
        check_search(&v);
        // What this try's steps measured of the machine.
        let busy = walk_runs(dir.path())
            .iter()
            .filter(|r| !before.contains(&r.run_id))
            .find_map(machine_busy);
        if v["budget_exhausted"] == true {
            assert_eq!(code, Some(unfinished(&v)), "{v}");
            return (busy, Ok(()));
        }
        let check = if code != Some(0) || v["confirmed"] != true {
            Err(format!("try {tries}: exit {code:?}, not confirmed: {v}"))
        } else if v["saturated"] != true {
            Err(format!("a finished search measured no saturation: {v}"))
        } else {
            Ok(())
        };
        (busy, check)
    });
    // Three steps cannot finish: the search says so (exit 5) and reports
    // no saturation it did not see.
    let (code, v) = search(&["--max-steps", "3"]);
    check_search(&v);
    assert_eq!(code, Some(unfinished(&v)), "{v}");
    assert_eq!(v["budget_exhausted"], true, "{v}");
    assert_eq!(v["steps"].as_array().unwrap().len(), 3);
}

/// Issue 38: an open loop in stages (a constant rate, a ramp, a constant
/// rate) sends what each stage asks: every stage's row within 2% of its
/// asked rate, and the summary's table says so.
#[test]
fn issue_38_a_staged_open_loop_keeps_each_stages_rate() {
    let _g = exclusive();
    let (client, server) = cpus();
    let srv = Server::start(&["--cpus", &server]);
    let dir = TempDir::new("stages");
    let mut p = Proc::spawn(&[
        "run",
        "--target",
        &srv.endpoint,
        "--client-cpus",
        &client,
        "--stages",
        "2s:200/s, 3s:200->2k/s, 2s:2k/s",
        "--results",
        dir.str(),
    ]);
    let st = p.wait(std::time::Duration::from_secs(60));
    let text = p.stdout_all();
    assert!(st.success(), "{}\n{text}", p.stderr_all());
    let run = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path().join("run.json"))
        .find(|p| p.is_file())
        .unwrap();
    let r: wirebench_core::result::RunResult =
        serde_json::from_str(&std::fs::read_to_string(run).unwrap()).unwrap();
    let asked: Vec<f64> = r.stages.iter().map(|s| s.asked_per_s).collect();
    assert_eq!(asked, [200.0, 1100.0, 2000.0], "{:?}", r.stages);
    for s in &r.stages {
        let off = (s.sent_per_s - s.asked_per_s).abs() / s.asked_per_s;
        assert!(off <= 0.02 && s.kept_up, "{s:?}");
        assert!(s.completed_per_s > 0.9 * s.asked_per_s, "{s:?}");
    }
    for row in ["2s:200/s", "3s:200->2k/s", "2s:2k/s"] {
        assert!(text.contains(row), "{row}: {text}");
    }
    srv.stop();
}
