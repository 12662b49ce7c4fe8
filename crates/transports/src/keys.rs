//! Which key (object, path) each operation works on, the one place every
//! transport takes it from: key numbers below a count, picked uniform,
//! zipf (rand_distr; key 0 the most popular) or sequential (each
//! connection walking from its own share of the keys), from a generator
//! seeded per connection.

use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Zipf};
use wirebench_core::spec::KeyDist;

/// One connection's key picker (and its generator, for the transport's
/// other random choices).
pub struct KeyPicker {
    rng: SmallRng,
    dist: KeyDist,
    keys: u64,
    zipf: Option<Zipf<f64>>,
    next: u64,
}

impl KeyPicker {
    /// The picker of connection `conn` of `conns`, over `keys` keys (at
    /// least 1).
    pub fn new(dist: KeyDist, keys: u64, seed: u64, conn: u64, conns: u64) -> KeyPicker {
        let keys = keys.max(1);
        let zipf = match dist {
            KeyDist::Zipf(s) => Some(Zipf::new(keys as f64, s).expect("checked exponent")),
            _ => None,
        };
        KeyPicker {
            rng: SmallRng::seed_from_u64(seed ^ conn.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            dist,
            keys,
            zipf,
            // Sequential: each connection starts at its own share of the keys.
            next: (u128::from(keys) * u128::from(conn) / u128::from(conns.max(1))) as u64,
        }
    }

    /// The next key number, below the key count.
    pub fn key(&mut self) -> u64 {
        match self.dist {
            KeyDist::Uniform => self.rng.random_range(0..self.keys),
            KeyDist::Zipf(_) => {
                let z = self.zipf.as_ref().expect("made for zipf");
                (z.sample(&mut self.rng) as u64).clamp(1, self.keys) - 1
            }
            KeyDist::Sequential => {
                let k = self.next % self.keys;
                self.next = k + 1;
                k
            }
        }
    }

    /// True `num` times in `den` (the connection's generator).
    pub fn ratio(&mut self, num: u32, den: u32) -> bool {
        self.rng.random_ratio(num, den)
    }

    /// A number below `n`, uniform (the connection's generator).
    pub fn below(&mut self, n: u64) -> u64 {
        self.rng.random_range(0..n.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_their_distribution() {
        let mut p = KeyPicker::new(KeyDist::Zipf(0.99), 1000, 1, 0, 1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..100_000 {
            hits[p.key() as usize] += 1;
        }
        // Zipf 0.99 over 1000 keys: key 0 takes about 13%, key 9 a tenth of it.
        assert!((11_000..15_000).contains(&hits[0]), "{}", hits[0]);
        assert!(hits[0] > 5 * hits[9], "{} vs {}", hits[0], hits[9]);

        let mut p = KeyPicker::new(KeyDist::Uniform, 1000, 1, 0, 1);
        let mut hits = vec![0u32; 1000];
        for _ in 0..100_000 {
            hits[p.key() as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (40..200).contains(&h)));

        let mut p = KeyPicker::new(KeyDist::Sequential, 1000, 1, 1, 4);
        let first: Vec<u64> = (0..3).map(|_| p.key()).collect();
        assert_eq!(first, vec![250, 251, 252]);
        let mut p = KeyPicker::new(KeyDist::Sequential, 2, 1, 0, 1);
        assert_eq!((0..3).map(|_| p.key()).collect::<Vec<_>>(), vec![0, 1, 0]);
    }
}
