//! S3's driver: per endpoint its workload, prepared objects and cleanup.

use super::*;
use wirebench_transports::s3;

/// A workload per endpoint, each checked and prepared; on a failure the
/// objects made in the endpoints opened are deleted.
pub(super) fn open(at: &mut Opening<'_>, s3spec: &S3Spec) -> Result<Box<dyn Driver>, RunError> {
    let mut all = S3Drivers(vec![]);
    for e in at.endpoints.clone() {
        match S3Driver::open(
            at.spec,
            s3spec,
            e,
            at.opts,
            at.credentials.clone(),
            at.cancel,
            at.events,
        ) {
            Ok(d) => all.0.push(d),
            Err(err) => {
                all.close(at.events);
                return Err(err);
            }
        }
    }
    Ok(Box::new(all))
}

/// Concurrent requests of the S3 prepare and cleanup phases (at most).
const S3_PHASE_CONCURRENCY: usize = 32;

/// An S3 run's workload, and what its prepare phase did.
struct S3Driver {
    endpoint: Endpoint,
    workload: Arc<s3::Workload>,
    prepare: Option<PhaseReport>,
    concurrency: usize,
    closed: bool,
    /// A second signal stops the cleanup too.
    cancel: Cancel,
}

impl S3Driver {
    fn open(
        spec: &RunSpec,
        s3spec: &wirebench_core::spec::S3Spec,
        endpoint: &Endpoint,
        opts: &SessionOptions,
        credentials: Option<Credentials>,
        cancel: &Cancel,
        events: &mut dyn Events,
    ) -> Result<S3Driver, RunError> {
        let Endpoint::S3 { addr, bucket, tls } = endpoint else {
            return Err(RunError::Failed(format!("{endpoint}: not an S3 endpoint")));
        };
        let creds = credentials.map(|c| rusty_s3::Credentials::new(c.access_key, c.secret_key));
        let tls = tls.then_some(opts.ca_file.as_deref());
        let client =
            s3::client::S3Client::new(addr, bucket, s3spec.style, &s3spec.region, creds, tls)
                .map_err(RunError::Failed)?
                .with_sign(s3spec.sign);
        let workload = Arc::new(s3::Workload::new(
            client,
            s3spec.clone(),
            spec.verify,
            spec.clients as u64,
            spec.conns_per_client as u64,
        ));
        let concurrency = spec.connections().clamp(1, S3_PHASE_CONCURRENCY);
        let rt = runtime()?;
        match unless_cancelled(
            &rt,
            cancel,
            s3::preflight(&workload.client, opts.create_bucket),
        ) {
            None => {
                return Err(RunError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(r) => r.map_err(|e| RunError::Failed(format!("checking {endpoint}: {e}")))?,
        }
        let mut driver = S3Driver {
            endpoint: endpoint.clone(),
            workload,
            prepare: None,
            concurrency,
            closed: false,
            cancel: cancel.clone(),
        };
        if driver.workload.needs_prepare() {
            events.note(&format!(
                "prepare: creating {} objects of {} in {endpoint}, keys {}* ...",
                s3spec.objects, s3spec.sizes, s3spec.prefix
            ));
            match unless_cancelled(&rt, cancel, s3::prepare(&driver.workload, concurrency)) {
                None => {
                    let made = driver.workload.existing();
                    events.note(&format!(
                        "prepare: interrupted ({}) after creating {made} objects",
                        cancel.reason().unwrap_or("cancelled")
                    ));
                    driver.close(events);
                    return Err(RunError::Interrupted(format!(
                        "interrupted during prepare; the {made} objects created are deleted"
                    )));
                }
                Some(Ok(p)) => {
                    events.note(&format!(
                        "prepare: {} objects, {} in {:.2} s",
                        p.objects,
                        wirebench_core::units::format_size(p.bytes),
                        p.seconds
                    ));
                    driver.prepare = Some(p);
                }
                Some(Err(e)) => {
                    // What was created is deleted before the error is told.
                    driver.close(events);
                    return Err(RunError::Failed(e));
                }
            }
        }
        Ok(driver)
    }
}

/// S3: one driver per endpoint, each with its objects.
struct S3Drivers(Vec<S3Driver>);

impl Driver for S3Drivers {
    fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
        let mut cfg = cfg.clone();
        // DELETE takes each object once: connections run out of work.
        cfg.finite_work =
            self.0[0].workload.spec.workload == wirebench_core::spec::S3Workload::Delete;
        let each = self
            .0
            .iter()
            .map(|d| s3::S3Transport(d.workload.clone()))
            .collect();
        load_calls(each, 1, &cfg, obs)
    }

    fn take_prepare(&mut self) -> Option<PhaseReport> {
        self.0
            .iter_mut()
            .fold(None, |all, d| sum_phases(all, d.prepare.take()))
    }

    fn close(&mut self, events: &mut dyn Events) -> Option<PhaseReport> {
        self.0
            .iter_mut()
            .fold(None, |all, d| sum_phases(all, d.close(events)))
    }
}

impl S3Driver {
    /// Deletes the objects the run created (unless kept), once.
    fn close(&mut self, events: &mut dyn Events) -> Option<PhaseReport> {
        if self.closed || self.workload.spec.keep {
            return None;
        }
        self.closed = true;
        let n = self.workload.existing();
        if n > 0 {
            events.note(&format!(
                "cleanup: deleting the {n} objects this run created in {} ...",
                self.endpoint
            ));
        }
        let rt = runtime().ok()?;
        // A second Ctrl-C stops the cleanup: it then says what it left.
        let c = rt.block_on(async {
            tokio::select! {
                c = s3::cleanup(&self.workload, self.concurrency) => Some(c),
                _ = self.cancel.cancelled(true) => None,
            }
        });
        let Some(c) = c else {
            let left = self.workload.existing();
            events.note(&format!(
                "cleanup: stopped by a second signal; {left} objects left under {}{}",
                self.workload.spec.prefix,
                if left > 0 { " (delete them by hand, or run again with the same --objects and --workload delete)" } else { "" }
            ));
            return Some(PhaseReport {
                objects: 0,
                bytes: 0,
                seconds: 0.0,
                errors: left,
            });
        };
        if c.errors > 0 {
            events.note(&format!(
                "cleanup: {} objects could not be deleted (prefix {})",
                c.errors, self.workload.spec.prefix
            ));
        }
        Some(c)
    }
}
