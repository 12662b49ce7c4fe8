//! S3's driver: per endpoint its workload, prepared objects and cleanup.

use crate::driving::{load_calls, runtime, sum_phases, unless_cancelled};
use crate::s3;
use std::path::Path;
use std::sync::Arc;
use wirebench_core::result::PhaseReport;
use wirebench_core::spec::{Endpoint, RunSpec, S3Spec};
use wirebench_load::driver::{Cancel, Credentials, Driver, Notes, OpenError, Opening};
use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};

/// A workload per endpoint, each checked and prepared; on a failure the
/// objects made in the endpoints opened are deleted.
pub(crate) fn open(at: &mut Opening<'_>, s3spec: &S3Spec) -> Result<Box<dyn Driver>, OpenError> {
    let mut all = S3Drivers(vec![]);
    for e in at.endpoints.clone() {
        match S3Driver::open(
            at.spec,
            s3spec,
            e,
            Access {
                credentials: at.credentials.clone(),
                create_bucket: at.create_bucket,
                ca_file: at.ca_file,
            },
            at.cancel,
            at.notes,
        ) {
            Ok(d) => all.0.push(d),
            Err(err) => {
                all.close(at.notes);
                return Err(err);
            }
        }
    }
    Ok(Box::new(all))
}

/// How a driver reaches its bucket.
struct Access<'a> {
    credentials: Option<Credentials>,
    create_bucket: bool,
    ca_file: Option<&'a Path>,
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
        access: Access<'_>,
        cancel: &Cancel,
        notes: &mut dyn Notes,
    ) -> Result<S3Driver, OpenError> {
        let Endpoint::S3 { addr, bucket, tls } = endpoint else {
            return Err(OpenError::Failed(format!("{endpoint}: not an S3 endpoint")));
        };
        let creds = access
            .credentials
            .map(|c| rusty_s3::Credentials::new(c.access_key, c.secret_key));
        let tls = tls.then_some(access.ca_file);
        let client =
            s3::client::S3Client::new(addr, bucket, s3spec.style, &s3spec.region, creds, tls)
                .map_err(OpenError::Failed)?
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
            s3::preflight(&workload.client, access.create_bucket),
        ) {
            None => {
                return Err(OpenError::Interrupted(format!(
                    "checking {endpoint}: {}",
                    cancel.reason().unwrap_or("cancelled")
                )));
            }
            Some(r) => r.map_err(|e| OpenError::Failed(format!("checking {endpoint}: {e}")))?,
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
            notes.note(&format!(
                "prepare: creating {} objects of {} in {endpoint}, keys {}* ...",
                s3spec.objects, s3spec.sizes, s3spec.prefix
            ));
            match unless_cancelled(&rt, cancel, s3::prepare(&driver.workload, concurrency)) {
                None => {
                    let made = driver.workload.existing();
                    notes.note(&format!(
                        "prepare: interrupted ({}) after creating {made} objects",
                        cancel.reason().unwrap_or("cancelled")
                    ));
                    driver.close(notes);
                    return Err(OpenError::Interrupted(format!(
                        "interrupted during prepare; the {made} objects created are deleted"
                    )));
                }
                Some(Ok(p)) => {
                    notes.note(&format!(
                        "prepare: {} objects, {} in {:.2} s",
                        p.objects,
                        wirebench_core::units::format_size(p.bytes),
                        p.seconds
                    ));
                    driver.prepare = Some(p);
                }
                Some(Err(e)) => {
                    // What was created is deleted before the error is told.
                    driver.close(notes);
                    return Err(OpenError::Failed(e));
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

    fn close(&mut self, notes: &mut dyn Notes) -> Option<PhaseReport> {
        self.0
            .iter_mut()
            .fold(None, |all, d| sum_phases(all, d.close(notes)))
    }
}

impl S3Driver {
    /// Deletes the objects the run created (unless kept), once.
    fn close(&mut self, notes: &mut dyn Notes) -> Option<PhaseReport> {
        if self.closed || self.workload.spec.keep {
            return None;
        }
        self.closed = true;
        let n = self.workload.existing();
        if n > 0 {
            notes.note(&format!(
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
            notes.note(&format!(
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
            notes.note(&format!(
                "cleanup: {} objects could not be deleted (prefix {})",
                c.errors, self.workload.spec.prefix
            ));
        }
        Some(c)
    }
}
