//! A report written as files: the HTML page, the Markdown beside it, and
//! the Markdown's figures as SVG files in a folder beside them.

use super::*;
use std::io;
use std::path::{Path, PathBuf};

/// Where a report's files go, named from its page: `NAME.md` beside it,
/// its figures in `NAME-figures/`.
pub struct ReportFiles {
    pub page: PathBuf,
    pub markdown: PathBuf,
    pub figures: PathBuf,
    /// The figures' folder as the Markdown links it.
    folder: String,
}

/// `e`, saying which file it is about.
fn about(what: &str, p: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
}

impl ReportFiles {
    pub fn of(page: &Path) -> ReportFiles {
        let stem = page
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "report".into());
        let folder = format!("{stem}-figures");
        ReportFiles {
            page: page.to_path_buf(),
            markdown: page.with_extension("md"),
            figures: page.with_file_name(&folder),
            folder,
        }
    }

    /// Writes the page, the Markdown and its figures. The folder's old
    /// figures (its .svg files, nothing else) go first, so that none is
    /// left that the page does not link.
    pub fn write(
        &self,
        runs: &[RunResult],
        figures: &[Figure],
        sections: &[Section],
    ) -> io::Result<()> {
        let write = |p: &Path, bytes: &[u8]| {
            wirebench_core::store::write_atomic(p, bytes)
                .map_err(|e| io::Error::other(format!("writing {e}")))
        };
        write(&self.page, html(runs, figures, sections).as_bytes())?;
        let (md, files) = markdown_with_figures(runs, figures, sections, &self.folder);
        if let Ok(old) = std::fs::read_dir(&self.figures) {
            for f in old.flatten() {
                if f.path().extension().is_some_and(|e| e == "svg") {
                    std::fs::remove_file(f.path()).map_err(|e| about("replacing", &f.path(), e))?;
                }
            }
        }
        if !files.is_empty() {
            std::fs::create_dir_all(&self.figures)
                .map_err(|e| about("creating", &self.figures, e))?;
        }
        for (name, svg) in &files {
            write(&self.figures.join(name), svg.as_bytes())?;
        }
        write(&self.markdown, md.as_bytes())
    }
}
