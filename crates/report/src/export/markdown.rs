//! Markdown: GitHub's tables; figures listed by title (they live in the
//! HTML), or, with [`MarkdownFiguresExporter`], as SVG files beside it.

use super::document::{Block, Document, Exporter, Figure, Table};
use wirebench_core::text::{md_text as md, one_line, visible};

pub struct MarkdownExporter;

/// Markdown whose figures are images in a folder beside it (`dir`, as the
/// page links it): paste the page and the folder into a wiki or a pull
/// request. [`figure_files`] gives the files to write.
pub struct MarkdownFiguresExporter {
    pub dir: String,
}

/// A figure's file name: its position and its title in lower case, words
/// joined by '-' (`03-latency-by-percentile.svg`).
fn file_name(k: usize, f: &Figure) -> String {
    let mut slug = String::new();
    for c in f.title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches('-').chars().take(60).collect();
    format!("{:02}-{}.svg", k + 1, slug.trim_end_matches('-'))
}

/// The figures of `doc` as (file name, SVG), in the names
/// [`MarkdownFiguresExporter`] links.
pub fn figure_files(doc: &Document) -> Vec<(String, String)> {
    figures(doc)
        .enumerate()
        .map(|(k, f)| (file_name(k, f), f.svg.clone()))
        .collect()
}

fn figures(doc: &Document) -> impl Iterator<Item = &Figure> {
    doc.blocks
        .iter()
        .filter_map(|b| match b {
            Block::Figures(f) => Some(f),
            _ => None,
        })
        .flatten()
}

/// One cell: on one line, no markup, `|` escaped (it would end the cell).
fn cell(c: &str) -> String {
    wirebench_core::text::md_cell(c)
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
        export(doc, None)
    }
}

impl Exporter for MarkdownFiguresExporter {
    fn export(&self, doc: &Document) -> String {
        export(doc, Some(&self.dir))
    }
}

fn export(doc: &Document, dir: Option<&str>) -> String {
    let mut figure_no = 0;
    let mut s = String::new();
    if !doc.title.is_empty() {
        s.push_str(&format!("# {}\n\n", md(&one_line(&doc.title))));
    }
    for b in &doc.blocks {
        match b {
            Block::Heading(h) => s.push_str(&format!("## {}\n\n", md(&one_line(h)))),
            Block::Text(t) => s.push_str(&format!("{}\n\n", md(t))),
            Block::List(items) => {
                for (what, detail) in items {
                    let (what, detail) = (md(&one_line(what)), md(&one_line(detail)));
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
            // A fence inside would end the block early.
            Block::Pre(p) => s.push_str(&format!(
                "```text\n{}\n```\n\n",
                visible(p.trim_end()).replace("```", "`\u{200b}``")
            )),
            Block::Figures(f) => {
                for x in f {
                    match dir {
                        Some(d) => s.push_str(&format!(
                            "![{}]({d}/{})\n\n",
                            md(&one_line(&x.title)).replace(['[', ']'], ""),
                            file_name(figure_no, x)
                        )),
                        None => s.push_str(&format!("- figure: {}\n", md(&one_line(&x.title)))),
                    }
                    figure_no += 1;
                }
                s.push('\n');
            }
        }
    }
    format!("{}\n", s.trim_end())
}
