//! Who may drive an agent, and whether both sides run the same build.
//!
//! The token never crosses the wire: each side sends a random challenge
//! and the other answers with HMAC-SHA256(token, role || challenge), the
//! role ("coordinator" or "agent") keeping one side's answer from serving
//! as the other's.

use ring::{digest, hmac, rand::SecureRandom};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;

/// The shared secret of a coordinator and its agents. `Debug` hides it.
#[derive(Clone)]
pub struct Token(hmac::Key);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

impl Token {
    pub fn new(secret: &str) -> Result<Token, String> {
        let s = secret.trim();
        if s.len() < 16 {
            return Err("a token is at least 16 characters (e.g. `openssl rand -hex 32`)".into());
        }
        Ok(Token(hmac::Key::new(hmac::HMAC_SHA256, s.as_bytes())))
    }

    /// `--token-file FILE` if given, else `WIREBENCH_TOKEN` if set.
    pub fn given_or_env(file: Option<&Path>) -> Result<Option<Token>, String> {
        if let Some(f) = file {
            let (text, loose) = wirebench_core::files::read_secret(f, "--token-file")?;
            if let Some(w) = loose {
                eprintln!("{w}");
            }
            return Token::new(&text)
                .map(Some)
                .map_err(|e| format!("--token-file {}: {e}", f.display()));
        }
        match std::env::var("WIREBENCH_TOKEN") {
            Ok(t) if !t.is_empty() => Token::new(&t)
                .map(Some)
                .map_err(|e| format!("WIREBENCH_TOKEN: {e}")),
            _ => Ok(None),
        }
    }

    /// The first line of stdin (how `--launch ssh:` hands an agent its
    /// token: on no command line); the rest of stdin is the launcher's
    /// lifeline: `cancel` is set when it ends.
    pub fn from_stdin(cancel: &crate::process::Cancel) -> Result<Token, String> {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| format!("--token-stdin: {e}"))?;
        let t = Token::new(&line).map_err(|why| format!("--token-stdin: {why}"))?;
        let c = cancel.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            c.cancel("stdin closed (the launcher is gone)");
        });
        Ok(t)
    }

    /// The answer to `nonce` for `role`.
    pub fn prove(&self, role: &str, nonce: &str) -> String {
        hex(hmac::sign(&self.0, &message(role, nonce)).as_ref())
    }

    /// Whether `proof` answers `nonce` for `role` (in constant time).
    pub fn verify(&self, role: &str, nonce: &str, proof: &str) -> bool {
        let Some(bytes) = unhex(proof) else {
            return false;
        };
        hmac::verify(&self.0, &message(role, nonce), &bytes).is_ok()
    }
}

fn message(role: &str, nonce: &str) -> Vec<u8> {
    format!("wirebench-agent-v1\n{role}\n{nonce}").into_bytes()
}

/// 32 random bytes, in hex.
pub fn nonce() -> String {
    let mut b = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut b)
        .expect("the system's random source");
    hex(&b)
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What a binary is: its version, the git revision it was built from, and
/// the sha256 of the executable itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildId {
    pub version: String,
    pub git_revision: String,
    pub sha256: String,
}

impl std::fmt::Display for BuildId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "wirebench {} (git {}, sha256 {})",
            self.version,
            self.git_revision,
            self.sha256.get(..16).unwrap_or(&self.sha256)
        )
    }
}

impl BuildId {
    /// This process's build.
    pub fn current() -> std::io::Result<BuildId> {
        Ok(BuildId {
            version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: crate::GIT_REVISION.to_string(),
            sha256: sha256_file(Path::new("/proc/self/exe"))?,
        })
    }
}

/// The sha256 of a file, in hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut ctx = digest::Context::new(&digest::SHA256);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        ctx.update(&buf[..n]);
    }
    Ok(hex(ctx.finish().as_ref()))
}

/// The sha256 of some bytes, in hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, bytes).as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_answers_one_challenge_for_one_role_with_one_token() {
        let t = Token::new("0123456789abcdef-secret").unwrap();
        let other = Token::new("0123456789abcdef-other!").unwrap();
        let n = nonce();
        let p = t.prove("agent", &n);
        assert!(t.verify("agent", &n, &p));
        assert!(!t.verify("coordinator", &n, &p));
        assert!(!t.verify("agent", &nonce(), &p));
        assert!(!other.verify("agent", &n, &p));
        assert!(!t.verify("agent", &n, "zz"));
        assert!(Token::new("short").is_err());
        assert_eq!(format!("{t:?}"), "Token(***)");
    }
}
