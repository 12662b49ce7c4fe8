//! Presigning the hot path's requests (GET, PUT, HEAD, DELETE of an
//! object) with AWS Signature Version 4, query-string form and the payload
//! unsigned, exactly as rusty-s3 signs them (a test compares the URLs), at
//! a fraction of the cost: the signing key is derived once per day (and
//! kept as a ready HMAC key), the date strings once per second, and a
//! request costs one SHA-256 of its canonical form and one HMAC. A request
//! for an object already signed in the same second takes that signature
//! again: the date in it counts seconds, so signing anew would give the
//! same bytes. Every other request (lists, multipart, buckets) is still
//! signed by rusty-s3.

use ring::{digest, hmac};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// What a presigner knows of the endpoint and the credentials.
pub struct Presigner {
    access_key: String,
    secret: String,
    region: String,
    /// The Host header, as signed.
    host: String,
    /// The path every object's path starts with (`/bucket/` in path style,
    /// `/` in virtual-host style), encoded.
    base_path: String,
    /// `X-Amz-Expires`, in seconds.
    expires: String,
    day: Mutex<Option<Arc<Day>>>,
    /// The last target signed per slot (a key's slot is its hash's), for
    /// the second it was signed in.
    recent: Box<[Mutex<Option<Recent>>]>,
}

/// Slots of [`Presigner::recent`]: the objects a second's requests can
/// take their signature from (at most this many targets of ~350 bytes kept).
const RECENT_SLOTS: usize = 1024;

/// A target signed in `second` (with its signature's header lines when
/// signed in the headers).
struct Recent {
    second: i64,
    method: String,
    key: String,
    target: String,
    headers: Option<Arc<str>>,
}

/// An object request signed in its headers: its target (the path alone)
/// and the header lines that carry the signature (each ending in CRLF).
#[derive(Debug, Clone)]
pub struct HeaderSigned {
    pub target: String,
    pub headers: Arc<str>,
}

/// The slot of (`method`, `key`): FNV-1a of both.
fn slot(method: &str, key: &str) -> usize {
    let h = wirebench_core::hash::fnv1a(method.bytes().chain([b'\n']).chain(key.bytes()));
    (h % RECENT_SLOTS as u64) as usize
}

/// What stays the same for a day, and the date strings of one second.
#[derive(Clone)]
struct Day {
    /// Days since the epoch.
    day: i64,
    key: hmac::Key,
    /// `KEY/YYYYMMDD/REGION/s3/aws4_request`, query-encoded.
    credential: String,
    /// `YYYYMMDD/REGION/s3/aws4_request`.
    scope: String,
    second: i64,
    /// `YYYYMMDDTHHMMSSZ` of `second`.
    stamp: String,
}

/// The bytes a path keeps as they are (besides letters and digits).
fn path_keeps(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || b"-._~/".contains(&b)
        || (b.is_ascii_graphic() && !b":?#[]@!$&'()*+,;=\"<>%{}|\\^`".contains(&b))
}

/// The bytes a query name or value keeps as they are.
fn query_keeps(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~".contains(&b)
}

/// Appends `key` to a path, encoded as rusty-s3 encodes it.
pub fn encode_path(out: &mut String, key: &str) {
    encode(out, key, path_keeps);
}

fn encode(out: &mut String, text: &str, keeps: fn(u8) -> bool) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = text.as_bytes();
    let mut run = 0;
    // Runs of bytes kept as they are go in whole (a key is mostly one).
    for (at, &b) in bytes.iter().enumerate() {
        if keeps(b) {
            continue;
        }
        if run < at {
            out.push_str(std::str::from_utf8(&bytes[run..at]).expect("kept bytes are ASCII"));
        }
        out.push('%');
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
        run = at + 1;
    }
    if run < bytes.len() {
        out.push_str(std::str::from_utf8(&bytes[run..]).expect("kept bytes are ASCII"));
    }
}

/// (year, month, day) of a day since the epoch (proleptic Gregorian).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn hmac_sign(key: &[u8], data: &[u8]) -> hmac::Tag {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data)
}

