//! Text for a terminal: tables in aligned columns (numbers to the right),
//! two spaces apart; headings underlined by nothing, just their own line.

use super::document::{Exporter, Figure, Table};

pub struct TextExporter;

fn table(t: &Table) -> String {
    let n = t.head.len();
    let mut width: Vec<usize> = t.head.iter().map(|h| h.chars().count()).collect();
    for r in &t.rows {
        for (i, c) in r.iter().enumerate().take(n) {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let parts: Vec<String> = (0..n)
            .map(|i| {
                let c = cells.get(i).map_or("", String::as_str);
                if t.is_left(i) {
                    format!("{c:<w$}", w = width[i])
                } else {
                    format!("{c:>w$}", w = width[i])
                }
            })
            .collect();
        format!("{}\n", parts.join("  ").trim_end())
    };
    let mut s = line(&t.head);
    for r in &t.rows {
        s.push_str(&line(r));
    }
    s
}

impl Exporter for TextExporter {
    fn title(&self, out: &mut String, title: &str) {
        out.push_str(&format!("{title}\n"));
    }
    fn heading(&self, out: &mut String, h: &str) {
        out.push_str(&format!("\n{h}\n"));
    }
    fn text(&self, out: &mut String, t: &str) {
        out.push_str(&format!("{t}\n"));
    }
    fn list(&self, out: &mut String, items: &[(String, String)]) {
        for (what, detail) in items {
            if detail.is_empty() {
                out.push_str(&format!("- {what}\n"));
            } else {
                out.push_str(&format!("- {what}: {detail}\n"));
            }
        }
    }
    fn table(&self, out: &mut String, t: &Table) {
        out.push_str(&table(t));
    }
    fn pre(&self, out: &mut String, p: &str) {
        out.push_str(&format!("{}\n", p.trim_end()));
    }
    fn figure(&self, out: &mut String, _: usize, f: &Figure) {
        out.push_str(&format!("- figure: {}\n", f.title));
    }
}
