//! A C program records events through the header and the static library,
//! and the file it dumps reads back with the Rust parser.

use std::path::Path;
use std::process::Command;

#[test]
fn a_c_program_records_in_the_same_format() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The static library, built the way a C user builds it.
    let st = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "wirebench-trace", "--lib"])
        .current_dir(root)
        .status()
        .expect("cargo runs");
    assert!(st.success(), "building the static library");
    // Where cargo builds: CARGO_TARGET_DIR when the user set one.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("../../target"), std::path::PathBuf::from);
    let lib = target.join("debug/libwirebench_trace.a");
    assert!(lib.exists(), "{} is missing", lib.display());
    let dir = std::env::temp_dir().join(format!("wb-trace-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("prog.c");
    std::fs::write(
        &src,
        r#"#include "wirebench_trace.h"
#include <stdio.h>
int main(int argc, char **argv) {
    wb_trace_enable();
    for (uint64_t id = 0; id < 3; id++) {
        wb_trace_record("begin", id);
        wb_trace_record("c step", id);
        wb_trace_record("end", id);
    }
    return wb_trace_dump(argv[1]) == 9 ? 0 : 1;
}
"#,
    )
    .unwrap();
    let exe = dir.join("prog");
    let cc = Command::new("cc")
        .arg(&src)
        .arg("-I")
        .arg(root.join("include"))
        .arg(&lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("a C compiler (cc)");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let trace = dir.join("trace.txt");
    let run = Command::new(&exe).arg(&trace).status().unwrap();
    assert!(run.success(), "the C program's dump");
    let t = wirebench_trace::parse(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let steps: Vec<u64> = t
        .events
        .iter()
        .filter(|e| e.name == "c step")
        .map(|e| e.arg)
        .collect();
    assert_eq!(steps, vec![0, 1, 2]);
    assert_eq!(t.events.len(), 9);
    let _ = std::fs::remove_dir_all(&dir);
}
