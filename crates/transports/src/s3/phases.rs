//! The phases around an S3 run's load: the preflight (the endpoint, the
//! credentials, the bucket), the objects reads need, and their cleanup.

use super::*;

/// Runs `each(conn, i)` for i in `items`, `concurrency` at once, each
/// worker on its own connection; returns the first broken connection.
pub(super) async fn for_all<F, Fut>(
    w: &Arc<Workload>,
    items: Vec<u64>,
    concurrency: usize,
    each: F,
) -> io::Result<()>
where
    F: Fn(S3Conn, u64) -> Fut + Clone + 'static,
    Fut: std::future::Future<Output = (S3Conn, io::Result<()>)> + 'static,
{
    let items = Arc::new(items);
    let cursor = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    let local = tokio::task::LocalSet::new();
    for k in 0..concurrency.max(1).min(items.len().max(1)) {
        let conn = S3Transport(w.clone()).connect(usize::MAX >> 1, k).await?;
        let (items, cursor, each) = (items.clone(), cursor.clone(), each.clone());
        tasks.push(local.spawn_local(async move {
            let mut conn = conn;
            loop {
                let j = cursor.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&i) = items.get(j) else {
                    return io::Result::Ok(());
                };
                let (c, r) = each(conn, i).await;
                conn = c;
                r?;
            }
        }));
    }
    local
        .run_until(async {
            for t in tasks {
                t.await.map_err(io::Error::other)??;
            }
            Ok(())
        })
        .await
}

/// Checks the endpoint, the credentials and the bucket with one request
/// (creating the bucket if asked): one clear message instead of thousands
/// of failed operations.
pub async fn preflight(c: &S3Client, create: bool) -> Result<(), String> {
    let mut conn = c.connect().await.map_err(|e| {
        let hint = if e.to_string().contains("UnknownIssuer") {
            " (for a private CA or a self-signed endpoint, add --ca-file PEM)"
        } else {
            ""
        };
        format!("cannot reach the S3 endpoint {}: {e}{hint}", c.addr)
    })?;
    let broken = |e: io::Error| format!("the S3 endpoint {} broke the connection: {e}", c.addr);
    let head = c
        .exec(
            &mut conn,
            rusty_s3::Method::Head,
            c.head_bucket_url(),
            &[],
            Payload::empty(),
            Sink::Discard,
        )
        .await
        .map_err(broken)?;
    let bucket = c.bucket.name();
    match head.status {
        200..=299 => Ok(()),
        404 if create => {
            let url = c
                .create_bucket_url()
                .unwrap_or_else(|| c.bucket.base_url().clone());
            let r = c
                .exec(
                    &mut conn,
                    rusty_s3::Method::Put,
                    url,
                    &[],
                    Payload::empty(),
                    Sink::Keep,
                )
                .await
                .map_err(broken)?;
            match r.failure {
                None => Ok(()),
                Some(f) => Err(format!("cannot create the bucket '{bucket}': {f}")),
            }
        }
        404 => Err(format!(
            "the bucket '{bucket}' does not exist at {}: create it, or add --create-bucket",
            c.addr
        )),
        status => {
            // HEAD answers have no body: a list tells the S3 error code.
            let r = c
                .exec(
                    &mut conn,
                    rusty_s3::Method::Get,
                    c.list_url("", 1),
                    &[],
                    Payload::empty(),
                    Sink::Keep,
                )
                .await
                .map_err(broken)?;
            let why = r.failure.unwrap_or_else(|| status.to_string());
            let hint = match (status, c.creds().is_some()) {
                (403, true) | (400, true) => {
                    ": check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or --access-key / --secret-key) and --region"
                }
                (403, false) | (400, false) => {
                    ": the endpoint wants signed requests; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --access-key / --secret-key)"
                }
                _ => "",
            };
            Err(format!(
                "the S3 endpoint {} refused access to the bucket '{bucket}': {why}{hint}",
                c.addr
            ))
        }
    }
}

/// Creates the objects the workload reads, `concurrency` at once. Fails on
/// the first failed upload (a workload on missing objects measures errors).
pub async fn prepare(w: &Arc<Workload>, concurrency: usize) -> Result<PhaseReport, String> {
    let t0 = Instant::now();
    let failed: Arc<std::sync::Mutex<Option<String>>> = Default::default();
    let f2 = failed.clone();
    let items: Vec<u64> = (0..w.spec.objects).collect();
    let r = for_all(w, items, concurrency, move |mut conn: S3Conn, i| {
        let failed = f2.clone();
        async move {
            let r = conn.put(i).await;
            let r = r.map(|o| {
                if let Some(f) = o.failure {
                    failed
                        .lock()
                        .expect("not poisoned")
                        .get_or_insert(format!("{}: {f}", conn.w.key(i)));
                }
            });
            (conn, r)
        }
    })
    .await;
    if let Err(e) = r {
        return Err(format!("preparing the objects: {e}"));
    }
    if let Some(f) = failed.lock().expect("not poisoned").take() {
        return Err(format!("preparing the objects: an upload failed: {f}"));
    }
    let bytes = (0..w.spec.objects).map(|i| w.spec.sizes.size_of(i)).sum();
    Ok(PhaseReport {
        objects: w.spec.objects,
        bytes,
        seconds: t0.elapsed().as_secs_f64(),
        errors: 0,
    })
}

/// Deletes every object the run knows to exist (those it created, minus
/// those its workload deleted).
pub async fn cleanup(w: &Arc<Workload>, concurrency: usize) -> PhaseReport {
    let t0 = Instant::now();
    let items: Vec<u64> = (0..w.spec.objects)
        .filter(|&i| w.exists[i as usize].load(Ordering::Relaxed))
        .collect();
    let n = items.len() as u64;
    let errors = Arc::new(AtomicU64::new(0));
    let e2 = errors.clone();
    let r = for_all(w, items, concurrency, move |mut conn: S3Conn, i| {
        let errors = e2.clone();
        async move {
            let r = conn.delete(i).await.map(|o| {
                if o.failure.is_some() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            });
            (conn, r)
        }
    })
    .await;
    let left = w.existing();
    if r.is_err() || left > 0 {
        errors.store(left.max(1), Ordering::Relaxed);
    }
    PhaseReport {
        objects: n,
        bytes: 0,
        seconds: t0.elapsed().as_secs_f64(),
        errors: errors.load(Ordering::Relaxed),
    }
}
