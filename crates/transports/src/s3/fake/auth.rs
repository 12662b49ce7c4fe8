//! Which requests the fake server accepts: presigned or header-signed
//! (SigV4, checked by `sigv4::Verifier`), a request seen before taken again
//! while its signature is valid.

use super::*;

/// The request's target without its signature, when `v` accepts its
/// signature now, presigned or in its headers (or accepted the very same
/// request before, in `seen`, and it is still valid).
pub(super) fn presigned<B>(v: &Verifier, seen: &Seen, req: &http::Request<B>) -> Option<http::Uri> {
    let host = req.headers().get(http::header::HOST)?.to_str().ok()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    let pq = req.uri().path_and_query()?;
    let now = i64::try_from(now).ok()?;
    match req.headers().get(http::header::AUTHORIZATION) {
        None => accept(v, seen, req.method(), host, pq, now),
        Some(auth) => {
            let h = |name: &str| req.headers().get(name)?.to_str().ok();
            let signed = InHeaders {
                authorization: auth.to_str().ok()?,
                date: h("x-amz-date")?,
                content_sha256: h("x-amz-content-sha256")?,
            };
            accept_in_headers(v, seen, req.method(), host, pq, &signed, now)
        }
    }
}

/// [`presigned`] for a request signed in its headers, at `now`; its query
/// (a plain object request has none) must be empty.
pub(super) fn accept_in_headers(
    v: &Verifier,
    seen: &Seen,
    method: &http::Method,
    host: &str,
    pq: &http::uri::PathAndQuery,
    signed: &InHeaders,
    now: i64,
) -> Option<http::Uri> {
    if pq.query().is_some() {
        return None;
    }
    // The same request's bytes: its target and its signature (kept as
    // "TARGET\nAUTHORIZATION").
    let slot = &seen.slots[Seen::slot(method, signed.authorization)];
    if let Some(s) = slot.lock().expect("not poisoned").as_ref()
        && s.valid.contains(&now)
        && s.method == method
        && s.host == host
        && s.pq.split_once('\n') == Some((pq.as_str(), signed.authorization))
    {
        return Some(s.target.clone());
    }
    let key = format!("{}\n{}", pq.as_str(), signed.authorization);
    let a = v.accept_headers(method.as_str(), pq.path(), host, signed, now)?;
    let target: http::Uri = a.target.parse().ok()?;
    *slot.lock().expect("not poisoned") = Some(SeenRequest {
        method: method.clone(),
        host: host.to_string(),
        pq: key,
        valid: a.valid,
        target: target.clone(),
    });
    Some(target)
}

/// [`presigned`] at `now` (seconds since the epoch).
pub(super) fn accept(
    v: &Verifier,
    seen: &Seen,
    method: &http::Method,
    host: &str,
    pq: &http::uri::PathAndQuery,
    now: i64,
) -> Option<http::Uri> {
    let query = pq.query()?;
    if !query.contains("X-Amz-Signature=") {
        return None;
    }
    let slot = &seen.slots[Seen::slot(method, pq.as_str())];
    if let Some(s) = slot.lock().expect("not poisoned").as_ref()
        && s.valid.contains(&now)
        && s.method == method
        && s.host == host
        && s.pq == pq.as_str()
    {
        return Some(s.target.clone());
    }
    let a = v.accept(method.as_str(), pq.path(), query, host, now)?;
    let target: http::Uri = a.target.parse().ok()?;
    *slot.lock().expect("not poisoned") = Some(SeenRequest {
        method: method.clone(),
        host: host.to_string(),
        pq: pq.as_str().to_string(),
        valid: a.valid,
        target: target.clone(),
    });
    Some(target)
}

/// Presigned requests the fast path accepted, by their exact bytes (method,
/// Host, path and query, the signature among them), each with the seconds
/// its signature is valid in: the same request sent again is served without
/// a second check. A client that signs an object once a second (wirebench,
/// 100 objects) or replays one presigned URL sends the same bytes again and
/// again, and the check was 16% of the server's CPU per signed 4 KiB GET
/// (perf). Bounded: [`Seen::SLOTS`] requests of a few hundred bytes; a
/// request takes the slot of its hash from whichever was there.
pub(super) struct Seen {
    pub(super) slots: Box<[Mutex<Option<SeenRequest>>]>,
}

pub(super) struct SeenRequest {
    method: http::Method,
    host: String,
    pq: String,
    valid: std::ops::RangeInclusive<i64>,
    target: http::Uri,
}

impl Seen {
    pub(super) const SLOTS: usize = 1024;

    pub(super) fn new() -> Seen {
        Seen {
            slots: (0..Self::SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// FNV-1a of the method and the target's last 32 bytes: where a
    /// presigned target ends, with its signature, a hash of all the rest.
    /// (A target whose signature is elsewhere may share slots more: each
    /// slot is compared in full all the same.)
    fn slot(method: &http::Method, pq: &str) -> usize {
        let tail = &pq.as_bytes()[pq.len().saturating_sub(32)..];
        let h = wirebench_core::hash::fnv1a(method.as_str().bytes().chain(tail.iter().copied()));
        (h % Self::SLOTS as u64) as usize
    }
}
