//! wirebench-load: the load engine. A [`Transport`] opens connections; the
//! engine runs one pinned worker thread per client, each with its own
//! current-thread runtime, its connections, counters and latency histogram;
//! a coordinator collects one snapshot per second, samples CPU, and merges
//! histograms exactly at the end.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use wirebench_load::{engine, mock::MockTransport, transport::Pattern};
//!
//! let transport = Arc::new(MockTransport::new(Pattern::RequestResponse, Duration::from_micros(50)));
//! let cfg = engine::LoadConfig { count: Some(200), duration: Duration::ZERO, ..engine::LoadConfig::default() };
//! let out = engine::run_load(transport, &cfg, &mut engine::NoObserver);
//! assert_eq!(out.measured.ops, 200);
//! ```

pub mod blocking;
pub mod calls;
pub mod driver;
pub mod engine;
pub mod hiccup;
pub mod mock;
pub mod os;
pub mod procs;
pub mod recorder;
pub mod remote;
pub mod sampler;
pub mod spread;
pub mod timer;
pub mod transport;

pub use transport::{
    BlockingConn, BlockingRx, BlockingTransport, BlockingTx, Conn, ConnRx, ConnTx, Pattern,
    Received, Reply, Stamp, Transport,
};
