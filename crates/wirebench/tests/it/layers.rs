//! Issue 47: the layers are checked truly. `scripts/check_import_cycles.py`
//! left out everything after a file's first test module, so a circle
//! through code below one (`core::stages`' results, after its tests) went
//! unseen. A tree with a circle planted there is caught; a circle made
//! only inside test modules is not one.

use crate::helpers::TempDir;
use std::process::Command;

/// Runs the check on a tree of one crate made of `files`: its exit code
/// and stdout.
fn check(files: &[(&str, &str)]) -> (Option<i32>, String) {
    check_crate("wirebench-core", files)
}

fn check_crate(crate_name: &str, files: &[(&str, &str)]) -> (Option<i32>, String) {
    let root = TempDir::new("layers");
    let src = root.path().join("crates/demo/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        root.path().join("crates/demo/Cargo.toml"),
        format!("[package]\nname = \"{crate_name}\"\nversion = \"0.1.0\"\n"),
    )
    .unwrap();
    for (name, text) in files {
        std::fs::write(src.join(name), text).unwrap();
    }
    let script = format!(
        "{}/../../scripts/check_import_cycles.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new("python3")
        .arg(&script)
        .arg(root.path())
        .output()
        .expect("python3 runs the check");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[test]
fn issue_47_a_circle_after_a_test_module_is_caught_and_one_inside_is_not() {
    let lib = "pub mod a;\npub mod b;\n";
    // `a` uses `b` in code that follows its test module (with braces in
    // strings and characters inside it, which must not end it early).
    let a_after = r#"pub fn one() {}

#[cfg(test)]
mod tests {
    #[test]
    fn t() {
        let _ = ("}", '}', r"}}");
    }
}

pub fn f() {
    crate::b::g();
}
"#;
    let b = "pub fn g() {\n    crate::a::one();\n}\n";
    let (code, out) = check(&[("lib.rs", lib), ("a.rs", a_after), ("b.rs", b)]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("modules import each other in a circle: crate::a, crate::b"),
        "{out}"
    );
    // The same use inside the test module: a test may use what it likes.
    let a_inside = r#"pub fn one() {}

#[cfg(test)]
mod tests {
    #[test]
    fn t() {
        let _ = "// not a comment }";
        crate::b::g();
    }
}
"#;
    let (code, out) = check(&[("lib.rs", lib), ("a.rs", a_inside), ("b.rs", b)]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("no import circles"), "{out}");
}

/// Issue 47: the runner's layers. A low module that uses a high one (the
/// event channel naming the agent's wire types, as it did) is an arrow
/// running back up; a module in no layer is named, so that a new one is
/// placed.
#[test]
fn issue_47_a_runner_module_using_a_layer_above_is_named() {
    let lib = "pub mod events;\npub mod agent;\npub mod gizmo;\n";
    let events = "pub fn e(_: &crate::agent::Live) {}\n";
    let agent = "pub struct Live;\npub fn a() { crate::events::e(&Live); }\n";
    let (code, out) = check_crate(
        "wirebench-runner",
        &[
            ("lib.rs", lib),
            ("events.rs", events),
            ("agent.rs", agent),
            ("gizmo.rs", ""),
        ],
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("crate::events uses crate::agent: a layer above"),
        "{out}"
    );
    assert!(out.contains("crate::gizmo: in no layer"), "{out}");
    assert!(
        !out.contains("crate::agent uses"),
        "using a lower layer is fine: {out}"
    );
}

/// Issue 47: a transport's `spec.rs`, in its folder under transports,
/// is core's module: a circle through it is core's circle, caught; the
/// transports crate does not count it as its own.
#[test]
fn issue_47_a_circle_through_a_transport_spec_is_cores() {
    let root = TempDir::new("layers-spec");
    let core = root.path().join("crates/core/src");
    let theirs = root.path().join("crates/transports/src");
    std::fs::create_dir_all(core.join("transport")).unwrap();
    std::fs::create_dir_all(theirs.join("echo")).unwrap();
    let files = [
        (
            "crates/core/Cargo.toml",
            "[package]\nname = \"wirebench-core\"\n",
        ),
        (
            "crates/transports/Cargo.toml",
            "[package]\nname = \"wirebench-transports\"\n",
        ),
        (
            "crates/core/src/lib.rs",
            "pub mod transport;\npub mod error;\n",
        ),
        ("crates/core/src/transport/mod.rs", "pub fn about() {}\n"),
        (
            "crates/core/src/error.rs",
            "pub fn e() { crate::transport::echo::check(); }\n",
        ),
        ("crates/transports/src/lib.rs", "pub mod echo;\n"),
        ("crates/transports/src/echo/mod.rs", "pub fn serve() {}\n"),
        (
            "crates/transports/src/echo/spec.rs",
            "pub fn check() { crate::error::e(); }\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(root.path().join(name), text).unwrap();
    }
    let script = format!(
        "{}/../../scripts/check_import_cycles.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new("python3")
        .arg(&script)
        .arg(root.path())
        .output()
        .expect("python3 runs the check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("wirebench-core: modules import each other in a circle: crate::error, crate::transport::echo"),
        "{text}"
    );
    assert!(!text.contains("wirebench-transports:"), "{text}");
}

/// Issue 47: docs/architecture.md is checked against the tree: every
/// module at the top of a crate (and every file of the binary's `cli/` and
/// `ui/`) is named in its crate's section, and every module a line names
/// (`name` — ...) exists.
#[test]
fn issue_47_the_architecture_page_names_every_module_and_only_real_ones() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut problems = Vec::new();
    // Each crate's section: from its `crates/NAME (` line to the next.
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in doc.lines() {
        if let Some(rest) = line.strip_prefix("crates/")
            && let Some((dir, _)) = rest.split_once(" (")
        {
            sections.push((dir.to_string(), String::new()));
        } else if let Some((_, text)) = sections.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    assert!(sections.len() >= 8, "{sections:?}");
    // The transports' folders are the registry's list: the page names
    // them as one kind ("one folder per transport"), not each new one.
    let registry = std::fs::read_to_string(root.join("crates/core/src/transport/mod.rs")).unwrap();
    let body = registry
        .split("macro_rules! for_each_transport")
        .nth(1)
        .and_then(|r| r.split("};").next())
        .expect("the registry");
    let transports: Vec<String> = body
        .lines()
        .filter_map(|l| l.trim().split_once(' '))
        .filter(|(m, rest)| {
            rest.contains(':')
                && m.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(|(m, _)| m.to_string())
        .collect();
    assert!(transports.len() >= 8, "{transports:?}");
    for (dir, text) in &sections {
        let src = root.join("crates").join(dir).join("src");
        let named: Vec<String> = text
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|n| n.replace("::", "/"))
            .collect();
        let is_named = |m: &str| {
            named
                .iter()
                .any(|n| n == m || n.starts_with(&format!("{m}/")) || n == &format!("{m}.rs"))
        };
        let mut modules = Vec::new();
        for e in std::fs::read_dir(&src).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            if e.file_type().unwrap().is_dir() {
                if dir == "wirebench" {
                    for f in std::fs::read_dir(e.path()).unwrap() {
                        let f = f.unwrap().file_name().to_string_lossy().to_string();
                        if f != "mod.rs" {
                            modules.push(format!("{name}/{f}"));
                        }
                    }
                } else if e.path().join("mod.rs").exists() {
                    modules.push(name);
                }
            } else if let Some(m) = name.strip_suffix(".rs")
                && m != "lib"
                && m != "tests"
                && (m != "main" || dir == "wirebench")
            {
                modules.push(if m == "main" {
                    name.clone()
                } else {
                    m.to_string()
                });
            }
        }
        for m in modules {
            if dir == "transports" && transports.contains(&m) {
                continue;
            }
            if !is_named(&m) {
                problems.push(format!("crates/{dir}: `{m}` is not named"));
            }
        }
        // Each `name` — that opens a description is a module of the crate.
        for (i, _) in text.match_indices("` —") {
            let start = text[..i].rfind('`').unwrap() + 1;
            let n = text[start..i].replace("::", "/");
            let exists = n.starts_with("tests/")
                || src.join(&n).exists()
                || src.join(format!("{n}.rs")).exists()
                || (dir != "trace" && n == "lib");
            if !exists {
                problems.push(format!("crates/{dir}: `{n}` is named but no such module"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "docs/architecture.md:\n{}",
        problems.join("\n")
    );
}
