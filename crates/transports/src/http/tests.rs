use super::calls::{Link, call_once};
use super::*;

fn spec(version: HttpVersion, method: HttpMethod) -> HttpSpec {
    HttpSpec {
        method,
        version,
        body_bytes: if method.has_body() { 100 } else { 0 },
        headers: vec!["X-Bench: 1".into(), "Accept: */*".into()],
        churn: false,
        ca_file: None,
        keys: None,
        key_dist: KeyDist::Uniform,
    }
}

#[test]
fn a_request_carries_no_connection_opening_in_its_future() {
    // Each request's future is made anew, and moved (copied) as a whole:
    // opening a connection, a TLS handshake's state included, is boxed
    // out of it.
    let ep: Endpoint = "https://127.0.0.1:8443/x".parse().unwrap();
    let c = HttpClient::new(
        &ep,
        &spec(HttpVersion::H2, HttpMethod::Get),
        Duration::from_secs(1),
    )
    .unwrap();
    let (mut link, mut keys) = (Link::Churn, None);
    let request = call_once(&c, &mut link, &mut keys, None);
    let size = std::mem::size_of_val(&request);
    assert!(size <= 2048, "a request's future of {size} bytes");
}

#[test]
fn a_key_in_the_path_is_put_in_each_request() {
    let ep: Endpoint = "http://127.0.0.1:8080/o/{key}.bin?v=1".parse().unwrap();
    let mut sp = spec(HttpVersion::H1, HttpMethod::Get);
    sp.keys = Some(100);
    let c = HttpClient::new(&ep, &sp, Duration::from_secs(1)).unwrap();
    assert_eq!(c.request(Some(42)).uri(), "/o/42.bin?v=1");
    assert_eq!(c.request(None).uri(), "/o/0.bin?v=1");
    sp.version = HttpVersion::H2;
    let c = HttpClient::new(&ep, &sp, Duration::from_secs(1)).unwrap();
    assert_eq!(
        c.request(Some(7)).uri(),
        "http://127.0.0.1:8080/o/7.bin?v=1"
    );
}

#[test]
fn requests_carry_the_right_target_and_headers() {
    let ep: Endpoint = "http://127.0.0.1:8080/a/b?c=1".parse().unwrap();
    let c = HttpClient::new(
        &ep,
        &spec(HttpVersion::H1, HttpMethod::Post),
        Duration::from_secs(1),
    )
    .unwrap();
    let r = c.request(None);
    assert_eq!(r.uri(), "/a/b?c=1");
    assert_eq!(r.method(), Method::POST);
    assert_eq!(r.headers()[HOST], "127.0.0.1:8080");
    assert_eq!(r.headers()[CONTENT_LENGTH], "100");
    assert_eq!(r.headers()["x-bench"], "1");
    assert_eq!(r.headers()["accept"], "*/*");
    let c = HttpClient::new(
        &ep,
        &spec(HttpVersion::H2, HttpMethod::Get),
        Duration::from_secs(1),
    )
    .unwrap();
    let r = c.request(None);
    assert_eq!(r.uri(), "http://127.0.0.1:8080/a/b?c=1");
    assert!(r.headers().get(HOST).is_none(), "HTTP/2 says :authority");
    assert!(r.headers().get(CONTENT_LENGTH).is_none());
}
