//! tcp-echo: any TCP echo server, measured with the messenger client in
//! its raw request/response mode (the answer is the request's own bytes).

pub(crate) mod driver;

/// No embedded server: a run measures the real one (`--target`).
pub static SERVER: Option<crate::server::Server> = None;
