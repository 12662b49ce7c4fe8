//! S3 over HTTP/1.1: the workloads (`--workload put|get|head|delete|list|
//! mixed`) as typed operations for the engine, the phases around them
//! (preflight, prepare, cleanup), and the embedded fake server.
//!
//! Objects are `<prefix><number>`, numbers 0..objects; an object's size
//! and (with `--verify`) its bytes follow from its number, so any reader
//! can check what it gets without a shared record. Which objects exist is
//! kept in one array of flags shared by the connections (a byte per
//! object, bounded by `objects`), which read workloads draw from and
//! cleanup deletes.

pub mod client;
pub mod copy;
pub(crate) mod driver;
pub mod serve;
pub use serve::SERVER;
pub mod fake;
pub mod idle;
pub mod payload;
pub mod progress;
pub mod sigv4;

use crate::keys::KeyPicker;
use client::{HttpConn, Reply, S3Client, Sink};
use payload::Payload;
use std::cell::RefCell;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use wirebench_core::result::PhaseReport;
use wirebench_core::spec::{S3Op, S3Spec, S3Workload, mix64};
use wirebench_load::calls::{CallConn, CallOutcome, CallTransport};

pub use wirebench_core::limits::{
    S3_MAX_OBJECTS as MAX_OBJECTS, S3_MAX_PARTS as MAX_PARTS, S3_MIN_PART as MIN_PART,
};

/// One run's workload, shared by all its connections.
pub struct Workload {
    pub client: S3Client,
    pub spec: S3Spec,
    pub verify: bool,
    /// The run's connections (clients x conns-per-client): in the mixed
    /// workload each owns the objects whose number is its own modulo this.
    pub connections: u64,
    pub conns_per_client: u64,
    seed_base: u64,
    exists: Vec<AtomicBool>,
    next_delete: AtomicU64,
}

/// Object `i`'s key: `prefix`, then `i` in at least 10 digits (as
/// `format!("{prefix}{i:010}")`, without the formatting machinery: one
/// per request).
fn key_of(prefix: &str, i: u64) -> String {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(i);
    let mut key = String::with_capacity(prefix.len() + 20);
    key.push_str(prefix);
    key.push_str(&"0000000000"[digits.len().min(10)..]);
    key.push_str(digits);
    key
}

impl Workload {
    /// A workload for `clients` x `conns_per_client` connections.
    pub fn new(
        client: S3Client,
        spec: S3Spec,
        verify: bool,
        clients: u64,
        conns_per_client: u64,
    ) -> Workload {
        let seed_base = wirebench_core::hash::fnv1a(spec.prefix.bytes());
        Workload {
            exists: (0..spec.objects).map(|_| AtomicBool::new(false)).collect(),
            client,
            spec,
            verify,
            connections: (clients * conns_per_client).max(1),
            conns_per_client: conns_per_client.max(1),
            seed_base,
            next_delete: AtomicU64::new(0),
        }
    }

    pub fn key(&self, i: u64) -> String {
        key_of(&self.spec.prefix, i)
    }

    fn seed(&self, i: u64) -> Option<u64> {
        self.verify.then(|| mix64(self.seed_base ^ i))
    }

    /// Whether the workload reads objects that must exist first.
    pub fn needs_prepare(&self) -> bool {
        self.spec.needs_prepare()
    }

    /// How many objects exist now (as far as this run knows).
    pub fn existing(&self) -> u64 {
        self.exists
            .iter()
            .filter(|e| e.load(Ordering::Relaxed))
            .count() as u64
    }
}

/// The engine's view: connections that perform the workload's operations.
pub struct S3Transport(pub Arc<Workload>);

