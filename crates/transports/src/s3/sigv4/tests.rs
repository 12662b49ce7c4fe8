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
        let bucket = Bucket::new(endpoint.parse().unwrap(), style, "bench", "eu-west-1").unwrap();
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

/// A target taken again from its slot is the one signing would make:
/// with more keys than slots (so slots are taken over), each request
/// of a second, asked twice, is what a fresh signature gives, and the
/// next second's is signed anew.
#[test]
fn a_target_taken_again_is_the_one_signing_makes() {
    let p = Presigner::new("AK", "secret", "us-east-1", "h:1", "/b/", 3600);
    let keys: Vec<String> = (0..RECENT_SLOTS as u64 * 3)
        .map(|i| format!("k{i:010}"))
        .collect();
    for second in [1_795_478_399i64, 1_795_478_400] {
        for _ in 0..2 {
            for (i, key) in keys.iter().enumerate() {
                let method = ["GET", "PUT", "HEAD"][i % 3];
                assert_eq!(
                    p.object_at(method, key, second),
                    p.sign_at(method, key, second),
                    "{method} {key} at {second}"
                );
            }
        }
    }
    let (a, b) = (
        p.object_at("GET", &keys[0], 1_795_478_400),
        p.object_at("GET", &keys[0], 1_795_478_401),
    );
    assert_ne!(a, b, "another second, another date and signature");
    assert_ne!(
        p.object_at("GET", &keys[0], 1_795_478_401),
        p.object_at("HEAD", &keys[0], 1_795_478_401)
    );
}

#[test]
fn stamps_read_back_to_their_second() {
    for second in [
        0i64,
        1_369_353_600,
        1_795_478_399,
        1_795_500_001,
        951_782_400,
    ] {
        let p = Presigner::new("k", "s", "r", "h", "/", 1);
        let stamp = p.day(second).stamp.clone();
        assert_eq!(stamp_seconds(&stamp), Some(second), "{stamp}");
    }
    assert_eq!(stamp_seconds("20261324T000000Z"), None);
    assert_eq!(stamp_seconds("20261124 000000Z"), None);
}