impl Presigner {
    /// `host`: the Host header the requests carry; `base_path`: the path
    /// an object's key is appended to (encoded, ending in `/`).
    pub fn new(
        access_key: &str,
        secret: &str,
        region: &str,
        host: &str,
        base_path: &str,
        expires: u64,
    ) -> Presigner {
        Presigner {
            access_key: access_key.to_string(),
            secret: secret.to_string(),
            region: region.to_string(),
            host: host.to_string(),
            base_path: base_path.to_string(),
            expires: expires.to_string(),
            day: Mutex::new(None),
            recent: (0..RECENT_SLOTS).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// The day's key and strings, and `second`'s date, made when they
    /// change (once a second at most: a request only takes a reference).
    fn day(&self, second: i64) -> Arc<Day> {
        let mut cached = self.day.lock().expect("not poisoned");
        if let Some(d) = cached.as_ref().filter(|d| d.second == second) {
            return d.clone();
        }
        let day = second.div_euclid(86_400);
        let (y, m, dd) = civil(day);
        let mut d = match cached.as_ref().filter(|d| d.day == day) {
            Some(d) => Day::clone(d),
            None => {
                let ymd = format!("{y:04}{m:02}{dd:02}");
                let k = hmac_sign(format!("AWS4{}", self.secret).as_bytes(), ymd.as_bytes());
                let k = hmac_sign(k.as_ref(), self.region.as_bytes());
                let k = hmac_sign(k.as_ref(), b"s3");
                let k = hmac_sign(k.as_ref(), b"aws4_request");
                let scope = format!("{ymd}/{}/s3/aws4_request", self.region);
                let mut credential = String::new();
                encode(
                    &mut credential,
                    &format!("{}/{scope}", self.access_key),
                    query_keeps,
                );
                Day {
                    day,
                    key: hmac::Key::new(hmac::HMAC_SHA256, k.as_ref()),
                    credential,
                    scope,
                    second,
                    stamp: String::new(),
                }
            }
        };
        let s = second.rem_euclid(86_400);
        d.second = second;
        d.stamp = format!(
            "{y:04}{m:02}{dd:02}T{:02}{:02}{:02}Z",
            s / 3600,
            s / 60 % 60,
            s % 60
        );
        let d = Arc::new(d);
        *cached = Some(d.clone());
        d
    }

    /// The request target (path and query) of `method` ("GET", "PUT"...)
    /// on object `key`, presigned now.
    pub fn object(&self, method: &str, key: &str) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.object_at(method, key, now)
    }

    /// As [`Presigner::object`], at `second` (since the epoch): the target
    /// signed for the same object in the same second if its slot still
    /// holds it, else signed now (and kept in the slot).
    pub fn object_at(&self, method: &str, key: &str, second: i64) -> String {
        let slot = &self.recent[slot(method, key)];
        if let Some(r) = slot.lock().expect("not poisoned").as_ref()
            && r.second == second
            && r.method == method
            && r.key == key
            && r.headers.is_none()
        {
            return r.target.clone();
        }
        let target = self.sign_at(method, key, second);
        *slot.lock().expect("not poisoned") = Some(Recent {
            second,
            method: method.to_string(),
            key: key.to_string(),
            target: target.clone(),
            headers: None,
        });
        target
    }

    /// The request of `method` on object `key`, signed now in its headers
    /// (`Authorization`, `x-amz-date`, `x-amz-content-sha256`:
    /// `UNSIGNED-PAYLOAD`), as the AWS SDKs sign.
    pub fn object_in_headers(&self, method: &str, key: &str) -> HeaderSigned {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.object_in_headers_at(method, key, now)
    }

    /// As [`Presigner::object_in_headers`], at `second`; the request made
    /// for the same object in the same second is taken again (signing anew
    /// would give the same bytes).
    pub fn object_in_headers_at(&self, method: &str, key: &str, second: i64) -> HeaderSigned {
        let slot = &self.recent[slot(method, key)];
        if let Some(r) = slot.lock().expect("not poisoned").as_ref()
            && r.second == second
            && r.method == method
            && r.key == key
            && let Some(h) = &r.headers
        {
            return HeaderSigned {
                target: r.target.clone(),
                headers: h.clone(),
            };
        }
        let signed = self.sign_headers_at(method, key, second);
        *slot.lock().expect("not poisoned") = Some(Recent {
            second,
            method: method.to_string(),
            key: key.to_string(),
            target: signed.target.clone(),
            headers: Some(signed.headers.clone()),
        });
        signed
    }

    /// The request of `method` on `key`, signed at `second` in its headers.
    fn sign_headers_at(&self, method: &str, key: &str, second: i64) -> HeaderSigned {
        let d = self.day(second);
        let mut target = String::with_capacity(self.base_path.len() + key.len());
        target.push_str(&self.base_path);
        encode(&mut target, key, path_keeps);
        let canonical = header_canonical(method, &target, &self.host, &d.stamp);
        let to_sign = string_to_sign(&d.stamp, &d.scope, &canonical);
        let signature = hmac::sign(&d.key, to_sign.as_bytes());
        let mut h = String::with_capacity(320);
        h.push_str("Authorization: AWS4-HMAC-SHA256 Credential=");
        h.push_str(&self.access_key);
        h.push('/');
        h.push_str(&d.scope);
        h.push_str(", SignedHeaders=");
        h.push_str(HEADER_SIGNED);
        h.push_str(", Signature=");
        hex(&mut h, signature.as_ref());
        h.push_str("\r\nx-amz-content-sha256: UNSIGNED-PAYLOAD\r\nx-amz-date: ");
        h.push_str(&d.stamp);
        h.push_str("\r\n");
        HeaderSigned {
            target,
            headers: h.into(),
        }
    }

    /// The target of `method` on `key`, signed at `second`.
    fn sign_at(&self, method: &str, key: &str, second: i64) -> String {
        let d = self.day(second);
        let mut target = String::with_capacity(self.base_path.len() + key.len() + 320);
        target.push_str(&self.base_path);
        encode(&mut target, key, path_keeps);
        let path_len = target.len();
        target.push_str("?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=");
        target.push_str(&d.credential);
        target.push_str("&X-Amz-Date=");
        target.push_str(&d.stamp);
        target.push_str("&X-Amz-Expires=");
        target.push_str(&self.expires);
        target.push_str("&X-Amz-SignedHeaders=host");
        let mut canonical = String::with_capacity(target.len() + self.host.len() + 64);
        canonical.push_str(method);
        canonical.push('\n');
        canonical.push_str(&target[..path_len]);
        canonical.push('\n');
        canonical.push_str(&target[path_len + 1..]);
        canonical.push_str("\nhost:");
        canonical.push_str(&self.host);
        canonical.push_str("\n\nhost\nUNSIGNED-PAYLOAD");
        let to_sign = string_to_sign(&d.stamp, &d.scope, &canonical);
        let signature = hmac::sign(&d.key, to_sign.as_bytes());
        target.push_str("&X-Amz-Signature=");
        hex(&mut target, signature.as_ref());
        target
    }
}

/// Checks presigned requests (query-string SigV4, the payload unsigned,
/// `host` the only signed header) at the cost of one SHA-256 and one HMAC,
/// the signing key derived once per day and region: the fake server's fast
/// path. It answers only "valid" or "not for me": a request it does not
/// accept (not presigned, not in canonical form, another signed header, a
/// bad or expired signature) goes to the full check, which says why.
pub struct Verifier {
    access_key: String,
    secret: String,
    /// Signing keys by `YYYYMMDD/REGION`, a few at most.
    keys: Mutex<Vec<(String, hmac::Key)>>,
}

/// Whether `text` is in canonical query form: unreserved bytes as they
/// are, every other byte as `%XX` (upper-case hex) of a byte that is not
/// unreserved.
fn canonical_query_text(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if query_keeps(b[i]) {
            i += 1;
            continue;
        }
        let hexdigit = |c: u8| c.is_ascii_digit() || (b'A'..=b'F').contains(&c);
        if b[i] != b'%' || i + 2 >= b.len() {
            return false;
        }
        if !(hexdigit(b[i + 1]) && hexdigit(b[i + 2])) {
            return false;
        }
        let v = u8::from_str_radix(&text[i + 1..i + 3], 16).expect("two hex digits");
        if query_keeps(v) {
            return false;
        }
        i += 3;
    }
    true
}

