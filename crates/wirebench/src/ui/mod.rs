//! What a person watching a run sees: progress lines, notes and results.

pub mod progress;