impl CallTransport for S3Transport {
    type Conn = S3Conn;
    async fn connect(&self, worker: usize, index: usize) -> io::Result<S3Conn> {
        let w = self.0.clone();
        let http = w.client.connect().await.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot connect to {}: {e}", w.client.addr),
            )
        })?;
        // The run's connections are numbered worker-major; those of the
        // prepare and cleanup phases (numbered past them) own nothing.
        let k = (worker as u64)
            .saturating_mul(w.conns_per_client)
            .saturating_add(index as u64);
        let slot = (w.spec.workload == S3Workload::Mixed && k < w.connections).then_some(k);
        let keys = KeyPicker::new(w.spec.key_dist, w.spec.objects, 0x5EED, k, w.connections);
        Ok(S3Conn {
            w,
            http,
            extra: Vec::new(),
            rng: mix64(((worker as u64) << 20) ^ index as u64 ^ 0x5EED),
            keys,
            slot,
        })
    }
}

/// One connection of a client (and the extra ones its parallel parts use).
pub struct S3Conn {
    w: Arc<Workload>,
    http: HttpConn,
    extra: Vec<HttpConn>,
    rng: u64,
    /// Which object a GET, HEAD or PUT (not of a mixed workload) works on.
    keys: KeyPicker,
    /// Mixed workload: this connection's number; it works on its own
    /// objects only (number modulo connections), so that no other
    /// connection deletes an object it reads: a 404 is then the server's.
    slot: Option<u64>,
}

fn outcome(
    op: &'static str,
    first: Option<Instant>,
    out: u64,
    inn: u64,
    failure: Option<String>,
) -> CallOutcome {
    CallOutcome {
        op,
        first_byte: first,
        bytes_out: out,
        bytes_in: inn,
        failure,
        ..Default::default()
    }
}

impl S3Conn {
    fn random(&mut self, n: u64) -> u64 {
        self.rng = mix64(self.rng);
        self.rng % n.max(1)
    }

    /// An object by `--key-dist` that exists (or, after a few misses, any
    /// object).
    fn pick(&mut self, want: bool) -> u64 {
        let n = self.w.spec.objects;
        let mut i = self.keys.key();
        for _ in 0..8 {
            if self.w.exists[i as usize].load(Ordering::Relaxed) == want {
                break;
            }
            i = self.random(n);
        }
        i
    }

    /// One of this connection's own objects that exists (`want`) or not:
    /// a few random tries, then a scan from a random place. None: none is.
    fn pick_own(&mut self, slot: u64, want: bool) -> Option<u64> {
        let (n, k) = (self.w.connections, slot);
        let own = self.w.spec.objects.saturating_sub(k).div_ceil(n);
        if own == 0 {
            return None;
        }
        let w = self.w.clone();
        let is = |j: u64| w.exists[(k + j * n) as usize].load(Ordering::Relaxed) == want;
        for _ in 0..8 {
            let j = self.random(own);
            if is(j) {
                return Some(k + j * n);
            }
        }
        let start = self.random(own);
        (0..own)
            .map(|d| (start + d) % own)
            .find(|&j| is(j))
            .map(|j| k + j * n)
    }

    fn mixed_op(&mut self) -> S3Op {
        let total: u64 = self.w.spec.mix.iter().map(|(_, w)| *w as u64).sum();
        let mut r = self.random(total);
        for &(m, weight) in &self.w.spec.mix {
            if r < weight as u64 {
                return m;
            }
            r -= weight as u64;
        }
        self.w.spec.mix[0].0
    }

    /// The connections of `lanes` parallel parts: this one and extra ones.
    async fn lanes(&mut self, lanes: usize) -> io::Result<Vec<&mut HttpConn>> {
        while self.extra.len() + 1 < lanes {
            self.extra.push(self.w.client.connect().await?);
        }
        Ok(std::iter::once(&mut self.http)
            .chain(self.extra.iter_mut())
            .take(lanes)
            .collect())
    }

    pub async fn put(&mut self, i: u64) -> io::Result<CallOutcome> {
        let w = self.w.clone();
        let (key, size, seed) = (w.key(i), w.spec.sizes.size_of(i), w.seed(i));
        let (first, failure) = if size > w.spec.multipart_threshold {
            self.multipart(&key, size, seed).await?
        } else {
            let r = w
                .client
                .exec(
                    &mut self.http,
                    rusty_s3::Method::Put,
                    w.client.put_url(&key),
                    &[],
                    Payload::new(size, 0, seed),
                    Sink::Discard,
                )
                .await?;
            (Some(r.headers_at), r.failure)
        };
        if failure.is_none() {
            w.exists[i as usize].store(true, Ordering::Relaxed);
        }
        Ok(outcome("put", first, size, 0, failure))
    }

