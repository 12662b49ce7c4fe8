//! A transport without sockets, for testing the engine: responses come back
//! after a fixed service time, and the mock records the most requests it
//! ever held outstanding on one connection.

use crate::transport::{Conn, ConnRx, ConnTx, Pattern, Received, Transport};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

const MSG_BYTES: usize = 64;

pub struct MockTransport {
    pattern: Pattern,
    service: Duration,
    max_outstanding: Arc<AtomicUsize>,
    fail_after: Option<u64>,
    silent_after: Option<u64>,
}

impl MockTransport {
    pub fn new(pattern: Pattern, service: Duration) -> MockTransport {
        MockTransport {
            pattern,
            service,
            max_outstanding: Arc::new(AtomicUsize::new(0)),
            fail_after: None,
            silent_after: None,
        }
    }

    /// Each connection answers (or takes sends) this many times, then
    /// never again: a server that stops answering.
    pub fn silent_after(mut self, ops: u64) -> MockTransport {
        self.silent_after = Some(ops);
        self
    }

    /// Each connection fails once it has sent this many requests.
    pub fn failing_after(mut self, sends: u64) -> MockTransport {
        self.fail_after = Some(sends);
        self
    }

    /// The most requests outstanding on any one connection.
    pub fn max_outstanding(&self) -> usize {
        self.max_outstanding.load(Ordering::Relaxed)
    }
}

struct State {
    due: RefCell<VecDeque<Instant>>,
    arrived: Notify,
    sent: Cell<u64>,
}

pub struct MockConn {
    state: Rc<State>,
    pattern: Pattern,
    service: Duration,
    max_outstanding: Arc<AtomicUsize>,
    fail_after: Option<u64>,
    silent_after: Option<u64>,
}

impl Transport for MockTransport {
    type Conn = MockConn;
    fn pattern(&self) -> Pattern {
        self.pattern
    }
    async fn connect(&self, _worker: usize, _index: usize) -> io::Result<MockConn> {
        Ok(MockConn {
            state: Rc::new(State {
                due: RefCell::new(VecDeque::new()),
                arrived: Notify::new(),
                sent: Cell::new(0),
            }),
            pattern: self.pattern,
            service: self.service,
            max_outstanding: self.max_outstanding.clone(),
            fail_after: self.fail_after,
            silent_after: self.silent_after,
        })
    }
}

pub struct MockTx(Rc<MockConn>);
pub struct MockRx(Rc<MockConn>);

impl Conn for MockConn {
    type Tx = MockTx;
    type Rx = MockRx;
    fn split(self) -> (MockTx, MockRx) {
        let c = Rc::new(self);
        (MockTx(c.clone()), MockRx(c))
    }
}

impl ConnTx for MockTx {
    async fn send(&mut self, n: usize) -> io::Result<usize> {
        let c = &self.0;
        c.state.sent.set(c.state.sent.get() + n as u64);
        if c.fail_after.is_some_and(|f| c.state.sent.get() > f) {
            return Err(io::Error::other("mock failure"));
        }
        let silent = c.silent_after.is_some_and(|s| c.state.sent.get() > s);
        if silent && c.pattern != Pattern::RequestResponse {
            // A peer that takes no more: the send never completes.
            return std::future::pending().await;
        }
        if silent {
            return Ok(n * MSG_BYTES);
        }
        match c.pattern {
            Pattern::RequestResponse => {
                let mut q = c.state.due.borrow_mut();
                let due = Instant::now() + c.service;
                q.extend(std::iter::repeat_n(due, n));
                c.max_outstanding.fetch_max(q.len(), Ordering::Relaxed);
                c.state.arrived.notify_one();
            }
            _ => tokio::time::sleep(c.service).await,
        }
        Ok(n * MSG_BYTES)
    }
}

impl ConnRx for MockRx {
    async fn recv(&mut self) -> io::Result<Received> {
        let c = &self.0;
        match c.pattern {
            Pattern::RequestResponse => loop {
                let front = c.state.due.borrow().front().copied();
                let Some(due) = front else {
                    c.state.arrived.notified().await;
                    continue;
                };
                tokio::time::sleep_until(due.into()).await;
                let now = Instant::now();
                let mut q = c.state.due.borrow_mut();
                let mut ops = 0;
                while q.front().is_some_and(|d| *d <= now) {
                    q.pop_front();
                    ops += 1;
                }
                return Ok(Received {
                    ops,
                    bytes: ops * MSG_BYTES,
                });
            },
            Pattern::SendOnly => std::future::pending().await,
            Pattern::ReceiveOnly => {
                let got = c.state.sent.get() + 4;
                c.state.sent.set(got);
                if c.silent_after.is_some_and(|s| got > s) {
                    return std::future::pending().await;
                }
                tokio::time::sleep(c.service).await;
                Ok(Received {
                    ops: 4,
                    bytes: 4 * MSG_BYTES,
                })
            }
        }
    }
}
