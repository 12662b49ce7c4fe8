//! JUnit XML, the report CI systems display (GitLab, Jenkins, GitHub
//! actions that read it): suites of test cases, each passed, failed (with
//! the line that says why) or skipped. Every gate, objective and change
//! point of a check is one test case.

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

/// How a test case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    /// The message (one line) and the details.
    Failed {
        message: String,
        details: String,
    },
    Skipped(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    pub outcome: Outcome,
    /// Shown as the case's output.
    pub output: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    pub cases: Vec<Case>,
}

fn count(suites: &[&Suite], f: impl Fn(&Outcome) -> bool) -> String {
    suites
        .iter()
        .flat_map(|s| &s.cases)
        .filter(|c| f(&c.outcome))
        .count()
        .to_string()
}

/// The document of `suites` written to `path` (atomically).
pub fn save(
    path: &std::path::Path,
    name: &str,
    suites: &[Suite],
) -> Result<(), wirebench_core::store::StoreError> {
    wirebench_core::store::write_atomic(path, write(name, suites).as_bytes())
}

/// The document of `suites`, under a `<testsuites>` named `name`.
pub fn write(name: &str, suites: &[Suite]) -> String {
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    // Writing to a Vec cannot fail.
    let ev = |w: &mut Writer<Vec<u8>>, e: Event| w.write_event(e).expect("writes to memory");
    ev(
        &mut w,
        Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)),
    );
    let every: Vec<&Suite> = suites.iter().collect();
    let totals = |s: &[&Suite]| {
        [
            ("tests", count(s, |_| true)),
            (
                "failures",
                count(s, |o| matches!(o, Outcome::Failed { .. })),
            ),
            ("errors", "0".to_string()),
            ("skipped", count(s, |o| matches!(o, Outcome::Skipped(_)))),
        ]
    };
    let mut root = BytesStart::new("testsuites");
    root.push_attribute(("name", name));
    for (k, v) in totals(&every) {
        root.push_attribute((k, v.as_str()));
    }
    ev(&mut w, Event::Start(root));
    for s in suites {
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", s.name.as_str()));
        for (k, v) in totals(&[s]) {
            suite.push_attribute((k, v.as_str()));
        }
        ev(&mut w, Event::Start(suite));
        for c in &s.cases {
            let mut case = BytesStart::new("testcase");
            case.push_attribute(("name", c.name.as_str()));
            case.push_attribute(("classname", s.name.as_str()));
            if c.outcome == Outcome::Passed && c.output.is_none() {
                ev(&mut w, Event::Empty(case));
                continue;
            }
            ev(&mut w, Event::Start(case));
            match &c.outcome {
                Outcome::Passed => {}
                Outcome::Failed { message, details } => {
                    let mut f = BytesStart::new("failure");
                    f.push_attribute(("message", message.as_str()));
                    ev(&mut w, Event::Start(f));
                    ev(&mut w, Event::Text(BytesText::new(details)));
                    ev(&mut w, Event::End(BytesEnd::new("failure")));
                }
                Outcome::Skipped(why) => {
                    let mut f = BytesStart::new("skipped");
                    f.push_attribute(("message", why.as_str()));
                    ev(&mut w, Event::Empty(f));
                }
            }
            if let Some(out) = &c.output {
                ev(&mut w, Event::Start(BytesStart::new("system-out")));
                ev(&mut w, Event::Text(BytesText::new(out)));
                ev(&mut w, Event::End(BytesEnd::new("system-out")));
            }
            ev(&mut w, Event::End(BytesEnd::new("testcase")));
        }
        ev(&mut w, Event::End(BytesEnd::new("testsuite")));
    }
    ev(&mut w, Event::End(BytesEnd::new("testsuites")));
    let mut out = String::from_utf8(w.into_inner()).expect("UTF-8 in, UTF-8 out");
    out.push('\n');
    out
}

/// A suite per run: a case for the run itself (failed when the run did
/// not complete) and one per `--slo` objective (failed when missed).
pub fn of_runs(runs: &[wirebench_core::result::RunResult]) -> Vec<Suite> {
    use wirebench_core::result::RunState;
    runs.iter()
        .map(|r| {
            let mut cases = vec![Case {
                name: "run".into(),
                outcome: match r.status.state {
                    RunState::Complete => Outcome::Passed,
                    state => {
                        let state = format!("{state:?}").to_lowercase();
                        let why = r.status.reason.clone().unwrap_or_default();
                        Outcome::Failed {
                            message: format!("the run is {state}: {why}"),
                            details: why,
                        }
                    }
                },
                output: Some(format!(
                    "{:.1} ops/s, p50 {} ns, p99 {} ns",
                    r.summary.ops_per_s, r.summary.latency.p50_ns, r.summary.latency.p99_ns
                )),
            }];
            for o in &r.slos {
                let actual = match wirebench_core::slo::Slo::parse(&o.slo) {
                    Ok(slo) => slo.format_value(o.actual),
                    Err(_) => format!("{}", o.actual),
                };
                let missed: Vec<String> = o
                    .windows
                    .iter()
                    .flatten()
                    .filter(|w| !w.pass)
                    .map(|w| format!("{:.0}-{:.0}s", w.from_s, w.to_s))
                    .collect();
                let line = match &o.windows {
                    Some(w) if !missed.is_empty() => format!(
                        "{}: worst window {actual}, missed in {} of {} windows ({})",
                        o.slo,
                        missed.len(),
                        w.len(),
                        missed.join(", ")
                    ),
                    Some(_) => format!("{}: worst window {actual}", o.slo),
                    None => format!("{}: actual {actual}", o.slo),
                };
                cases.push(Case {
                    name: format!("slo {}", o.slo),
                    outcome: if o.pass {
                        Outcome::Passed
                    } else {
                        Outcome::Failed {
                            message: format!("{line}: missed"),
                            details: format!("{line}, run {}", r.run_id),
                        }
                    },
                    output: Some(line),
                });
            }
            Suite {
                name: format!("{} [{}]", r.spec.label(), r.run_id),
                cases,
            }
        })
        .collect()
}

