//! What a person sees: per-second progress lines and the final summary.

pub mod progress;
pub mod summary;
