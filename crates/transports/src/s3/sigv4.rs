//! Presigning the hot path's requests (GET, PUT, HEAD, DELETE of an
//! object) with AWS Signature Version 4, query-string form and the payload
//! unsigned, exactly as rusty-s3 signs them (a test compares the URLs), at
//! a fraction of the cost: the signing key is derived once per day (and
//! kept as a ready HMAC key), the date strings once per second, and a
//! request costs one SHA-256 of its canonical form and one HMAC. Every
//! other request (lists, multipart, buckets) is still signed by rusty-s3.

use ring::{digest, hmac};
use std::fmt::Write as _;
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
    for &b in text.as_bytes() {
        if keeps(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
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

    /// As [`Presigner::object`], at `second` (since the epoch).
    pub fn object_at(&self, method: &str, key: &str, second: i64) -> String {
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
        let hash = digest::digest(&digest::SHA256, canonical.as_bytes());
        let mut to_sign = String::with_capacity(160);
        to_sign.push_str("AWS4-HMAC-SHA256\n");
        to_sign.push_str(&d.stamp);
        to_sign.push('\n');
        to_sign.push_str(&d.scope);
        to_sign.push('\n');
        hex(&mut to_sign, hash.as_ref());
        let signature = hmac::sign(&d.key, to_sign.as_bytes());
        target.push_str("&X-Amz-Signature=");
        hex(&mut target, signature.as_ref());
        target
    }
}

fn hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
    use std::time::Duration;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(15_849), (2013, 5, 24));
        assert_eq!(civil(11_016), (2000, 2, 29));
        assert_eq!(civil(20_780), (2026, 11, 23));
    }

    /// The same URLs as rusty-s3's, byte for byte, for both URL styles,
    /// keys with characters to encode, several days and methods.
    #[test]
    fn it_signs_exactly_as_rusty_s3() {
        let creds = Credentials::new(
            "AKIDEXAMPLE/x+y",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        );
        for (endpoint, style, host, base) in [
            (
                "http://127.0.0.1:9000/",
                UrlStyle::Path,
                "127.0.0.1:9000",
                "/bench/",
            ),
            (
                "https://s3.example.com/",
                UrlStyle::VirtualHost,
                "bench.s3.example.com",
                "/",
            ),
        ] {
            let bucket =
                Bucket::new(endpoint.parse().unwrap(), style, "bench", "eu-west-1").unwrap();
            let p = Presigner::new(creds.key(), creds.secret(), "eu-west-1", host, base, 3600);
            for second in [
                1_369_353_600i64,
                1_795_478_399,
                1_795_478_400,
                1_795_500_001,
            ] {
                let t = jiff_free_time(second);
                for key in ["wirebench/18f-7/42", "a b/c+d%e~f", "ümlaut/x?y#z", "/lead"] {
                    let cases: [(&str, String); 4] = [
                        (
                            "GET",
                            bucket
                                .get_object(Some(&creds), key)
                                .sign_with_time(Duration::from_secs(3600), &t)
                                .to_string(),
                        ),
                        (
                            "PUT",
                            bucket
                                .put_object(Some(&creds), key)
                                .sign_with_time(Duration::from_secs(3600), &t)
                                .to_string(),
                        ),
                        (
                            "HEAD",
                            bucket
                                .head_object(Some(&creds), key)
                                .sign_with_time(Duration::from_secs(3600), &t)
                                .to_string(),
                        ),
                        (
                            "DELETE",
                            bucket
                                .delete_object(Some(&creds), key)
                                .sign_with_time(Duration::from_secs(3600), &t)
                                .to_string(),
                        ),
                    ];
                    for (method, url) in cases {
                        let target = p.object_at(method, key, second);
                        assert!(
                            url.ends_with(&target)
                                && url.len() == target.len() + url.find(&target).unwrap(),
                            "{method} {key} at {second}:\n rusty-s3 {url}\n ours     {target}"
                        );
                    }
                }
            }
        }
    }

    fn jiff_free_time(second: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(second).unwrap()
    }
}
