//! HTTP (and gRPC) as the engine's call transport: the run's connections,
//! HTTP/2 ones grouped by streams, one call each.

use super::*;

/// The run's connections, HTTP/2 ones grouped `streams` to a connection.
pub struct HttpTransport {
    pub(super) client: Arc<HttpClient>,
    pub(super) streams: usize,
    /// The engine's connections per worker (numbering them for keys).
    pub(super) conns_per_worker: usize,
    pub(super) workers: usize,
    pub(super) groups: Mutex<HashMap<(usize, usize), SharedGroup>>,
}

impl HttpTransport {
    /// `streams`: the engine's connections that share one HTTP/2
    /// connection (the run's `--depth`); 1 for HTTP/1.1. `workers` x
    /// `conns_per_worker`: the engine's connections.
    pub fn new(
        client: Arc<HttpClient>,
        streams: usize,
        workers: usize,
        conns_per_worker: usize,
    ) -> HttpTransport {
        HttpTransport {
            client,
            streams: streams.max(1),
            workers,
            conns_per_worker,
            groups: Mutex::new(HashMap::new()),
        }
    }
}

/// A connection of the engine's: its own HTTP/1.1 connection, a stream of
/// a shared HTTP/2 one, or (churn) a new connection for each request.
pub struct HttpConn {
    pub(super) client: Arc<HttpClient>,
    pub(super) link: Link,
    pub(super) keys: Option<KeyPicker>,
    pub(super) watchdog: crate::watchdog::Watchdog,
    /// Trace ids: the connection in the high bits, its calls below.
    pub(super) trace_base: u64,
    pub(super) calls: u64,
}

pub(super) enum Link {
    Own(Sender),
    Shared(SharedGroup),
    Churn,
}

impl CallTransport for HttpTransport {
    type Conn = HttpConn;
    async fn connect(&self, worker: usize, index: usize) -> io::Result<HttpConn> {
        let client = self.client.clone();
        let link = match (client.churn, client.version) {
            (true, _) => Link::Churn,
            (false, HttpVersion::H1) => Link::Own(client.open().await?),
            (false, HttpVersion::H2) => {
                let group = self
                    .groups
                    .lock()
                    .expect("not poisoned")
                    .entry((worker, index / self.streams))
                    .or_default()
                    .clone();
                // The first stream of a group opens its connection (the
                // engine times connecting apart).
                shared(&client, &group, None).await?;
                Link::Shared(group)
            }
        };
        let keys = client.template.as_ref().map(|t| {
            let conn = worker * self.conns_per_worker + index;
            KeyPicker::new(
                t.dist,
                t.keys,
                0x4854_5450,
                conn as u64,
                (self.workers * self.conns_per_worker) as u64,
            )
        });
        let watchdog = crate::watchdog::Watchdog::new(client.op_timeout);
        static CONNS: trace::Connections = trace::Connections::new();
        Ok(HttpConn {
            client,
            link,
            keys,
            watchdog,
            trace_base: CONNS.next_base(),
            calls: 0,
        })
    }
}

/// One request on `link`, reconnecting where the server closed it.
pub(super) async fn call_once(
    c: &HttpClient,
    link: &mut Link,
    keys: &mut Option<KeyPicker>,
    traced: Option<u64>,
) -> io::Result<CallOutcome> {
    let key = keys.as_mut().map(KeyPicker::key);
    match link {
        Link::Churn => {
            let (mut s, phases) = c.open_timed().await?;
            event(traced, "connected");
            let out = c.exchange(&mut s, key, traced).await.map_err(|f| f.error)?;
            Ok(phases.on(out))
        }
        Link::Own(s) => {
            let mut phases = None;
            if s.is_closed() {
                let (new, p) = c.open_timed().await?;
                (*s, phases) = (new, Some(p));
                event(traced, "connected");
            }
            let out = match c.exchange(s, key, traced).await {
                Ok(out) => out,
                // Closed by the server before the request went out.
                Err(f) if f.retry => {
                    let (new, p) = c.open_timed().await?;
                    (*s, phases) = (new, Some(p));
                    event(traced, "connected");
                    c.exchange(s, key, traced).await.map_err(|f| f.error)?
                }
                Err(f) => return Err(f.error),
            };
            Ok(match phases {
                Some(p) => p.on(out),
                None => out,
            })
        }
        Link::Shared(group) => {
            let (opened, mut s, mut phases) = shared(c, group, None).await?;
            let out = match c.exchange(&mut s, key, traced).await {
                Ok(out) => out,
                Err(f) if f.retry => {
                    let (_, mut s, p) = shared(c, group, Some(opened)).await?;
                    phases = phases.or(p);
                    c.exchange(&mut s, key, traced).await.map_err(|f| f.error)?
                }
                Err(f) => return Err(f.error),
            };
            Ok(match phases {
                Some(p) => p.on(out),
                None => out,
            })
        }
    }
}

/// A group's connection, as its streams hold it.
pub(super) type SharedGroup = Arc<tokio::sync::Mutex<Group>>;

/// The HTTP/2 connection that `streams` of the engine's connections share,
/// and how many times it was opened.
#[derive(Default)]
pub(super) struct Group {
    pub(super) opened: u64,
    pub(super) sender: Option<http2::SendRequest<Body>>,
}

/// A sender on the group's HTTP/2 connection and its generation, and how
/// opening it went if this call opened it. The connection is opened again
/// when there is none, when it is closed, or when `stale` names the
/// generation a request just found unusable (unless another stream opened a
/// new one meanwhile).
pub(super) async fn shared(
    c: &HttpClient,
    group: &tokio::sync::Mutex<Group>,
    stale: Option<u64>,
) -> io::Result<(u64, Sender, Option<Phases>)> {
    let mut g = group.lock().await;
    let usable = match &g.sender {
        Some(s) if !s.is_closed() && stale != Some(g.opened) => Some(s.clone()),
        _ => None,
    };
    let (s, phases) = match usable {
        Some(s) => (s, None),
        None => {
            let (Sender::H2(s), phases) = c.open_timed().await? else {
                unreachable!("an HTTP/2 client opens HTTP/2 connections")
            };
            g.opened += 1;
            g.sender = Some(s.clone());
            (s, Some(phases))
        }
    };
    Ok((g.opened, Sender::H2(s), phases))
}

impl CallConn for HttpConn {
    async fn call(&mut self, _seq: u64) -> io::Result<Option<CallOutcome>> {
        let HttpConn {
            client,
            link,
            keys,
            watchdog,
            trace_base,
            calls,
        } = self;
        let traced = trace::sampled(*calls).then_some(*trace_base | *calls);
        *calls += 1;
        event(traced, trace::BEGIN);
        let r = match watchdog.run(call_once(client, link, keys, traced)).await {
            Some(r) => r.map(Some),
            None => Err(client.timed_out()),
        };
        event(traced, trace::END);
        r
    }
}