/// Percent-decodes canonical text (see [`canonical_query_text`]).
fn decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            out.push(u8::from_str_radix(&text[i + 1..i + 3], 16).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Seconds since the epoch of a `YYYYMMDDTHHMMSSZ` stamp.
fn stamp_seconds(stamp: &str) -> Option<i64> {
    let b = stamp.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (hh, mm, ss) = (n(9..11)?, n(11..13)?, n(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days since the epoch (the inverse of `civil`).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hh * 3600 + mm * 60 + ss)
}

impl Verifier {
    pub fn new(access_key: &str, secret: &str) -> Verifier {
        Verifier {
            access_key: access_key.to_string(),
            secret: secret.to_string(),
            keys: Mutex::new(Vec::new()),
        }
    }

    /// The signing key of `scope` (`YYYYMMDD/REGION`).
    fn key(&self, ymd: &str, region: &str) -> hmac::Key {
        let mut keys = self.keys.lock().expect("not poisoned");
        if let Some((_, k)) = keys.iter().find(|(s, _)| {
            s.len() == ymd.len() + 1 + region.len() && s.starts_with(ymd) && s.ends_with(region)
        }) {
            return k.clone();
        }
        let k = hmac_sign(format!("AWS4{}", self.secret).as_bytes(), ymd.as_bytes());
        let k = hmac_sign(k.as_ref(), region.as_bytes());
        let k = hmac_sign(k.as_ref(), b"s3");
        let k = hmac_sign(k.as_ref(), b"aws4_request");
        let key = hmac::Key::new(hmac::HMAC_SHA256, k.as_ref());
        // Regions and days are few; a client that sends many gets no
        // memory for it.
        if keys.len() >= 8 {
            keys.remove(0);
        }
        keys.push((format!("{ymd}/{region}"), key.clone()));
        key
    }

    /// The request target without its signature's parameters, when
    /// `method path?query` sent to `host` carries a valid presigned
    /// signature by this verifier's key at `now` (seconds since the
    /// epoch); None when it does not, or not in a form this fast check
    /// takes.
    pub fn check(
        &self,
        method: &str,
        path: &str,
        query: &str,
        host: &str,
        now: i64,
    ) -> Option<String> {
        self.accept(method, path, query, host, now)
            .map(|a| a.target)
    }

    /// As [`Verifier::check`], with the seconds in which the same request
    /// is valid: from 15 minutes before it was signed (clock skew) to its
    /// expiry.
    pub fn accept(
        &self,
        method: &str,
        path: &str,
        query: &str,
        host: &str,
        now: i64,
    ) -> Option<Accepted> {
        let mut params: Vec<(&str, &str)> = Vec::with_capacity(8);
        let (mut credential, mut date, mut expires, mut signature) = (None, None, None, None);
        let mut rest = String::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if !canonical_query_text(name) || !canonical_query_text(value) {
                return None;
            }
            match name {
                "X-Amz-Algorithm" if value != "AWS4-HMAC-SHA256" => return None,
                "X-Amz-SignedHeaders" if value != "host" => return None,
                "X-Amz-Credential" => credential = Some(value),
                "X-Amz-Date" => date = Some(value),
                "X-Amz-Expires" => expires = Some(value.parse::<i64>().ok()?),
                "X-Amz-Signature" => {
                    signature = Some(value);
                    continue;
                }
                _ => {}
            }
            if !name.starts_with("X-Amz-") {
                if !rest.is_empty() {
                    rest.push('&');
                }
                rest.push_str(pair);
            }
            params.push((name, value));
        }
        let (credential, date, expires, signature) = (credential?, date?, expires?, signature?);
        if signature.len() != 64 || !params.iter().any(|(n, _)| *n == "X-Amz-Algorithm") {
            return None;
        }
        let credential = String::from_utf8(decode(credential)).ok()?;
        let scope = self.scope_of(&credential, date)?;
        let signed_at = stamp_seconds(date)?;
        if now > signed_at + expires || signed_at > now + SKEW_S || !path_is_canonical(path) {
            return None;
        }
        params.sort_unstable();
        let mut canonical = String::with_capacity(path.len() + query.len() + host.len() + 64);
        canonical.push_str(method);
        canonical.push('\n');
        canonical.push_str(path);
        canonical.push('\n');
        for (i, (n, v)) in params.iter().enumerate() {
            if i > 0 {
                canonical.push('&');
            }
            canonical.push_str(n);
            canonical.push('=');
            canonical.push_str(v);
        }
        canonical.push_str("\nhost:");
        canonical.push_str(host.trim());
        canonical.push_str("\n\nhost\nUNSIGNED-PAYLOAD");
        if !self.signed(&scope, date, &canonical, signature) {
            return None;
        }
        Some(Accepted {
            target: if rest.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{rest}")
            },
            valid: signed_at - SKEW_S..=signed_at + expires,
        })
    }
}