/// `search`: a case for its answer (failed when no rate met the objectives
/// or the steps ran out first) and one per step, each said as it went.
pub fn of_search(r: &wirebench_core::summaries::SearchResult) -> Vec<Suite> {
    let answer = match (r.best_rate_per_s, r.budget_exhausted) {
        (Some(best), false) => Outcome::Passed.with_output(format!(
            "{best:.0}/s meets {} with {:.0}% to spare",
            r.slos.join(", "),
            100.0 * r.headroom
        )),
        (best, exhausted) => {
            let why = match (best, exhausted) {
                (_, true) => "the search ran out of steps before its answer".to_string(),
                _ => format!("no rate tried met {}", r.slos.join(", ")),
            };
            (
                Outcome::Failed {
                    message: why.clone(),
                    details: why,
                },
                None,
            )
        }
    };
    let mut cases = vec![Case {
        name: "the highest rate that meets the objectives".into(),
        outcome: answer.0,
        output: answer.1,
    }];
    for (i, s) in r.steps.iter().enumerate() {
        let verdict = if s.pass { "passed" } else { "missed" };
        cases.push(Case {
            name: format!("step {} at {:.0}/s", i + 1, s.rate_per_s),
            outcome: Outcome::Passed,
            output: Some(format!(
                "{verdict}: sent {:.0}/s, completed {:.0}/s",
                s.sent_per_s, s.completed_per_s
            )),
        });
    }
    vec![Suite {
        name: format!("search {}", r.dir.display()),
        cases,
    }]
}

impl Outcome {
    fn with_output(self, out: String) -> (Outcome, Option<String>) {
        (self, Some(out))
    }
}

/// `compare --fail-if`: a case per gate and variant after the first
/// (failed when it tripped).
pub fn of_gates(
    gates: &[crate::compare::Gate],
    tripped: &[crate::compare::Tripped],
    variants: &[crate::compare::Variant],
) -> Vec<Suite> {
    let mut cases = Vec::new();
    for g in gates {
        for (i, v) in variants.iter().enumerate().skip(1) {
            let letter = crate::compare::letter(i);
            let hit = tripped
                .iter()
                .find(|t| t.gate == g.text && t.variant == letter);
            cases.push(Case {
                name: format!("{} {letter} ({})", g.text, v.label),
                outcome: match hit {
                    Some(t) => Outcome::Failed {
                        message: format!(
                            "fail-if {}: variant {letter} changed {:+.1}% against A, beyond the noise",
                            g.text, t.change_pct
                        ),
                        details: format!("A: {}\n{letter}: {}", variants[0].label, v.label),
                    },
                    None => Outcome::Passed,
                },
                output: None,
            });
        }
    }
    vec![Suite {
        name: "compare --fail-if".into(),
        cases,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_counted_and_text_is_escaped() {
        let doc = write(
            "wirebench history check",
            &[Suite {
                name: "msgr <echo> & co".into(),
                cases: vec![
                    Case {
                        name: "p50".into(),
                        outcome: Outcome::Passed,
                        output: None,
                    },
                    Case {
                        name: "p99 at commit=c4".into(),
                        outcome: Outcome::Failed {
                            message: "p99: 61us -> 112us (+83.6%)".into(),
                            details: "a < b".into(),
                        },
                        output: None,
                    },
                    Case {
                        name: "errors".into(),
                        outcome: Outcome::Skipped("3 runs".into()),
                        output: Some("x".into()),
                    },
                ],
            }],
        );
        assert!(
            doc.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
            "{doc}"
        );
        assert!(
            doc.contains(r#"<testsuites name="wirebench history check" tests="3" failures="1" errors="0" skipped="1">"#),
            "{doc}"
        );
        assert!(
            doc.contains(r#"<testsuite name="msgr &lt;echo&gt; &amp; co""#),
            "{doc}"
        );
        assert!(
            doc.contains("<failure message=\"p99: 61us -&gt; 112us (+83.6%)\">a &lt; b</failure>"),
            "{doc}"
        );
        assert!(doc.contains(r#"<skipped message="3 runs"/>"#), "{doc}");
    }
}
