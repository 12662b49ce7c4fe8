//! Property tests of the trace readers (issue 16's fuzz targets on the
//! stable toolchain): wirebench traces and PerfUtils / RAMCloud TimeTrace
//! text, real ones with bytes changed, lines cut or repeated, and text of
//! any kind. Nothing panics, and what is read goes through the whole
//! analysis (shapes, statistics, table, plots).

use proptest::prelude::*;
use wirebench_report::timeline;

/// The cases of each property: `n`, or `PROPTEST_CASES` for a longer hunt.
fn cases(n: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n)
}

const TIMETRACE: &str = "     0.0 ns (+   0.0 ns): Invoking sync() to backups\n\
       90.0 ns (+  90.0 ns): Invoking Send RPC\n\
      1.5 us (+   1.4 us): Completed sync()\n\
    \n\
     10.0 ns (+   0.0 ns): Invoking sync() to backups\n\
    110.0 ns (+ 100.0 ns): Invoking Send RPC\n\
      2.0 ms (+   1.9 ms): Completed sync()\n";

/// A trace as `dump` writes it: two threads, operations begun on one and
/// ended on the other.
fn wirebench_trace() -> String {
    let a = std::thread::Builder::new()
        .name("wb-client-0".into())
        .spawn(|| {
            wirebench_trace::enable();
            for id in 0..20 {
                wirebench_trace::record(wirebench_trace::BEGIN, id);
                wirebench_trace::record("request sent", id);
            }
        })
        .unwrap();
    a.join().unwrap();
    for id in 0..20 {
        wirebench_trace::record("response received", id);
        wirebench_trace::record(wirebench_trace::END, id);
    }
    let mut out = Vec::new();
    wirebench_trace::dump_to(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// `text` with random edits: bytes replaced or inserted, cut short, a line
/// repeated or dropped.
fn mutate(text: &str, edits: &[(u16, u8, u8)]) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for &(at, b, how) in edits {
        if lines.is_empty() {
            break;
        }
        let i = usize::from(at) % lines.len();
        match how % 5 {
            0 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            1 => {
                lines.remove(i);
            }
            2 => {
                let mut bytes = lines[i].clone().into_bytes();
                if !bytes.is_empty() {
                    let j = usize::from(b) % bytes.len();
                    bytes[j] = b" 0123456789.+-:()#nsumx\t"[usize::from(b) % 24];
                }
                lines[i] = String::from_utf8_lossy(&bytes).into_owned();
            }
            3 => {
                let cut = usize::from(b) % (lines[i].len() + 1);
                lines[i] = lines[i].chars().take(cut).collect();
            }
            _ => lines[i].insert(0, char::from(b % 128)),
        }
    }
    lines.join("\n")
}

/// Everything the timeline command does with what it read.
fn analyse(ops: &[timeline::Op]) {
    for (_, same) in timeline::shapes(ops).iter().take(3) {
        let st = timeline::stats(same);
        let _ = timeline::table(&st);
        let _ = timeline::cdfs(&st);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(600)))]

    #[test]
    fn timetrace_text_is_read_or_refused(edits in prop::collection::vec(any::<(u16, u8, u8)>(), 0..6), junk in any::<String>()) {
        for text in [mutate(TIMETRACE, &edits), junk] {
            if let Ok(ops) = timeline::parse_timetrace(&text) {
                analyse(&ops);
            }
        }
    }

    #[test]
    fn wirebench_traces_are_read_or_refused(edits in prop::collection::vec(any::<(u16, u8, u8)>(), 0..6), junk in any::<String>()) {
        static REAL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        let real = REAL.get_or_init(wirebench_trace);
        for text in [mutate(real, &edits), format!("# wirebench-trace 1\n{junk}")] {
            if let Ok(t) = wirebench_trace::parse(&text) {
                analyse(&timeline::ops_of_traces(&[t]));
            }
        }
    }
}
