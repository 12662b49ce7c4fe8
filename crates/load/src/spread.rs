//! A run against several endpoints of one kind (`--target A,B`, warp's
//! `--host a,b`): one transport per endpoint, and the run's connections
//! dealt to them in turn by their number over the run. Each connection's
//! operations, errors and latencies are also counted for its endpoint (its
//! lane), so the result has a breakdown per endpoint that adds up to the
//! whole.

use crate::calls::CallTransport;
use crate::engine::LoadConfig;
use crate::transport::{Pattern, Transport};
use std::future::Future;
use std::io;

/// Transports to several endpoints, as one.
pub struct Spread<T> {
    each: Vec<T>,
    conns_per_client: usize,
    group: usize,
}

impl<T> Spread<T> {
    /// `each[k]` reaches endpoint `k`. The engine runs `cfg`, in which
    /// every `group` connections in a row share one connection to the
    /// server (HTTP/2 streams; 1 elsewhere): they go to the same endpoint.
    pub fn new(each: Vec<T>, cfg: &LoadConfig, group: usize) -> Spread<T> {
        assert!(!each.is_empty(), "at least one endpoint");
        assert!(
            group >= 1 && cfg.conns_per_client.is_multiple_of(group),
            "a client's connections are whole groups"
        );
        Spread {
            each,
            conns_per_client: cfg.conns_per_client,
            group,
        }
    }

    /// The endpoint of connection `index` of worker `worker`.
    pub fn lane_of(&self, worker: usize, index: usize) -> usize {
        lane_of(
            worker * self.conns_per_client + index,
            self.group,
            self.each.len(),
        )
    }
}

/// The endpoint, of `lanes`, of the run's connection number `conn`, where
/// every `group` connections in a row share one to the server.
pub fn lane_of(conn: usize, group: usize, lanes: usize) -> usize {
    (conn / group) % lanes
}

/// How many of `conns` connections, dealt in turn, each of `lanes`
/// endpoints gets.
pub fn connections_per_lane(conns: usize, lanes: usize) -> Vec<u64> {
    (0..lanes)
        .map(|k| (conns / lanes + usize::from(k < conns % lanes)) as u64)
        .collect()
}

impl<T: Transport> Transport for Spread<T> {
    type Conn = T::Conn;

    fn pattern(&self) -> Pattern {
        self.each[0].pattern()
    }

    fn connect(&self, worker: usize, index: usize) -> impl Future<Output = io::Result<T::Conn>> {
        self.each[self.lane_of(worker, index)].connect(worker, index)
    }

    fn lane(&self, worker: usize, index: usize) -> Option<usize> {
        Some(self.lane_of(worker, index))
    }
}

impl<T: CallTransport> CallTransport for Spread<T> {
    type Conn = T::Conn;

    fn connect(&self, worker: usize, index: usize) -> impl Future<Output = io::Result<T::Conn>> {
        self.each[self.lane_of(worker, index)].connect(worker, index)
    }

    fn lane(&self, worker: usize, index: usize) -> Option<usize> {
        Some(self.lane_of(worker, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{self, EndState, NoObserver};
    use crate::mock::MockTransport;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn connections_are_dealt_in_turn_and_counted_per_endpoint() {
        let cfg = LoadConfig {
            clients: 2,
            conns_per_client: 3,
            depth: 2,
            count: Some(3001),
            ..LoadConfig::default()
        };
        // Endpoint 0 answers at once, endpoint 1 after 3 ms.
        let fast = MockTransport::new(Pattern::RequestResponse, Duration::ZERO);
        let slow = MockTransport::new(Pattern::RequestResponse, Duration::from_millis(3));
        let t = Arc::new(Spread::new(vec![fast, slow], &cfg, 1));
        assert_eq!(
            (0..2)
                .flat_map(|w| (0..3).map(move |j| (w, j)))
                .map(|(w, j)| t.lane_of(w, j))
                .collect::<Vec<_>>(),
            vec![0, 1, 0, 1, 0, 1]
        );
        // What the result says each endpoint got: 3 and 3.
        assert_eq!(connections_per_lane(6, 2), vec![3, 3]);
        let out = engine::run_load(t, &cfg, &mut NoObserver);
        assert_eq!(out.end, EndState::Complete);
        let lanes = &out.measured.lanes;
        assert_eq!(lanes.keys().copied().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(lanes.values().map(|l| l.ops).sum::<u64>(), 3001);
        assert_eq!(
            lanes.values().map(|l| l.hist.len()).sum::<u64>(),
            out.measured.hist.len()
        );
        // Every count quota is a connection's: each endpoint completes its
        // connections' shares, whatever its speed.
        assert_eq!(lanes[&0].ops, 1500 + 1);
        assert_eq!(lanes[&1].ops, 1500);
        assert!(lanes[&0].hist.value_at_quantile(0.5) < lanes[&1].hist.min());
        assert!(lanes[&1].hist.min() >= 3_000_000);
        // The two add up to the whole, exactly.
        let mut both = lanes[&0].hist.clone();
        both.add(&lanes[&1].hist).unwrap();
        assert_eq!(both, out.measured.hist);
    }

    #[test]
    fn connections_sharing_one_to_the_server_go_to_the_same_endpoint() {
        let cfg = LoadConfig {
            clients: 3,
            conns_per_client: 4,
            ..LoadConfig::default()
        };
        let each = (0..3)
            .map(|_| MockTransport::new(Pattern::RequestResponse, Duration::ZERO))
            .collect();
        let t = Spread::new(each, &cfg, 2);
        let lanes: Vec<usize> = (0..3)
            .flat_map(|w| (0..4).map(move |j| (w, j)))
            .map(|(w, j)| t.lane_of(w, j))
            .collect();
        assert_eq!(lanes, vec![0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2, 2]);
        // 4 of the engine's connections each: 2 to the server, of 2 streams.
        for lane in 0..3 {
            assert_eq!(lanes.iter().filter(|&&l| l == lane).count(), 4);
        }
        assert_eq!(connections_per_lane(6, 3), vec![2, 2, 2]);
        assert_eq!(connections_per_lane(7, 3), vec![3, 2, 2]);
    }
}
