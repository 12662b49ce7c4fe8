//! A run split among load agents: who makes which part of the load.
//!
//! Closed loop: the clients are split by the agents' weights (largest
//! remainder, so the parts add up to the whole). Open loop: every agent
//! keeps the run's *total* rate and the numbers of its connections among
//! all the run's connections ([`ConnShare`]); each connection's timetable
//! is then the one it would have had on a single host (rate / connections,
//! phase by its global number, its own Poisson stream), so the agents'
//! timetables interleave exactly and their sum is the run's timetable.

use crate::transport::heading;
use serde::{Deserialize, Serialize};

/// The flags of the load agents. Flattened into the run's
/// [`RunRequest`](crate::request::RunRequest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, clap::Args)]
pub struct FleetFlags {
    /// Make the load with these agents, HOST:PORT each (comma-separated): the clients are split
    /// among them, they start at one instant, and their results merge exactly, each agent's
    /// part kept beside the merge. Needs --target.
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = heading::AGENTS
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// Start agents on these hosts, `ssh:[USER@]HOST` each (comma-separated), with the system's
    /// ssh: this binary is copied there (checked by sha256), the agent started on the host's
    /// loopback with a one-run token, reached through an ssh tunnel, stopped at the end.
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = heading::AGENTS
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch: Vec<String>,
    /// Each agent's share of the clients (and of the rate), in the order of --agents: 2,1,1.
    /// Default: equal.
    #[arg(
        long,
        value_delimiter = ',',
        help_heading = heading::AGENTS
    )]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_weights: Vec<u32>,
}

/// Which of a run's connections one part (an agent) makes: its clients'
/// connections are numbers `first ..` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnShare {
    pub first: u64,
    pub total: u64,
}

/// One load agent of a run: where it listens, and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// `HOST:PORT` (a name, an IPv4 address, or `[IPv6]`).
    pub address: String,
    pub weight: u32,
}

/// `total` split by `weights` (none zero): parts proportional to the
/// weights, rounded by largest remainder (ties to the first), summing to
/// `total`.
pub fn split(total: usize, weights: &[u32]) -> Vec<usize> {
    let sum: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let total_w = total as u128;
    let mut parts: Vec<usize> = Vec::with_capacity(weights.len());
    let mut rema: Vec<(u128, usize)> = Vec::with_capacity(weights.len());
    for (i, &w) in weights.iter().enumerate() {
        let exact = total_w * u128::from(w);
        parts.push(usize::try_from(exact / u128::from(sum)).unwrap_or(usize::MAX));
        rema.push((exact % u128::from(sum), i));
    }
    let given: usize = parts.iter().sum();
    rema.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in rema.iter().take(total.saturating_sub(given)) {
        parts[i] += 1;
    }
    parts
}

/// Each part's connection numbers, for parts of `clients[i]` clients of
/// `conns_per_client` connections each.
pub fn conn_shares(clients: &[usize], conns_per_client: usize) -> Vec<ConnShare> {
    let total: u64 = clients.iter().map(|&c| (c * conns_per_client) as u64).sum();
    let mut first = 0;
    clients
        .iter()
        .map(|&c| {
            let s = ConnShare { first, total };
            first += (c * conns_per_client) as u64;
            s
        })
        .collect()
}

/// Checks an agent's address: `HOST:PORT`.
pub fn check_address(a: &str) -> Result<(), String> {
    let Some((host, port)) = a.rsplit_once(':') else {
        return Err(format!("'{a}' is not HOST:PORT"));
    };
    if host.is_empty() || host.contains('/') || host.chars().any(char::is_whitespace) {
        return Err(format!("'{a}': no host before the port"));
    }
    if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(format!(
            "'{a}': write an IPv6 address in brackets, [::1]:7460"
        ));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("'{a}': the port must be 1-65535")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn clients_split_by_weight_add_up() {
        assert_eq!(split(10, &[1, 1]), [5, 5]);
        assert_eq!(split(7, &[1, 1]), [4, 3]);
        assert_eq!(split(10, &[2, 1, 1]), [5, 3, 2]);
        assert_eq!(split(3, &[1, 1, 1]), [1, 1, 1]);
        assert_eq!(split(2, &[1, 1, 1]), [1, 1, 0]);
    }

    #[test]
    fn connection_shares_number_every_connection_once() {
        let s = conn_shares(&[2, 3], 4);
        assert_eq!(
            s[0],
            ConnShare {
                first: 0,
                total: 20
            }
        );
        assert_eq!(
            s[1],
            ConnShare {
                first: 8,
                total: 20
            }
        );
    }

    #[test]
    fn addresses_are_host_and_port() {
        for ok in ["10.0.0.1:7460", "agent-0.wb:7460", "[::1]:7460"] {
            assert!(check_address(ok).is_ok(), "{ok}");
        }
        for bad in [
            "10.0.0.1",
            ":7460",
            "::1:7460",
            "h:0",
            "h:99999",
            "tcp://h:1",
        ] {
            assert!(check_address(bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn a_split_sums_to_the_whole_and_follows_the_weights(
            total in 0usize..100_000,
            weights in proptest::collection::vec(1u32..50, 1..12),
        ) {
            let parts = split(total, &weights);
            prop_assert_eq!(parts.iter().sum::<usize>(), total);
            let sum: f64 = weights.iter().map(|&w| f64::from(w)).sum();
            for (p, w) in parts.iter().zip(&weights) {
                let exact = total as f64 * f64::from(*w) / sum;
                prop_assert!((*p as f64 - exact).abs() < 1.0 + 1e-9);
            }
        }
    }
}
