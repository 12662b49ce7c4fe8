//! An operation of a timeline.

/// One operation: its events' names and times (ns from its first event).
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub events: Vec<(String, f64)>,
}
