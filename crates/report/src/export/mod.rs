//! Output formats over one document model: a [`Document`] is a title and
//! blocks (headings, text, lists, tables, preformatted text, figures); an
//! [`Exporter`] turns it into Markdown, a self-contained HTML page, CSV (its
//! tables) or aligned text for a terminal. Every table wirebench prints or
//! writes goes through here, so a column looks the same everywhere.
//!
//! ```
//! use wirebench_report::export::{Document, Exporter, MarkdownExporter, Table, TextExporter};
//! let mut t = Table::new(["variant", "ops/s"]);
//! t.row(["unix", "17.5k"]);
//! let doc = Document::new("ipc").table(t);
//! assert!(MarkdownExporter.export(&doc).contains("| unix | 17.5k |"));
//! assert!(TextExporter.export(&doc).contains("unix"));
//! ```

mod csv;
mod html;
mod markdown;
mod text;

mod document;

pub use csv::CsvExporter;
pub use document::{Block, Document, Exporter, Figure, Table};
pub use html::{HtmlExporter, escape};
pub use markdown::{MarkdownExporter, MarkdownFiguresExporter, figure_files};
pub use text::TextExporter;

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Document {
        let mut t = Table::new(["variant", "ops/s", "p50"]);
        t.row(["shm-spin", "1.21M", "812ns"]);
        t.row(["unix <2>", "17.5k", "55.0us"]);
        Document::new("ipc-compare")
            .text("medians over the rounds")
            .push(Block::List(vec![("A".into(), "the reference".into())]))
            .table(t)
            .push(Block::Pre("  1 | begin\n".into()))
            .push(Block::Figures(vec![Figure {
                title: "Throughput".into(),
                svg: "<svg xmlns=\"http://www.w3.org/2000/svg\"></svg>".into(),
            }]))
    }

    #[test]
    fn every_format_of_one_document() {
        insta::assert_snapshot!("markdown", MarkdownExporter.export(&doc()));
        insta::assert_snapshot!("html", HtmlExporter.export(&doc()));
        insta::assert_snapshot!("csv", CsvExporter.export(&doc()));
        insta::assert_snapshot!("text", TextExporter.export(&doc()));
    }
}