/// The signature of a request signed in its headers, as it came.
pub struct InHeaders<'a> {
    pub authorization: &'a str,
    /// `x-amz-date`.
    pub date: &'a str,
    /// `x-amz-content-sha256`.
    pub content_sha256: &'a str,
}

/// The headers a request signed in its headers signs, in canonical order.
pub const HEADER_SIGNED: &str = "host;x-amz-content-sha256;x-amz-date";

/// A credential's scope, checked against the verifier's access key and the
/// request's date.
struct Scope<'a> {
    ymd: &'a str,
    region: &'a str,
    /// `YYYYMMDD/REGION/s3/aws4_request`.
    text: &'a str,
}

/// Whether a path as sent is its own canonical form.
fn path_is_canonical(path: &str) -> bool {
    let Ok(decoded) = String::from_utf8(decode(path)) else {
        return false;
    };
    let mut canonical = String::with_capacity(path.len());
    encode(&mut canonical, &decoded, path_keeps);
    canonical == path
}

/// The canonical request of `method` on `path`, signed in its headers (see
/// [`HEADER_SIGNED`]) at `date`: the signer's and the verifier's.
fn header_canonical(method: &str, path: &str, host: &str, date: &str) -> String {
    let mut c = String::with_capacity(path.len() + host.len() + 160);
    c.push_str(method);
    c.push('\n');
    c.push_str(path);
    c.push_str("\n\nhost:");
    c.push_str(host);
    c.push_str("\nx-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:");
    c.push_str(date);
    c.push_str("\n\n");
    c.push_str(HEADER_SIGNED);
    c.push_str("\nUNSIGNED-PAYLOAD");
    c
}

