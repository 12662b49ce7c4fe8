//! The parsers of the users' own programs' output (`--parser`, the exec
//! transport). Each reads a program's output into [`Parsed`]: the figures
//! it gave, in wirebench's units, with the program's own names and values
//! kept beside them, and how it measured them. A parser is one file here,
//! implementing [`OutputParser`], and one line in its `registry!`: the
//! `--parser` names, their help and their errors come from that list, and
//! each parser is tested on real output of its program (`fixtures/`, found
//! by its name). Running the program is the runner's (`runner::exec`).

mod parsed;

use parsed::metrics_help;
pub use parsed::{
    EXEC_METRICS, LATENCY_STATS, LATENCY_UNITS, OutputParser, Parsed, ParsedInterval,
    is_exec_metric,
};

/// The registry: `module: Parser, ...;` declares each parser's module and
/// lists its parsers in [`PARSERS`], in the order of `--help`.
macro_rules! registry {
    ($($module:ident: $($parser:ident),+;)*) => {
        $(mod $module;)*

        /// Every parser, listed once.
        pub static PARSERS: &[&dyn OutputParser] = &[$($(&$module::$parser,)+)*];
    };
}

registry! {
    crimson: CrimsonMsgr;
    tateyama: Reqres, Datachannel;
    fio: FioJson;
    sockperf: Sockperf;
    redis_benchmark: RedisBenchmark;
    wrk: Wrk;
    generic: Json, Regex;
}

/// The parser of this name.
pub fn find(name: &str) -> Option<&'static dyn OutputParser> {
    PARSERS.iter().copied().find(|p| p.name() == name)
}

/// The parsers as `--parser` is written: `sockperf`, `json:NAME=POINTER,...`.
pub fn usage() -> Vec<String> {
    PARSERS
        .iter()
        .map(|p| match p.arg() {
            Some(a) => format!("{}:{a}", p.name()),
            None => p.name().to_string(),
        })
        .collect()
}

/// The help of `--parser`: every parser, how it is written and what it
/// reads, then the metrics `json` and `regex` fill.
pub fn flag_help() -> &'static str {
    static HELP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HELP.get_or_init(|| {
        let each: Vec<String> = PARSERS
            .iter()
            .zip(usage())
            .map(|(p, u)| format!("{u} ({})", p.reads()))
            .collect();
        format!(
            "What reads its output: {}. The metrics of json and regex: {}.",
            each.join(", "),
            metrics_help()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 47: a parser is one file and one line in `PARSERS`. Every
    /// parser's real outputs are found by its name (`fixtures/NAME-*`); each
    /// one that takes no argument has at least one it reads into figures,
    /// and every fixture either reads or is refused with a reason (a
    /// sockperf that could not connect, a redis-benchmark of two tests).
    #[test]
    fn every_parser_reads_the_fixtures_named_after_it() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/parsers/fixtures");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        let mut claimed = std::collections::BTreeSet::new();
        for p in PARSERS {
            let mine: Vec<&String> = files
                .iter()
                .filter(|f| f.starts_with(&format!("{}-", p.name())))
                .collect();
            let mut read = 0;
            for f in &mine {
                claimed.insert(f.to_string());
                let text = std::fs::read_to_string(dir.join(f)).unwrap();
                match p.parse("", &text, "") {
                    Ok(parsed) => {
                        assert!(parsed.ops.is_some() || parsed.ops_per_s.is_some(), "{f}");
                        read += 1;
                    }
                    Err(why) => assert!(!why.is_empty(), "{f}: an error without a reason"),
                }
            }
            if p.arg().is_none() {
                assert!(read >= 1, "{}: no fixture it reads ({mine:?})", p.name());
            }
            assert_eq!(find(p.name()).map(|q| q.name()), Some(p.name()));
        }
        let orphans: Vec<&String> = files.iter().filter(|f| !claimed.contains(*f)).collect();
        assert!(orphans.is_empty(), "fixtures of no parser: {orphans:?}");
        // The names are each one parser's, and the flag's help names all.
        let names: std::collections::BTreeSet<&str> = PARSERS.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), PARSERS.len());
        for u in usage() {
            assert!(flag_help().contains(&u), "{u}");
        }
    }

    /// The `Parser` value checks its name and argument with the parser.
    #[test]
    fn a_parser_is_named_and_its_argument_checked_by_the_registry() {
        use crate::spec::Parser;
        assert_eq!("sockperf".parse::<Parser>().unwrap().name(), "sockperf");
        let e = "sockperf:x".parse::<Parser>().unwrap_err();
        assert!(e.contains("takes no argument"), "{e}");
        let e = "nope".parse::<Parser>().unwrap_err();
        assert!(
            e.contains("crimson-msgr") && e.contains("regex:PATTERN"),
            "{e}"
        );
        let e = "json:speed=/a".parse::<Parser>().unwrap_err();
        assert!(e.contains("'speed' is not a metric"), "{e}");
        let p: Parser = "regex:(?P<ops_per_s>[0-9]+) ops/s".parse().unwrap();
        assert_eq!(p.to_string(), "regex:(?P<ops_per_s>[0-9]+) ops/s");
        let back: Parser = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
        let got = p.parse("done: 1234 ops/s\n", "").unwrap();
        assert_eq!(got.ops_per_s, Some(1234.0));
    }
}
