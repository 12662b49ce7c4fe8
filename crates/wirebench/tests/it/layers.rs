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
    let root = TempDir::new("layers");
    let src = root.path().join("crates/demo/src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        root.path().join("crates/demo/Cargo.toml"),
        "[package]\nname = \"wirebench-core\"\nversion = \"0.1.0\"\n",
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
