//! What presigning an object request costs: wirebench's presigner against
//! rusty-s3's, the reference, in the same run (interleaved, 7 rounds,
//! medians). `cargo bench -p wirebench-transports --bench sigv4`.

use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::time::{Duration, Instant};
use wirebench_transports::s3::sigv4::Presigner;

const N: u64 = 100_000;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if cfg!(debug_assertions) {
        eprintln!("warning: a debug build: build benchmarks with `cargo bench` (release)");
    }
    let creds = Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    let endpoint = "http://127.0.0.1:9000/".parse().expect("a URL");
    let bucket = Bucket::new(endpoint, UrlStyle::Path, "bench", "us-east-1").expect("a bucket");
    let ours = Presigner::new(
        creds.key(),
        creds.secret(),
        "us-east-1",
        "127.0.0.1:9000",
        "/bench/",
        3600,
    );
    let keys: Vec<String> = (0..N)
        .map(|i| format!("wirebench/18f3a-4242/{i:010}"))
        .collect();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut sink = 0usize;
    for _ in 0..7 {
        let t = Instant::now();
        for k in &keys {
            sink += ours.object("GET", k).len();
        }
        a.push(t.elapsed().as_nanos() as f64 / N as f64);
        let t = Instant::now();
        for k in &keys {
            sink += bucket
                .get_object(Some(&creds), k)
                .sign(Duration::from_secs(3600))
                .as_str()
                .len();
        }
        b.push(t.elapsed().as_nanos() as f64 / N as f64);
    }
    let (ours, theirs) = (median(a), median(b));
    println!(
        "presign a GET: wirebench {ours:.0} ns, rusty-s3 {theirs:.0} ns; ratio {:.2} ({sink} bytes)",
        ours / theirs
    );
}