/// The string to sign of a canonical request, signed at `date` in `scope`.
fn string_to_sign(date: &str, scope: &str, canonical: &str) -> String {
    let hash = digest::digest(&digest::SHA256, canonical.as_bytes());
    let mut to_sign = String::with_capacity(160);
    to_sign.push_str("AWS4-HMAC-SHA256\n");
    to_sign.push_str(date);
    to_sign.push('\n');
    to_sign.push_str(scope);
    to_sign.push('\n');
    hex(&mut to_sign, hash.as_ref());
    to_sign
}

impl Verifier {
    /// The scope of `credential` (`KEY/YYYYMMDD/REGION/s3/aws4_request`),
    /// if it is this verifier's key's, for S3, of the day of `date`.
    fn scope_of<'a>(&self, credential: &'a str, date: &str) -> Option<Scope<'a>> {
        let mut parts = credential.rsplitn(5, '/');
        let (end, service, region, ymd, key_id) = (
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
            parts.next()?,
        );
        let ok = end == "aws4_request"
            && service == "s3"
            && key_id == self.access_key
            && date.starts_with(ymd);
        ok.then(|| Scope {
            ymd,
            region,
            text: &credential[key_id.len() + 1..],
        })
    }

    /// Whether `signature` (hex) signs `canonical` at `date` in `scope`,
    /// compared in full whatever differs first.
    fn signed(&self, scope: &Scope, date: &str, canonical: &str, signature: &str) -> bool {
        if signature.len() != 64 {
            return false;
        }
        let to_sign = string_to_sign(date, scope.text, canonical);
        let tag = hmac::sign(&self.key(scope.ymd, scope.region), to_sign.as_bytes());
        let mut expected = String::with_capacity(64);
        hex(&mut expected, tag.as_ref());
        let differ = expected
            .bytes()
            .zip(signature.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        differ == 0
    }

    /// As [`Verifier::accept`], for a request signed in its headers as
    /// [`Presigner::object_in_headers`] signs (the headers
    /// [`HEADER_SIGNED`], the payload unsigned): valid from 15 minutes
    /// before it was signed to 15 minutes after.
    pub fn accept_headers(
        &self,
        method: &str,
        path: &str,
        host: &str,
        signed: &InHeaders,
        now: i64,
    ) -> Option<Accepted> {
        let date = signed.date;
        if signed.content_sha256 != "UNSIGNED-PAYLOAD" {
            return None;
        }
        let rest = signed
            .authorization
            .strip_prefix("AWS4-HMAC-SHA256 Credential=")?;
        let (credential, rest) = rest.split_once(", SignedHeaders=")?;
        let (headers, signature) = rest.split_once(", Signature=")?;
        if headers != HEADER_SIGNED {
            return None;
        }
        let scope = self.scope_of(credential, date)?;
        let signed_at = stamp_seconds(date)?;
        if (now - signed_at).abs() > SKEW_S || !path_is_canonical(path) {
            return None;
        }
        let canonical = header_canonical(method, path, host.trim(), date);
        let valid = self.signed(&scope, date, &canonical, signature);
        valid.then(|| Accepted {
            target: path.to_string(),
            valid: signed_at - SKEW_S..=signed_at + SKEW_S,
        })
    }
}

/// How far in the future a request may say it was signed (clock skew), in
/// seconds.
const SKEW_S: i64 = 900;

/// A request [`Verifier::accept`] took.
#[derive(Debug, Clone, PartialEq)]
pub struct Accepted {
    /// The request target without the signature's parameters.
    pub target: String,
    /// The seconds (since the epoch) in which its signature is valid.
    pub valid: std::ops::RangeInclusive<i64>,
}

fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

#[cfg(test)]
mod tests;