    /// Uploads in parts, `put_parts` at once. TTFB: the completion's headers.
    async fn multipart(
        &mut self,
        key: &str,
        size: u64,
        seed: Option<u64>,
    ) -> io::Result<(Option<Instant>, Option<String>)> {
        let w = self.w.clone();
        let c = &w.client;
        let r = c
            .exec(
                &mut self.http,
                rusty_s3::Method::Post,
                c.create_multipart_url(key),
                &[],
                Payload::empty(),
                Sink::Keep,
            )
            .await?;
        if r.failure.is_some() {
            return Ok((None, r.failure));
        }
        let Some(upload_id) = client::xml_value(&String::from_utf8_lossy(&r.kept), "UploadId")
        else {
            return Ok((
                None,
                Some("no UploadId in the CreateMultipartUpload answer".into()),
            ));
        };
        let part = w.spec.part_size;
        let nparts = size.div_ceil(part);
        let etags: RefCell<Vec<Option<String>>> = RefCell::new(vec![None; nparts as usize]);
        let failed: RefCell<Option<String>> = RefCell::new(None);
        let lanes = w.spec.put_parts.min(nparts as usize).max(1);
        let conns = self.lanes(lanes).await?;
        let jobs = conns.into_iter().enumerate().map(|(lane, conn)| {
            let (etags, failed, upload_id) = (&etags, &failed, &upload_id);
            async move {
                let mut p = lane as u64;
                while p < nparts && failed.borrow().is_none() {
                    let off = p * part;
                    let len = part.min(size - off);
                    let url = c.upload_part_url(key, (p + 1) as u16, upload_id);
                    let r = c
                        .exec(
                            conn,
                            rusty_s3::Method::Put,
                            url,
                            &[],
                            Payload::new(len, off, seed),
                            Sink::Discard,
                        )
                        .await?;
                    match (r.failure, r.etag) {
                        (None, Some(e)) => etags.borrow_mut()[p as usize] = Some(e),
                        (None, None) => {
                            *failed.borrow_mut() = Some("no ETag in an UploadPart answer".into())
                        }
                        (Some(f), _) => *failed.borrow_mut() = Some(f),
                    }
                    p += lanes as u64;
                }
                io::Result::Ok(())
            }
        });
        let results = futures_util::future::join_all(jobs).await;
        let broken = results.into_iter().find_map(Result::err);
        let failure = failed.into_inner();
        if broken.is_some() || failure.is_some() {
            // Best effort: the upload's parts are freed.
            let url = c.abort_multipart_url(key, &upload_id);
            let _ = c
                .exec(
                    &mut self.http,
                    rusty_s3::Method::Delete,
                    url,
                    &[],
                    Payload::empty(),
                    Sink::Discard,
                )
                .await;
            return match broken {
                Some(e) => Err(e),
                None => Ok((None, failure)),
            };
        }
        let etags: Vec<String> = etags
            .into_inner()
            .into_iter()
            .map(|e| e.unwrap_or_default())
            .collect();
        let (url, body) = c.complete_multipart(key, &upload_id, &etags);
        let r = c
            .exec(
                &mut self.http,
                rusty_s3::Method::Post,
                url,
                &[],
                Payload::text(body),
                Sink::Keep,
            )
            .await?;
        // An S3 quirk: a completion can fail after a 200, with an <Error> body.
        let text = String::from_utf8_lossy(&r.kept);
        let failure = r.failure.or_else(|| {
            text.contains("<Error>").then(|| {
                format!(
                    "200 {}",
                    client::xml_value(&text, "Code").unwrap_or_default()
                )
            })
        });
        Ok((Some(r.headers_at), failure))
    }

