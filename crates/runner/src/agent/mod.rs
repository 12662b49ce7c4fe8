//! Load agents: `wirebench agent` ([`daemon`]) makes its part of runs that
//! a coordinator ([`coordinator`]: `run --agents`) splits among several
//! hosts, starts at one instant and merges exactly. [`wire`] is their
//! protocol (the token and the build check are [`crate::auth`]'s), [`policy`] what a part may do, [`clock`] the offset
//! of each agent's clock, [`launch`] agents started over ssh, [`k8s`] the
//! manifests of agents as a Kubernetes Indexed Job. docs/design/why-agents.md tells why each is so.

pub mod clock;
pub mod coordinator;
pub mod daemon;
pub mod k8s;
pub mod launch;
mod merge;
pub mod policy;
pub mod wire;
