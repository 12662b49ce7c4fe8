//! The opening every command that measures shares (`run`, `flame`,
//! `search`, a coordinated run): the request checked (refused before
//! anything starts), its outputs prepared and its recorder made; then the
//! session (the server started or reached, the driver opened), the spec
//! resolved to the endpoint found and the placement completed with an
//! observed server's cpuset. Each command adds only its own steps.

use crate::RunError;
use crate::events::RunEvents;
use crate::process::Cancel;
use crate::record::Recorder;
use crate::session::{Session, SessionOptions};
use std::path::PathBuf;
use wirebench_core::request::RunRequest;
use wirebench_core::result::Placement;
use wirebench_core::spec::RunSpec;
use wirebench_core::topo::Topology;

/// A request checked, with where its results go.
#[derive(Debug)]
pub struct Checked {
    pub spec: RunSpec,
    pub placement: Placement,
    pub recorder: Recorder,
}

impl Checked {
    /// `req` checked on `topo`, its outputs prepared, its results kept in
    /// `dir` (None: the request's results directory). `alone` names a
    /// command that makes its load on this host (agents refused).
    pub fn of(
        req: &RunRequest,
        topo: &Topology,
        dir: Option<PathBuf>,
        command_line: Vec<String>,
        alone: Option<&str>,
    ) -> Result<Checked, RunError> {
        let (spec, placement) = req.check(topo)?;
        if let Some(command) = alone {
            req.no_agents(command)?;
        }
        req.prepare_outputs()?;
        let dir = dir.unwrap_or_else(|| req.output.results_dir());
        let mut recorder = Recorder::new(dir, command_line, req.slos()?);
        recorder.upload = req.output.upload.clone().map(|url| crate::record::Upload {
            url,
            base: req.output.results_dir(),
            ca_file: req.ca_file.clone(),
        });
        Ok(Checked {
            spec,
            placement,
            recorder,
        })
    }

    /// Opens the session of the spec (a server it starts writes into
    /// `server_dir`), takes what it found and says that the run started.
    pub fn open(
        &mut self,
        opts: &SessionOptions,
        server_dir: Option<PathBuf>,
        cancel: Cancel,
        events: &mut dyn RunEvents,
    ) -> Result<Session, RunError> {
        let mut opts = opts.clone();
        if server_dir.is_some() {
            opts.server_dir = server_dir;
        }
        let session = Session::open(&self.spec, &opts, cancel, events)?;
        self.adopt(&session);
        events.started(
            &self.spec,
            &self.placement,
            session.endpoint(),
            session.server_pid(),
        );
        Ok(session)
    }

    /// What the session found: the endpoint (a port chosen, a name
    /// resolved) and an observed server's cpuset when none was given.
    pub fn adopt(&mut self, session: &Session) {
        session.resolve(&mut self.spec);
        if self.placement.server_cpus.is_none() {
            self.placement.server_cpus = session.observed_cpuset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Driver;
    use crate::target::{Stopped, Target};
    use std::sync::Arc;
    use std::time::Duration;
    use wirebench_core::result::RunState;
    use wirebench_core::spec::{Endpoint, TargetSpec};
    use wirebench_core::topo::CpuList;
    use wirebench_load::engine::{LoadConfig, LoadOutcome, Observer};
    use wirebench_load::mock::MockTransport;
    use wirebench_load::transport::Pattern;

    /// An external server found at another port than the one asked, on
    /// CPUs 1 (what an observed server's affinity gives).
    struct Found(Endpoint);

    impl Target for Found {
        fn endpoint(&self) -> &Endpoint {
            &self.0
        }
        fn server_pid(&self) -> Option<u32> {
            Some(4242)
        }
        fn cpuset(&self) -> Option<Vec<usize>> {
            Some(vec![1])
        }
        fn exited(&mut self, _: Duration) -> Option<String> {
            None
        }
        fn stop(&mut self) -> Option<Stopped> {
            None
        }
    }

    /// The mock transport on the real engine.
    struct Mock(Arc<MockTransport>);

    impl Driver for Mock {
        fn drive(&mut self, _: &RunSpec, cfg: &LoadConfig, obs: &mut dyn Observer) -> LoadOutcome {
            wirebench_load::engine::run_load(self.0.clone(), cfg, obs)
        }
    }

    struct Quiet;
    impl crate::events::Events for Quiet {}

    fn request(json: &str) -> RunRequest {
        serde_json::from_str(json).unwrap()
    }

    /// The skeleton's steps without a server: checked (outputs prepared,
    /// the recorder where asked), then what a session found adopted, then
    /// a load measured on it.
    #[test]
    fn a_checked_request_adopts_what_its_session_found_and_measures() {
        let dir = std::env::temp_dir().join(format!("wb-command-{}", std::process::id()));
        let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
        let req = request(&format!(
            r#"{{"target": "tcp://127.0.0.1:7", "client_cpus": "0", "duration": "300ms", "warmup": "0s", "results": "{}"}}"#,
            dir.display()
        ));
        let mut checked = Checked::of(&req, &topo, None, vec!["wirebench".into()], None).unwrap();
        assert!(
            dir.is_dir(),
            "the results directory is made before anything runs"
        );
        assert_eq!(checked.recorder.root, dir);
        assert_eq!(checked.placement.server_cpus, None);
        let found = Endpoint::Tcp("127.0.0.1:7001".into());
        let transport = Arc::new(MockTransport::new(
            Pattern::RequestResponse,
            Duration::from_micros(50),
        ));
        let mut session = Session::with(
            Box::new(Found(found.clone())),
            Box::new(Mock(transport)),
            Cancel::new(),
        );
        checked.adopt(&session);
        assert_eq!(
            checked.spec.target,
            TargetSpec::External { endpoint: found }
        );
        assert_eq!(
            checked
                .placement
                .server_cpus
                .as_ref()
                .map(|c| c.to_string()),
            Some("1".into())
        );
        let mut events = Quiet;
        let r = session.measure(&checked.spec, &checked.placement, &mut events);
        assert_eq!(r.status.state, RunState::Complete, "{:?}", r.status);
        assert!(r.summary.ops > 0);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_command_that_loads_from_here_refuses_agents_by_name() {
        let topo = Topology::with_cpus(CpuList::parse("0-1").unwrap());
        let req = request(r#"{"target": "tcp://127.0.0.1:7", "agents": ["10.0.0.2:7460"]}"#);
        let e = Checked::of(&req, &topo, None, vec![], Some("flame")).unwrap_err();
        assert!(
            e.to_string()
                .contains("`flame` makes its load on this host"),
            "{e}"
        );
    }
}