    pub async fn get(&mut self, i: u64) -> io::Result<CallOutcome> {
        let w = self.w.clone();
        let (key, size, seed) = (w.key(i), w.spec.sizes.size_of(i), w.seed(i));
        let part = w.spec.part_size;
        if w.spec.get_parts > 1 && size > part {
            return self.ranged_get(&key, size, seed).await;
        }
        let sink = read_sink(seed, 0);
        let r = w
            .client
            .exec(
                &mut self.http,
                rusty_s3::Method::Get,
                w.client.get_url(&key),
                &[],
                Payload::empty(),
                sink,
            )
            .await?;
        let failure = r.failure.clone().or_else(|| short(&r, size));
        let first = r.first_body_at.or((size == 0).then_some(r.headers_at));
        Ok(outcome("get", first, 0, r.bytes_in, failure))
    }

    /// Ranged reads of a part each, `get_parts` at once. TTFB: the first
    /// byte of any of them.
    async fn ranged_get(
        &mut self,
        key: &str,
        size: u64,
        seed: Option<u64>,
    ) -> io::Result<CallOutcome> {
        let w = self.w.clone();
        let c = &w.client;
        let part = w.spec.part_size;
        let nparts = size.div_ceil(part);
        let lanes = w.spec.get_parts.min(nparts as usize);
        let conns = self.lanes(lanes).await?;
        let state: RefCell<(Option<Instant>, u64, Option<String>)> = RefCell::new((None, 0, None));
        let jobs = conns.into_iter().enumerate().map(|(lane, conn)| {
            let state = &state;
            async move {
                let mut p = lane as u64;
                while p < nparts && state.borrow().2.is_none() {
                    let off = p * part;
                    let len = part.min(size - off);
                    let range = format!("bytes={off}-{}", off + len - 1);
                    let sink = read_sink(seed, off);
                    let r = c
                        .exec(
                            conn,
                            rusty_s3::Method::Get,
                            c.get_url(key),
                            &[("range", range)],
                            Payload::empty(),
                            sink,
                        )
                        .await?;
                    let mut s = state.borrow_mut();
                    if let Some(f) = r.first_body_at {
                        s.0 = Some(s.0.map_or(f, |g: Instant| g.min(f)));
                    }
                    s.1 += r.bytes_in;
                    if let Some(f) = r.failure.clone().or_else(|| short(&r, len)) {
                        s.2 = Some(f);
                    }
                    p += lanes as u64;
                }
                io::Result::Ok(())
            }
        });
        for r in futures_util::future::join_all(jobs).await {
            r?;
        }
        let (first, bytes, failure) = state.into_inner();
        Ok(outcome("get", first, 0, bytes, failure))
    }

    pub async fn head(&mut self, i: u64) -> io::Result<CallOutcome> {
        let w = self.w.clone();
        let size = w.spec.sizes.size_of(i);
        let r = w
            .client
            .exec(
                &mut self.http,
                rusty_s3::Method::Head,
                w.client.head_url(&w.key(i)),
                &[],
                Payload::empty(),
                Sink::Discard,
            )
            .await?;
        let failure = r.failure.or_else(|| {
            (w.verify && r.content_length != Some(size))
                .then(|| "size mismatch (HEAD's Content-Length)".to_string())
        });
        Ok(outcome("head", Some(r.headers_at), 0, 0, failure))
    }

    pub async fn delete(&mut self, i: u64) -> io::Result<CallOutcome> {
        let w = self.w.clone();
        let r = w
            .client
            .exec(
                &mut self.http,
                rusty_s3::Method::Delete,
                w.client.delete_url(&w.key(i)),
                &[],
                Payload::empty(),
                Sink::Discard,
            )
            .await?;
        if r.failure.is_none() {
            w.exists[i as usize].store(false, Ordering::Relaxed);
        }
        Ok(outcome("delete", Some(r.headers_at), 0, 0, r.failure))
    }

