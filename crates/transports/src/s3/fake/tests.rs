use super::*;
use crate::s3::sigv4::Presigner;

/// A presigned request accepted once is accepted again from its slot,
/// for as long as its signature is valid, and only with the very same
/// method, Host and target.
#[test]
fn a_request_seen_before_is_taken_while_valid_and_only_as_it_was() {
    let (key, secret, host) = ("AKIDEXAMPLE", "secret/of+the=test", "127.0.0.1:9000");
    let now = 1_795_478_400i64;
    let p = Presigner::new(key, secret, "us-east-1", host, "/bench/", 3600);
    let (v, seen) = (Verifier::new(key, secret), Seen::new());
    let get = http::Method::GET;
    let pq = |t: &str| -> http::uri::PathAndQuery { t.parse().unwrap() };
    let signed = pq(&p.object_at("GET", "k/1", now));
    let first = accept(&v, &seen, &get, host, &signed, now).expect("a valid signature");
    assert_eq!(first, "/bench/k/1");
    // Taken from the slot: a verifier of another secret (never paired
    // with these slots in the server) would refuse it.
    let stranger = Verifier::new(key, "another secret");
    assert!(accept(&stranger, &Seen::new(), &get, host, &signed, now).is_none());
    assert_eq!(
        accept(&stranger, &seen, &get, host, &signed, now + 10),
        Some(first)
    );
    // Not after its expiry, nor 15 minutes before it was signed.
    assert!(accept(&v, &seen, &get, host, &signed, now + 3601).is_none());
    assert!(accept(&v, &seen, &get, host, &signed, now - 901).is_none());
    // Not for another method, Host, or a byte changed in the signature.
    assert!(accept(&v, &seen, &http::Method::PUT, host, &signed, now).is_none());
    assert!(accept(&v, &seen, &get, "127.0.0.1:9001", &signed, now).is_none());
    let mut forged = signed.as_str().to_string();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    assert!(accept(&v, &seen, &get, host, &pq(&forged), now).is_none());
    // The slot went to nothing refused: the first request still hits.
    assert!(accept(&stranger, &seen, &get, host, &signed, now).is_some());
    // Unsigned targets are not for this path.
    assert!(accept(&v, &seen, &get, host, &pq("/bench/k/1"), now).is_none());
}

/// A request signed in its headers (as the SDKs sign, and wirebench by
/// default) is checked by the fast path too, and only as it was signed.
#[test]
fn a_request_signed_in_its_headers_is_checked_and_taken_again() {
    let (key, secret, host) = ("AKIDEXAMPLE", "secret/of+the=test", "127.0.0.1:9000");
    let now = 1_795_478_400i64;
    let p = Presigner::new(key, secret, "us-east-1", host, "/bench/", 3600);
    let (v, seen) = (Verifier::new(key, secret), Seen::new());
    let signed = p.object_in_headers_at("GET", "k/1", now);
    let header = |name: &str| -> String {
        signed
            .headers
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_string))
            .unwrap()
    };
    let (auth, date, sha) = (
        header("Authorization"),
        header("x-amz-date"),
        header("x-amz-content-sha256"),
    );
    let pq: http::uri::PathAndQuery = signed.target.parse().unwrap();
    let get = http::Method::GET;
    let check = |v: &Verifier,
                 seen: &Seen,
                 method: &http::Method,
                 host: &str,
                 pq: &http::uri::PathAndQuery,
                 auth: &str,
                 now: i64| {
        let h = InHeaders {
            authorization: auth,
            date: &date,
            content_sha256: &sha,
        };
        accept_in_headers(v, seen, method, host, pq, &h, now).map(|u| u.to_string())
    };
    let got = check(&v, &seen, &get, host, &pq, &auth, now);
    assert_eq!(got.as_deref(), Some("/bench/k/1"));
    // Taken again from its slot, while valid.
    let stranger = Verifier::new(key, "another secret");
    assert!(check(&stranger, &seen, &get, host, &pq, &auth, now + 60).is_some());
    assert!(check(&stranger, &Seen::new(), &get, host, &pq, &auth, now).is_none());
    // Not 15 minutes on, nor for another method, Host, path or signature.
    let fresh = Seen::new();
    assert!(check(&v, &fresh, &get, host, &pq, &auth, now + 901).is_none());
    assert!(check(&v, &fresh, &http::Method::PUT, host, &pq, &auth, now).is_none());
    assert!(check(&v, &fresh, &get, "h:1", &pq, &auth, now).is_none());
    let other: http::uri::PathAndQuery = "/bench/k/2".parse().unwrap();
    assert!(check(&v, &fresh, &get, host, &other, &auth, now).is_none());
    let mut forged = auth.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    assert!(check(&v, &fresh, &get, host, &pq, &forged, now).is_none());
}

/// More requests than slots: each still checked right, and the memory
/// stays the slots'.
#[test]
fn more_requests_than_slots_are_each_checked() {
    let (key, secret, host) = ("AKIDEXAMPLE", "s", "h:1");
    let now = 1_795_478_400i64;
    let p = Presigner::new(key, secret, "us-east-1", host, "/b/", 60);
    let (v, seen) = (Verifier::new(key, secret), Seen::new());
    for round in 0..2 {
        for i in 0..3 * Seen::SLOTS {
            let t: http::uri::PathAndQuery =
                p.object_at("GET", &format!("{i}"), now).parse().unwrap();
            let got = accept(&v, &seen, &http::Method::GET, host, &t, now + round);
            assert_eq!(got.map(|u| u.to_string()), Some(format!("/b/{i}")));
        }
    }
    assert_eq!(seen.slots.len(), Seen::SLOTS);
}
