//! What a shm client and server say on the control socket ([`Hello`],
//! [`Welcome`]), the protocol's version, and the limits and names both
//! sides share.

use serde::{Deserialize, Serialize};
use wirebench_core::spec::{Channel, ShmMode as Mode, Wait};

pub const PROTOCOL_VERSION: u32 = 1;

pub use wirebench_core::limits::{
    SHM_DEFAULT_RING as DEFAULT_RING, SHM_MAX_RING as MAX_RING, SHM_MIN_RING as MIN_RING,
    SHM_PREFIX as PREFIX, shm_check_ring as check_ring, shm_default_ring as default_ring,
    shm_default_socket_path as default_socket_path,
};

/// A client's request for a session, one JSON line on the control socket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub version: u32,
    pub channel: Channel,
    pub mode: Mode,
    /// Payload bytes of every message.
    pub size: u64,
    pub ring: u64,
    pub wait: Wait,
    pub verify: bool,
}

/// The server's answer, sent with the session's descriptors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub session: u64,
    #[serde(default)]
    pub server_pid: u32,
}

/// Fills `buf` with the pattern of message `seq` (when verifying).
pub use crate::msgr::frame::{check_pattern, fill_pattern};
