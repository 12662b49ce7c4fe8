//! What every command shares: the command line stored with results, with
//! credentials hidden.

/// Flags whose values are credentials: never printed nor stored.
const SECRET_FLAGS: [&str; 2] = ["--access-key", "--secret-key"];

/// This process's command line with credential values replaced by `***`.
pub fn command_line() -> Vec<String> {
    redact(std::env::args())
}

fn redact(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut hide_next = false;
    for a in args {
        if hide_next {
            out.push("***".to_string());
            hide_next = false;
        } else if let Some((flag, _)) = a.split_once('=').filter(|(f, _)| SECRET_FLAGS.contains(f))
        {
            out.push(format!("{flag}=***"));
        } else {
            hide_next = SECRET_FLAGS.contains(&a.as_str());
            out.push(a);
        }
    }
    out
}

#[cfg(test)]
mod redact_tests {
    #[test]
    fn credentials_are_redacted() {
        let a = [
            "wb",
            "run",
            "--secret-key",
            "s3cr3t",
            "--access-key=AK",
            "--size",
            "1",
        ];
        let r = super::redact(a.iter().map(|s| s.to_string()));
        assert_eq!(
            r,
            [
                "wb",
                "run",
                "--secret-key",
                "***",
                "--access-key=***",
                "--size",
                "1"
            ]
        );
    }
}
