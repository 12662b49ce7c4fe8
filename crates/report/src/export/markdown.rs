//! Markdown: GitHub's tables; figures listed by title (they live in the HTML).

use super::document::{Block, Document, Exporter, Table};

pub struct MarkdownExporter;

/// `|` inside a cell would end it.
fn cell(c: &str) -> String {
    c.replace('|', "\\|")
}

pub(super) fn table(t: &Table) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        t.head
            .iter()
            .map(|c| cell(c))
            .collect::<Vec<_>>()
            .join(" | "),
        " --- |".repeat(t.head.len())
    );
    for r in &t.rows {
        s.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    s
}

impl Exporter for MarkdownExporter {
    fn export(&self, doc: &Document) -> String {
        let mut s = String::new();
        if !doc.title.is_empty() {
            s.push_str(&format!("# {}\n\n", doc.title));
        }
        for b in &doc.blocks {
            match b {
                Block::Heading(h) => s.push_str(&format!("## {h}\n\n")),
                Block::Text(t) => s.push_str(&format!("{t}\n\n")),
                Block::List(items) => {
                    for (what, detail) in items {
                        if detail.is_empty() {
                            s.push_str(&format!("- {what}\n"));
                        } else {
                            s.push_str(&format!("- {what}: {detail}\n"));
                        }
                    }
                    s.push('\n');
                }
                Block::Table(t) => {
                    s.push_str(&table(t));
                    s.push('\n');
                }
                Block::Pre(p) => s.push_str(&format!("```text\n{}\n```\n\n", p.trim_end())),
                Block::Figures(f) => {
                    for x in f {
                        s.push_str(&format!("- figure: {}\n", x.title));
                    }
                    s.push('\n');
                }
            }
        }
        format!("{}\n", s.trim_end())
    }
}
