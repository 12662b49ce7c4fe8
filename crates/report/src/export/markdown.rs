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

/// The Markdown of every block, figures listed by title or, given a
/// folder, linked as images in it.
trait Markdown {
    /// Where the figures' files are (None: listed by title).
    fn dir(&self) -> Option<&str>;
}

impl Markdown for MarkdownExporter {
    fn dir(&self) -> Option<&str> {
        None
    }
}

impl Markdown for MarkdownFiguresExporter {
    fn dir(&self) -> Option<&str> {
        Some(&self.dir)
    }
}

impl<M: Markdown> Exporter for M {
    fn title(&self, out: &mut String, title: &str) {
        out.push_str(&format!("# {}\n\n", md(&one_line(title))));
    }
    fn heading(&self, out: &mut String, h: &str) {
        out.push_str(&format!("## {}\n\n", md(&one_line(h))));
    }
    fn text(&self, out: &mut String, t: &str) {
        out.push_str(&format!("{}\n\n", md(t)));
    }
    fn list(&self, out: &mut String, items: &[(String, String)]) {
        for (what, detail) in items {
            let (what, detail) = (md(&one_line(what)), md(&one_line(detail)));
            if detail.is_empty() {
                out.push_str(&format!("- {what}\n"));
            } else {
                out.push_str(&format!("- {what}: {detail}\n"));
            }
        }
        out.push('\n');
    }
    fn table(&self, out: &mut String, t: &Table) {
        out.push_str(&table(t));
        out.push('\n');
    }
    // A fence inside would end the block early.
    fn pre(&self, out: &mut String, p: &str) {
        out.push_str(&format!(
            "```text\n{}\n```\n\n",
            visible(p.trim_end()).replace("```", "`\u{200b}``")
        ));
    }
    fn figure(&self, out: &mut String, n: usize, f: &Figure) {
        match self.dir() {
            Some(d) => out.push_str(&format!(
                "![{}]({d}/{})\n\n",
                md(&one_line(&f.title)).replace(['[', ']'], ""),
                file_name(n, f)
            )),
            None => out.push_str(&format!("- figure: {}\n", md(&one_line(&f.title)))),
        }
    }
    fn figures_end(&self, out: &mut String) {
        out.push('\n');
    }
    fn finish(&self, _: &Document, body: String) -> String {
        format!("{}\n", body.trim_end())
    }
}
