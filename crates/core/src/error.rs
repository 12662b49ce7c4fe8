//! Why a request cannot run: [`SpecError`], which names the flag (or spec
//! key: the same name), the value, and what to do. Every check of a request
//! (the request's own, each transport's) makes its errors here.

use crate::kind::TransportKind;

/// Why a request cannot run. Each names the flag (or spec key: the same
/// name), the value, and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A value outside its range.
    #[error("{flag} {value}: must be between {min} and {max}")]
    Range {
        flag: &'static str,
        value: String,
        min: String,
        max: String,
    },
    /// A flag of another transport.
    #[error("{flag} applies to --transport {transport} only")]
    OtherTransport {
        flag: &'static str,
        transport: TransportKind,
    },
    /// A value that cannot be used, and what to do instead.
    #[error("{flag} {value}: {fix}")]
    Value {
        flag: &'static str,
        value: String,
        fix: String,
    },
    /// A flag that does not go with the others, and why.
    #[error("{flag} {why}")]
    Flag { flag: &'static str, why: String },
    /// A flag whose value is wrong, and why.
    #[error("{flag}: {why}")]
    Invalid { flag: &'static str, why: String },
}

impl SpecError {
    /// The flag (`--depth`) the error is about.
    pub fn flag(&self) -> &'static str {
        match self {
            SpecError::Range { flag, .. }
            | SpecError::OtherTransport { flag, .. }
            | SpecError::Value { flag, .. }
            | SpecError::Flag { flag, .. }
            | SpecError::Invalid { flag, .. } => flag,
        }
    }
}

pub(crate) fn range(
    flag: &'static str,
    value: impl ToString,
    min: impl ToString,
    max: impl ToString,
) -> SpecError {
    SpecError::Range {
        flag,
        value: value.to_string(),
        min: min.to_string(),
        max: max.to_string(),
    }
}

pub(crate) fn value(flag: &'static str, v: impl ToString, fix: impl Into<String>) -> SpecError {
    SpecError::Value {
        flag,
        value: v.to_string(),
        fix: fix.into(),
    }
}

pub(crate) fn flag(flag: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Flag {
        flag,
        why: why.into(),
    }
}

pub(crate) fn invalid(flag: &'static str, why: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        flag,
        why: why.into(),
    }
}