    /// One page (up to 1000 keys) of the run's objects.
    pub async fn list(&mut self) -> io::Result<CallOutcome> {
        let w = self.w.clone();
        let url = w.client.list_url(&w.spec.prefix, 1000);
        let r = w
            .client
            .exec(
                &mut self.http,
                rusty_s3::Method::Get,
                url,
                &[],
                Payload::empty(),
                Sink::Keep,
            )
            .await?;
        // A list workload's objects are all there (prepared, never deleted):
        // a first page has min(objects, 1000) keys.
        let check = w.verify && w.spec.workload == S3Workload::List;
        // An answer is read as a ListBucketResult, or it is a failure.
        let failure = r
            .failure
            .clone()
            .or_else(|| match client::list_keys(&r.kept) {
                Err(why) => Some(format!("list answer {why}")),
                Ok(keys) => (check && keys != w.spec.objects.min(1000))
                    .then(|| "list mismatch (keys listed)".to_string()),
            });
        Ok(outcome(
            "list",
            r.first_body_at.or(Some(r.headers_at)),
            0,
            r.bytes_in,
            failure,
        ))
    }
}

/// How a read treats the body from `offset`: checked with `--verify`, else dropped.
fn read_sink(seed: Option<u64>, offset: u64) -> Sink {
    match seed {
        Some(seed) => Sink::Verify { seed, offset },
        None => Sink::Discard,
    }
}

/// A successful read that brought fewer (or more) bytes than the object has.
fn short(r: &Reply, expected: u64) -> Option<String> {
    // The cause names no sizes: causes are counted by name.
    (r.bytes_in != expected).then(|| "short read (the body is not the object's length)".to_string())
}

impl CallConn for S3Conn {
    async fn call(&mut self, _seq: u64) -> io::Result<Option<CallOutcome>> {
        let workload = self.w.spec.workload;
        let op = match workload.op() {
            None => self.mixed_op(),
            Some(op) => op,
        };
        if let Some(slot) = self.slot {
            return self.mixed_call(slot, op).await.map(Some);
        }
        let out = match op {
            S3Op::Get => {
                let i = self.pick(true);
                self.get(i).await?
            }
            S3Op::Head => {
                let i = self.pick(true);
                self.head(i).await?
            }
            S3Op::Put => {
                let i = if workload == S3Workload::Mixed {
                    self.pick(false)
                } else {
                    self.keys.key()
                };
                self.put(i).await?
            }
            S3Op::Delete if workload == S3Workload::Delete => {
                // Each object is deleted once; the run ends when all are.
                let i = self.w.next_delete.fetch_add(1, Ordering::Relaxed);
                if i >= self.w.spec.objects {
                    return Ok(None);
                }
                self.delete(i).await?
            }
            S3Op::Delete => {
                let i = self.pick(true);
                self.delete(i).await?
            }
            S3Op::List => self.list().await?,
        };
        Ok(Some(out))
    }
}

impl S3Conn {
    /// An operation of the mixed workload on this connection's own
    /// objects. A read or a delete with none of its objects there writes
    /// one instead; a write with all of them there overwrites one.
    async fn mixed_call(&mut self, slot: u64, op: S3Op) -> io::Result<CallOutcome> {
        let missing = |c: &mut S3Conn| c.pick_own(slot, false);
        match op {
            S3Op::List => self.list().await,
            S3Op::Put => match missing(self).or_else(|| self.pick_own(slot, true)) {
                Some(i) => self.put(i).await,
                None => Err(io::Error::other(
                    "a connection of the mixed workload has no object",
                )),
            },
            S3Op::Get | S3Op::Head | S3Op::Delete => match self.pick_own(slot, true) {
                Some(i) if op == S3Op::Get => self.get(i).await,
                Some(i) if op == S3Op::Head => self.head(i).await,
                Some(i) => self.delete(i).await,
                None => match missing(self) {
                    Some(i) => self.put(i).await,
                    None => Err(io::Error::other(
                        "a connection of the mixed workload has no object",
                    )),
                },
            },
        }
    }
}

mod phases;
pub use phases::{cleanup, preflight, prepare};

#[cfg(test)]
mod tests;
