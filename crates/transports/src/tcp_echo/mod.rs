//! tcp-echo: any TCP echo server, measured with the messenger client in
//! its raw request/response mode (the answer is the request's own bytes).

pub(crate) mod driver;
