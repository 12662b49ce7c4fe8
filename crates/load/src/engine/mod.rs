//! The engine's phases: connect (timed), start together, warm-up, measure,
//! stop. One pinned thread per client, each running a current-thread tokio
//! runtime with its connections; the calling thread coordinates: it samples
//! CPU at each interval boundary, assembles the per-second series from the
//! workers' snapshots, asks the observer whether to abort, and merges the
//! measured histograms exactly at the end.
//!
//! Interval boundaries are aligned on the start of the measured phase, so
//! the summary is an exact merge of whole intervals: with a 2.5 s warm-up
//! the first interval lasts 0.5 s and every later one 1 s.

mod coordinator;
mod drive;
mod pacer;
mod spool;
mod types;
mod worker;

pub(crate) use coordinator::{
    Gate, Msg, Schedule, WorkerLink, coordinate, ns_between, sleep_until,
};
pub(crate) use pacer::{Pacer, of_conn as pacer_of_conn};
pub use types::*;
pub(crate) use worker::{
    ConnCtx, Quota, Stall, WorkerRec, after_end, async_worker_main, recorder_at, stall_error,
    worker_thread,
};

use crate::transport::Transport;
use std::sync::Arc;

/// Runs the load and returns what was measured. Never panics on transport
/// errors: they end the run with `EndState::Failed`.
pub fn run_load<T: Transport>(
    transport: Arc<T>,
    cfg: &LoadConfig,
    observer: &mut dyn Observer,
) -> LoadOutcome {
    coordinate(cfg, observer, &mut |l: WorkerLink| {
        let t = transport.clone();
        let gate = l.gate.clone();
        worker_thread(l.id, gate, move || drive::worker_main(t, l))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::MockTransport;
    use crate::transport::Pattern;
    use std::time::{Duration, Instant};
    use wirebench_core::result::Phase;

    #[test]
    fn count_mode_completes_exactly_the_count() {
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(100),
        ));
        let cfg = LoadConfig {
            clients: 2,
            conns_per_client: 3,
            depth: 4,
            count: Some(1001),
            ..LoadConfig::default()
        };
        let out = run_load(t.clone(), &cfg, &mut NoObserver);
        assert_eq!(out.end, EndState::Complete);
        assert_eq!(out.measured.ops, 1001);
        assert_eq!(out.measured.hist.len(), 1001);
        assert!(out.measured.lag.is_none(), "a closed loop has no lag");
        assert!(
            out.measured.hist.min() >= 100_000,
            "latency below the mock's service time"
        );
        assert!(
            t.max_outstanding() <= 4,
            "depth exceeded: {}",
            t.max_outstanding()
        );
        assert!(t.max_outstanding() >= 1);
    }

    #[test]
    fn duration_mode_reports_warmup_and_measured_intervals() {
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(200),
        ));
        let cfg = LoadConfig {
            warmup: Duration::from_millis(300),
            duration: Duration::from_millis(600),
            interval: Duration::from_millis(200),
            depth: 2,
            ..LoadConfig::default()
        };
        struct Seen(Vec<Phase>);
        impl Observer for Seen {
            fn interval(&mut self, iv: &IntervalReport) {
                self.0.push(iv.phase);
            }
        }
        let mut seen = Seen(vec![]);
        let out = run_load(t, &cfg, &mut seen);
        assert_eq!(out.end, EndState::Complete);
        assert_eq!(
            seen.0,
            vec![
                Phase::Warmup,
                Phase::Warmup,
                Phase::Measure,
                Phase::Measure,
                Phase::Measure
            ]
        );
        let measured_sum: u64 = out
            .intervals
            .iter()
            .filter(|i| i.phase == Phase::Measure)
            .map(|i| i.ops)
            .sum();
        assert_eq!(out.measured.ops, measured_sum);
        assert!(out.measured.ops > 0);
        assert!(
            (out.measured_ns as i64 - 600_000_000).abs() < 50_000_000,
            "{}",
            out.measured_ns
        );
    }

    #[test]
    fn abort_stops_the_run_and_keeps_what_was_measured() {
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(100),
        ));
        let cfg = LoadConfig {
            duration: Duration::from_secs(60),
            interval: Duration::from_millis(100),
            ..LoadConfig::default()
        };
        struct StopAfter(usize);
        impl Observer for StopAfter {
            fn interval(&mut self, _: &IntervalReport) {
                self.0 = self.0.saturating_sub(1);
            }
            fn poll_abort(&mut self) -> Option<Abort> {
                (self.0 == 0).then(|| Abort::Interrupted("test".into()))
            }
        }
        let began = Instant::now();
        let out = run_load(t, &cfg, &mut StopAfter(2));
        assert!(began.elapsed() < Duration::from_secs(10));
        assert_eq!(out.end, EndState::Interrupted("test".into()));
        assert!(out.intervals.len() >= 2);
        assert!(out.measured.ops > 0);
    }

    #[test]
    fn a_failing_connection_fails_the_run() {
        let t = Arc::new(
            MockTransport::new(Pattern::RequestResponse, Duration::from_micros(100))
                .failing_after(50),
        );
        let cfg = LoadConfig {
            duration: Duration::from_secs(60),
            ..LoadConfig::default()
        };
        let out = run_load(t, &cfg, &mut NoObserver);
        match out.end {
            EndState::Failed(r) => assert!(r.contains("mock failure"), "{r}"),
            e => panic!("expected failure, got {e:?}"),
        }
    }

    #[test]
    fn open_loop_keeps_its_timetable_and_times_from_the_intended_send() {
        for arrival in [Arrival::Uniform, Arrival::Poisson] {
            let t = Arc::new(MockTransport::new(
                Pattern::RequestResponse,
                Duration::from_millis(2),
            ));
            let cfg = LoadConfig {
                conns_per_client: 2,
                depth: 64,
                rate: Some(2000.0),
                arrival,
                duration: Duration::from_millis(500),
                interval: Duration::from_millis(100),
                ..LoadConfig::default()
            };
            let out = run_load(t, &cfg, &mut NoObserver);
            assert_eq!(out.end, EndState::Complete);
            // 2000/s for 0.5 s: about 1000 sent, whatever the 2 ms service time
            // (a closed loop with depth 1 would send about 500).
            let sent = out.measured.sent as f64;
            let tolerance = if arrival == Arrival::Uniform {
                0.05
            } else {
                0.2
            };
            assert!(
                (sent - 1000.0).abs() < 1000.0 * tolerance,
                "{arrival:?}: sent {sent}"
            );
            assert!(
                out.measured.hist.min() >= 1_990_000,
                "{arrival:?}: {}",
                out.measured.hist.min()
            );
            assert!(out.measured.service.min() >= 1_990_000, "{arrival:?}");
            // Each request's lag (sent - intended) is recorded with it.
            let lag = out.measured.lag.as_ref().expect("an open loop's lag");
            assert_eq!(lag.len(), out.measured.hist.len(), "{arrival:?}");
        }
    }

    #[test]
    fn send_only_and_receive_only_count_operations() {
        for pattern in [Pattern::SendOnly, Pattern::ReceiveOnly] {
            let t = Arc::new(MockTransport::new(pattern, Duration::from_micros(50)));
            let cfg = LoadConfig {
                depth: 8,
                count: Some(500),
                ..LoadConfig::default()
            };
            let out = run_load(t, &cfg, &mut NoObserver);
            assert_eq!(out.end, EndState::Complete, "{pattern:?}");
            assert_eq!(out.measured.ops, 500, "{pattern:?}");
        }
    }

    #[test]
    fn a_connection_that_waits_past_the_op_timeout_fails_the_run() {
        for pattern in [
            Pattern::RequestResponse,
            Pattern::SendOnly,
            Pattern::ReceiveOnly,
        ] {
            let t =
                Arc::new(MockTransport::new(pattern, Duration::from_micros(100)).silent_after(40));
            let cfg = LoadConfig {
                duration: Duration::from_secs(60),
                op_timeout: Duration::from_millis(300),
                depth: 4,
                ..LoadConfig::default()
            };
            let began = Instant::now();
            let out = run_load(t, &cfg, &mut NoObserver);
            assert!(began.elapsed() < Duration::from_secs(5), "{pattern:?}");
            match out.end {
                EndState::Failed(r) => assert!(
                    r.contains("no operation completed for") && r.contains("--op-timeout 300ms"),
                    "{pattern:?}: {r}"
                ),
                e => panic!("{pattern:?}: expected a failure, got {e:?}"),
            }
            assert!(
                out.measured.ops > 0,
                "{pattern:?}: what was measured is kept"
            );
        }
    }

    #[test]
    fn a_slow_open_loop_is_no_stall() {
        // 4 requests/s: 250 ms between requests, each answered in 100 us;
        // the connection is idle, not stalled, between them.
        let t = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(100),
        ));
        let cfg = LoadConfig {
            rate: Some(4.0),
            duration: Duration::from_millis(1200),
            op_timeout: Duration::from_millis(100),
            ..LoadConfig::default()
        };
        let out = run_load(t, &cfg, &mut NoObserver);
        assert_eq!(out.end, EndState::Complete);
    }
}
