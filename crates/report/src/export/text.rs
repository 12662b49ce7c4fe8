//! Text for a terminal: tables in aligned columns (numbers to the right),
//! two spaces apart; headings underlined by nothing, just their own line.

use super::document::{Block, Document, Exporter, Table};

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
    fn export(&self, doc: &Document) -> String {
        let mut s = String::new();
        if !doc.title.is_empty() {
            s.push_str(&format!("{}\n", doc.title));
        }
        for b in &doc.blocks {
            match b {
                Block::Heading(h) => s.push_str(&format!("\n{h}\n")),
                Block::Text(t) => s.push_str(&format!("{t}\n")),
                Block::List(items) => {
                    for (what, detail) in items {
                        if detail.is_empty() {
                            s.push_str(&format!("- {what}\n"));
                        } else {
                            s.push_str(&format!("- {what}: {detail}\n"));
                        }
                    }
                }
                Block::Table(t) => s.push_str(&table(t)),
                Block::Pre(p) => s.push_str(&format!("{}\n", p.trim_end())),
                Block::Figures(f) => {
                    for x in f {
                        s.push_str(&format!("- figure: {}\n", x.title));
                    }
                }
            }
        }
        s
    }
}
