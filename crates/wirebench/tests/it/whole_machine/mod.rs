//! The tests that need the machine to themselves (`exclusive()`): most
//! assert a timing (a rate, a latency, a share of CPU) that a neighbour
//! would change; the others load the whole machine (sweeps with placement,
//! ten thousand connections). Their module sorts after every other so
//! that libtest starts them last: the other tests run side by side first,
//! and the lock never leaves threads idle, waiting for a neighbour to end,
//! in the middle of the run.

mod agents;
mod answers;
mod exec;
mod hardening;
mod history;
mod http;
mod modes;
mod observe;
mod openloop;
mod report;
mod s3;
mod sweep;
mod trust;
