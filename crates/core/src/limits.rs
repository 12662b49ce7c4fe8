//! The limits of the transports' protocols that a run's checks need before
//! anything starts: the transports take their constants from here, so the
//! checks and the code they protect cannot drift apart.

/// msgr: the default largest frame payload a server accepts.
pub const MSGR_DEFAULT_MAX_FRAME: u64 = 16 << 20;

/// Servers (msgr, fake S3): connections served at once by default.
pub const SERVER_DEFAULT_MAX_CONNS: usize = 10_000;
/// Servers: a connection that makes no progress this long is closed (s).
pub const SERVER_DEFAULT_IDLE_TIMEOUT_S: u64 = 60;
/// The fake S3 server: a request's headers must arrive within this (s).
pub const S3_HEADER_TIMEOUT_S: u64 = 10;

/// shm: the prefix of every file and memfd the transport creates; the
/// owner's PID follows it.
pub const SHM_PREFIX: &str = "wirebench-shm-";
/// shm: the header of a record in a ring.
pub const SHM_RECORD_HEADER: u64 = 32;
/// shm: the largest ring, 1 GiB (two per session).
pub const SHM_MAX_RING: u64 = 1 << 30;
/// shm: the smallest ring.
pub const SHM_MIN_RING: u64 = 4096;
/// shm: the default ring, 1 MiB, or room for four messages of the size asked.
pub const SHM_DEFAULT_RING: u64 = 1 << 20;
/// shm over a descriptor channel (pipe, unix, tcp): the largest message.
pub const SHM_MAX_FD_MESSAGE: u64 = 64 << 20;

/// S3: the most objects a run may work on (the existence array is one byte each).
pub const S3_MAX_OBJECTS: u64 = 100_000_000;
/// S3's limit on the parts of one upload.
pub const S3_MAX_PARTS: u64 = 10_000;
/// S3's smallest part (all but the last).
pub const S3_MIN_PART: u64 = 5 << 20;

/// shm: bytes a record with `len` payload bytes takes in a ring.
pub fn shm_stride(len: u64) -> u64 {
    SHM_RECORD_HEADER + len.next_multiple_of(8)
}

/// shm: the ring a session of `size`-byte messages gets by default, or why
/// no ring can hold them.
pub fn shm_default_ring(size: u64) -> Result<u64, String> {
    let want = shm_stride(size)
        .saturating_mul(4)
        .checked_next_power_of_two()
        .unwrap_or(u64::MAX);
    let ring = want.max(SHM_DEFAULT_RING);
    if ring > SHM_MAX_RING {
        return Err(format!(
            "messages of {size} bytes do not fit the largest ring ({} MiB, four messages); use a smaller --size",
            SHM_MAX_RING >> 20
        ));
    }
    Ok(ring)
}

/// shm: checks a ring size against a message size.
pub fn shm_check_ring(ring: u64, size: u64) -> Result<(), String> {
    if !ring.is_power_of_two() || !(SHM_MIN_RING..=SHM_MAX_RING).contains(&ring) {
        return Err(format!(
            "ring of {ring} bytes: must be a power of two between {SHM_MIN_RING} bytes and {} MiB",
            SHM_MAX_RING >> 20
        ));
    }
    let stride = shm_stride(size);
    if stride > ring {
        return Err(format!(
            "a message of {size} bytes takes {stride} bytes with its header, more than the ring ({ring} bytes); raise --ring-size or lower --size"
        ));
    }
    Ok(())
}

/// shm: the default place of a server's control socket.
pub fn shm_default_socket_path(pid: u32) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("{SHM_PREFIX}{pid}.sock"))
}

// The limits of a run's request.

/// The most client workers of a run.
pub const MAX_CLIENTS: usize = 4096;
/// The most connections of a run.
pub const MAX_CONNECTIONS: usize = 65_536;
/// The most endpoints of a run without agents (`--target A,B,...`): each
/// worker keeps a histogram per endpoint its connections reach.
pub const MAX_ENDPOINTS: usize = 256;
/// The most requests outstanding on one connection.
pub const MAX_DEPTH: usize = 1 << 20;
/// Far above what one connection does on loopback (~100k/s): a typo, not a plan.
pub const MAX_RATE_PER_CONN: f64 = 10e6;
/// The most repetitions of one run.
pub const MAX_REPEAT: usize = 1000;
/// The longest warm-up or measured phase: a month is a typo, not a plan.
pub const MAX_PHASE: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);
/// A measured second with a platform stall longer than this is flagged.
pub const DEFAULT_HICCUP_THRESHOLD: std::time::Duration = std::time::Duration::from_millis(10);
/// How long a connection may wait for an operation before the run fails.
pub const DEFAULT_OP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The bucket of the embedded fake S3 server.
pub const DEFAULT_BUCKET: &str = "wirebench";
/// The most keys a key-value run works on (a prepare phase writes them all
/// for reads).
pub const MAX_KV_KEYS: u64 = 100_000_000;
