//! What `wirebench topo` shows: the machine's topology and, per placement
//! policy, the cpusets of the server and the client for each client count,
//! as text tables or as one JSON document.

use crate::export::{Document, Exporter, Table, TextExporter};
use wirebench_core::placement::PolicyTable;
use wirebench_core::topo::Topology;

/// The topology, then a table per policy: clients, server, client, notes.
pub fn text(topo: &Topology, tables: &[(&str, PolicyTable)], counts: &[usize]) -> String {
    let mut out = format!("{}\n", topo.describe());
    for (name, table) in tables {
        let mut rows = Table::new(["clients", "server", "client", "notes"]);
        rows.left = vec![1, 2, 3];
        for n in counts {
            let k = n.to_string();
            rows.row([
                k.clone(),
                table.server[&k].clone(),
                table.client[&k].clone(),
                table
                    .notes
                    .get(&k)
                    .map(|v| v.join("; "))
                    .unwrap_or_default(),
            ]);
        }
        out += &TextExporter.export(&Document::new(format!("\n{name}:")).table(rows));
    }
    out
}

/// Each policy's table by its name, and the topology.
pub fn json(topo: &Topology, tables: &[(&str, PolicyTable)]) -> serde_json::Value {
    let mut all = serde_json::Map::new();
    for (name, table) in tables {
        all.insert(
            (*name).into(),
            serde_json::to_value(table).expect("a table serializes"),
        );
    }
    all.insert(
        "topology".into(),
        serde_json::to_value(topo).expect("a topology serializes"),
    );
    all.into()
}
