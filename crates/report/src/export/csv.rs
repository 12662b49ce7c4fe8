//! CSV: the document's tables, each with its header line, one after the
//! other (a blank line between two).

use super::document::{Exporter, Table};
use wirebench_core::text::visible;

pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn table(&self, out: &mut String, t: &Table) {
        if !out.is_empty() {
            out.push('\n');
        }
        let mut w = csv::Writer::from_writer(Vec::new());
        // Writing to memory fails only on a row of another length, which
        // Table's users never make; such a row is left out. A peer's text
        // in a cell is shown, never obeyed.
        let shown =
            |r: &[String]| -> Vec<String> { r.iter().map(|c| visible(c).into_owned()).collect() };
        let _ = w.write_record(shown(&t.head));
        for r in &t.rows {
            let _ = w.write_record(shown(r));
        }
        let bytes = w.into_inner().unwrap_or_default();
        out.push_str(&String::from_utf8_lossy(&bytes));
    }
}
