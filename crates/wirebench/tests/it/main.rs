//! The CLI's integration tests: one test binary (it links once). Every test
//! uses loopback only, bounds each wait, and stops every process it starts
//! by its PID.

mod agent_attacks;
mod agents;
mod answers;
mod bounded;
mod cli_errors;
mod endpoints;
mod exec;
mod faults;
mod fixtures;
mod grpc;
mod hardening;
mod helpers;
mod history;
mod http;
mod kv;
mod layers;
mod live;
mod metrics;
mod modes;
mod never_lost;
mod observe;
mod openloop;
mod peer_text;
mod readme;
mod report;
mod reports;
mod results;
mod s3;
mod s3_fake;
mod s3_upload;
mod shm;
mod sweep;
mod tcp_echo;
mod trust;
mod udp_echo;
mod whole_machine;
