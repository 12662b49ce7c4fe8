//! What a reply of either key-value protocol said, and why one is refused.

use std::io;

/// What a reply said, whatever the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer<'a> {
    /// A status (`+OK`, `STORED`, `HD`) or a value of no interest.
    Done,
    Value(&'a [u8]),
    /// No such key (a null bulk, `END`, `EN`, `NOT_FOUND`).
    Miss,
    Int(i64),
    /// The server's error, as a failure cause.
    Failed(String),
    /// Not a reply to a command (a RESP3 push message, an attribute).
    Skip,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("protocol error: {0}")]
    Protocol(String),
}

impl From<ReplyError> for io::Error {
    fn from(e: ReplyError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e.to_string())
    }
}
