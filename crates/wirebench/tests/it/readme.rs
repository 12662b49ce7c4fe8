//! Issue 48: the README's front page is short (what wirebench is, the two
//! commands, an example per task, links), and every link and file it
//! names exists; so does every one the guide and docs/reproducing.md
//! (its screenshots) link.

use std::path::Path;

/// The repository's root.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The paths a Markdown page names: its links' targets (not a URL, not an
/// anchor) and the backticked repository paths (`docs/...`, `specs/...`,
/// `scripts/...`), relative to `base`.
fn named_paths(text: &str, base: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for part in text.split("](").skip(1) {
        let target = part.split(')').next().unwrap_or("");
        let target = target.split('#').next().unwrap_or("");
        if !target.is_empty() && !target.contains("://") {
            out.push(base.join(target));
        }
    }
    for (k, part) in text.split('`').enumerate() {
        if k % 2 == 1
            && ["docs/", "specs/", "scripts/"]
                .iter()
                .any(|p| part.starts_with(p))
            && !part.contains(' ')
            && !part.contains('<')
        {
            out.push(root().join(part.trim_end_matches('/')));
        }
    }
    out
}

#[test]
fn issue_48_the_readme_is_a_front_page_whose_every_named_file_exists() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 260,
        "the README has {lines} lines: its front page fits in about 250"
    );
    for needed in ["cargo run --release -- run", "docs/guide.md"] {
        assert!(readme.contains(needed), "the README does not name {needed}");
    }
    let guide = std::fs::read_to_string(root().join("docs/guide.md")).unwrap();
    let reproducing = std::fs::read_to_string(root().join("docs/reproducing.md")).unwrap();
    let mut missing = Vec::new();
    for (text, base) in [
        (&readme, root().to_path_buf()),
        (&guide, root().join("docs")),
        (&reproducing, root().join("docs")),
    ] {
        for p in named_paths(text, &base) {
            if !p.exists() {
                missing.push(p.display().to_string());
            }
        }
    }
    assert!(missing.is_empty(), "named but missing: {missing:?}");
    // Every screenshot kept is one the page shows.
    for f in std::fs::read_dir(root().join("docs/images/reproducing")).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            reproducing.contains(&format!("images/reproducing/{name})")),
            "docs/images/reproducing/{name} is not shown in docs/reproducing.md"
        );
    }
    // The test command the README gives (the second of its two commands)
    // is a line of .ci/run, exactly, and it runs cargo's tests of every
    // crate to the end, then counts the skipped ones.
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the README's two commands");
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands.len(), 2, "{block}");
    assert_eq!(commands[0], "cargo run --release -- run");
    let command = commands[1];
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == command),
        "{command} not in .ci/run"
    );
    assert!(
        command.starts_with("cargo test --workspace --locked --no-fail-fast;")
            && command.ends_with("scripts/skipped.sh $?"),
        "{command}: every crate's tests to the end, then the skipped ones counted"
    );
}
