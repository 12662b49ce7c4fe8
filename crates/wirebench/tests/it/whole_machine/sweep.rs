//! The tests of `sweep` that need the machine to themselves (see `whole_machine`).

use crate::helpers::*;

/// Issue 36: a point of two instances gives a row per instance (its
/// ops/s, latency, CPU, cpusets) beside the aggregate, and with
/// `alone = true` each instance also runs alone, right after: the report
/// says what each kept of that throughput and gives a contention verdict.
#[test]
fn issue_36_instances_get_a_row_each_and_a_contention_verdict() {
    let _solo = exclusive();
    let dir = TempDir::new("sweep-alone");
    let spec = dir.path().join("alone.toml");
    std::fs::write(
        &spec,
        "name = \"alone\"\n[base]\nclients = 2\nduration = \"1s\"\nwarmup = \"200ms\"\nalone = true\n[matrix]\ninstances = [1, 2]\n",
    )
    .unwrap();
    let results = dir.path().join("results");
    let out = sweep_ok(&spec, &results, &[]);
    assert!(
        out.contains("instances=2 alone=1") && out.contains("instances=2 alone=2"),
        "{out}"
    );
    let exp = results.join("alone");
    let (md, _) = report_ok(&exp, &dir.path().join("report.html"), &[]);
    // Two points in the report: the alone runs are the instances' own.
    assert!(md.contains("# wirebench report: 2 run(s)"), "{md}");
    let section = md
        .split("## Instances")
        .nth(1)
        .expect("an Instances section");
    let rows: Vec<Vec<&str>> = section
        .lines()
        .filter(|l| l.starts_with("| ↳"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 2, "{section}");
    for (k, row) in rows.iter().enumerate() {
        assert_eq!(row[2], (k + 1).to_string(), "{section}");
        assert_eq!(row[3], "1", "one client each: {section}");
        assert!(row[5] != "-" && row[6] != "-", "its own cpusets: {section}");
        assert!(row[11] != "-", "it ran alone: {section}");
        let kept: f64 = row[12].trim_end_matches('%').parse().unwrap();
        assert!(kept > 0.0, "{section}");
        assert!(
            ["no contention", "some contention", "contention"].contains(&row[13]),
            "{section}"
        );
    }
    // table: a row per instance under the point's, with its cpusets.
    let table = table_ok(&exp, &[]);
    for k in 1..=2 {
        let row = table
            .lines()
            .find(|l| l.contains(&format!("| ↳ {k} of 2 |")))
            .unwrap_or_else(|| panic!("no row of instance {k}: {table}"));
        assert!(
            row.contains("(server ") && row.contains(", client "),
            "{row}"
        );
    }
    // Two instances on this 2-CPU machine share its CPUs, and say so
    // (the fixture test of the plan holds them apart on a bigger one).
    let plan = std::fs::read_to_string(exp.join("sweep.json")).unwrap();
    assert!(plan.contains("their cpusets overlap"), "{plan}");
}