/// The verifier takes what our presigner and rusty-s3 sign (objects,
/// lists, multipart parts), gives back the target without the
/// signature, and refuses any change to what was signed.
#[test]
fn the_verifier_takes_valid_signatures_and_nothing_else() {
    let creds = Credentials::new(
        "AKIDEXAMPLE/x+y",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    );
    let host = "127.0.0.1:9000";
    let bucket = Bucket::new(
        "http://127.0.0.1:9000/".parse().unwrap(),
        UrlStyle::Path,
        "bench",
        "eu-west-1",
    )
    .unwrap();
    let p = Presigner::new(
        creds.key(),
        creds.secret(),
        "eu-west-1",
        host,
        "/bench/",
        3600,
    );
    let v = Verifier::new(creds.key(), creds.secret());
    let now = 1_795_478_400i64;
    let split = |t: &str| -> (String, String) {
        let (a, b) = t.split_once('?').unwrap();
        (a.to_string(), b.to_string())
    };
    for key in ["wirebench/18f-7/42", "a b/c+d%e~f", "ümlaut/x?y#z"] {
        for method in ["GET", "PUT", "HEAD", "DELETE"] {
            let (path, query) = split(&p.object_at(method, key, now));
            let plain = v.check(method, &path, &query, host, now + 10);
            assert_eq!(plain.as_deref(), Some(path.as_str()), "{method} {key}");
            // Anything signed, changed: not taken.
            assert!(v.check("POST", &path, &query, host, now).is_none());
            assert!(
                v.check(method, &format!("{path}x"), &query, host, now)
                    .is_none()
            );
            assert!(
                v.check(method, &path, &query, "127.0.0.1:9001", now)
                    .is_none()
            );
            assert!(
                v.check(method, &path, &query.replace("host", "host%3Bx"), host, now)
                    .is_none()
            );
            // Expired, or signed too far in the future.
            assert!(v.check(method, &path, &query, host, now + 3601).is_none());
            assert!(v.check(method, &path, &query, host, now - 901).is_none());
            let last = query.pop_last_hex();
            assert!(v.check(method, &path, &last, host, now).is_none());
        }
    }
    let other = Verifier::new(creds.key(), "another secret");
    let (path, query) = split(&p.object_at("GET", "k", now));
    assert!(other.check("GET", &path, &query, host, now).is_none());
    let stranger = Verifier::new("AKIDOTHER", creds.secret());
    assert!(stranger.check("GET", &path, &query, host, now).is_none());
    // rusty-s3's other requests, with parameters of their own that stay.
    let t = jiff_free_time(now);
    let mut list = bucket.list_objects_v2(Some(&creds));
    list.with_prefix("wb/");
    let url = list.sign_with_time(Duration::from_secs(600), &t);
    let query = url.query().unwrap().to_string();
    let left = v
        .check("GET", url.path(), &query, host, now)
        .expect("a valid list");
    assert!(
        left.starts_with("/bench/?")
            && left.contains("list-type=2")
            && left.contains("prefix=wb%2F"),
        "{left}"
    );
    assert!(!left.contains("X-Amz"), "{left}");
    let part = bucket
        .upload_part(Some(&creds), "big", 3, "upload-1")
        .sign_with_time(Duration::from_secs(600), &t);
    let left = v
        .check("PUT", part.path(), part.query().unwrap(), host, now)
        .expect("a valid part");
    assert!(
        left.contains("partNumber=3") && left.contains("uploadId=upload-1"),
        "{left}"
    );
    // Not presigned at all: not for the fast path.
    assert!(v.check("GET", "/bench/k", "", host, now).is_none());
    assert!(
        v.check("GET", "/bench/k", "list-type=2", host, now)
            .is_none()
    );
}

/// URLs presigned by the AWS SDK for Python (boto3 1.44.5, signature
/// version s3v4), as it made them: taken at their time, with the
/// parameters of their own left in the target.
#[test]
fn the_verifier_takes_the_aws_sdks_presigned_urls() {
    let v = Verifier::new("AKSDK", "sdk-secret");
    let host = "127.0.0.1:9000";
    let at = stamp_seconds("20261124T040321Z").unwrap();
    let get = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKSDK%2F20261124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261124T040321Z&X-Amz-Expires=600&X-Amz-SignedHeaders=host&X-Amz-Signature=08cad1f4c69cf0d20c95f536fcf9bd18e525f35ac08ec6e4dd66f0d84b34cb35";
    assert_eq!(
        v.check("GET", "/sdk/a/3%20x%2By", get, host, at + 1)
            .as_deref(),
        Some("/sdk/a/3%20x%2By")
    );
    let list = "list-type=2&prefix=a%2F&encoding-type=url&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKSDK%2F20261124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261124T040321Z&X-Amz-Expires=600&X-Amz-SignedHeaders=host&X-Amz-Signature=4cb4f97f6762ee2e48087dd3a424ae0becdd4b7685ca0ffedcef6544629b15bf";
    assert_eq!(
        v.check("GET", "/sdk", list, host, at + 599).as_deref(),
        Some("/sdk?list-type=2&prefix=a%2F&encoding-type=url")
    );
    assert!(
        v.check("GET", "/sdk", list, host, at + 601).is_none(),
        "expired"
    );
}

trait PopLastHex {
    fn pop_last_hex(&self) -> String;
}

impl PopLastHex for String {
    /// The same text with its last hex digit changed.
    fn pop_last_hex(&self) -> String {
        let mut s = self.clone();
        let c = s.pop().unwrap();
        s.push(if c == '0' { '1' } else { '0' });
        s
    }
}

fn jiff_free_time(second: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(second).unwrap()
}
