//! The time sinks of a shape: where its operations spend their time, an
//! event's repeats summed (the RAMCloud report's "3 x ~300ns").

use super::stats::{EventStats, format_tenths};

/// How many time sinks are named.
pub const SINKS: usize = 5;

/// A time sink: an event (by name: every time it occurs in the operation,
/// as the RAMCloud report's "3 x ~300ns") and the time spent reaching it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sink {
    pub name: String,
    /// Its places in the shape (event numbers, the first is 0).
    pub events: Vec<usize>,
    /// The sum of its mean deltas (time since the previous event).
    pub total: f64,
    /// That sum's share of the mean operation's length.
    pub share: f64,
}

/// The time sinks of a shape: its events by name, each occurrence's mean
/// delta (time since the previous event) summed, most first.
pub fn time_sinks(events: &[EventStats]) -> Vec<Sink> {
    let whole = events.last().map_or(0.0, |e| e.cumulative.mean);
    let mut by: Vec<Sink> = Vec::new();
    for (k, e) in events.iter().enumerate().skip(1) {
        match by.iter_mut().find(|s| s.name == e.name) {
            Some(s) => {
                s.events.push(k);
                s.total += e.delta.mean;
            }
            None => by.push(Sink {
                name: e.name.clone(),
                events: vec![k],
                total: e.delta.mean,
                share: 0.0,
            }),
        }
    }
    for s in &mut by {
        s.share = if whole > 0.0 { s.total / whole } else { 0.0 };
    }
    by.sort_by(|a, b| b.total.total_cmp(&a.total));
    by.truncate(SINKS);
    // A sink is at least half a percent of the operation.
    by.retain(|s| s.share >= 0.005);
    by
}

/// The time sinks as lines to read: `2. Acquired Dispatch::Lock (events 4,
/// 17, 30): 3 x ~306.2 ns = 918.7 ns, 8% of the operation`.
pub fn sinks_text(events: &[EventStats]) -> String {
    let mut out = String::from(
        "Time sinks (the largest mean deltas, an event's repeats summed, marked on their CDFs):\n",
    );
    for (i, s) in time_sinks(events).iter().enumerate() {
        let places = s.events.iter().map(|k| k.to_string()).collect::<Vec<_>>();
        let cost = match s.events.len() {
            1 => format!("{} since the previous event", format_tenths(s.total)),
            n => format!(
                "{n} x ~{} = {} since their previous events",
                format_tenths(s.total / n as f64),
                format_tenths(s.total)
            ),
        };
        out.push_str(&format!(
            "  {}. {} (event{} {}): {cost}, {:.0}% of the operation\n",
            i + 1,
            s.name,
            if places.len() == 1 { "" } else { "s" },
            places.join(", "),
            100.0 * s.share
        ));
    }
    out
}
