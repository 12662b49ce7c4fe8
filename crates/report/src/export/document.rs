//! The document model every exporter writes: a title and blocks.

/// A plot: its title and its SVG.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub title: String,
    pub svg: String,
}

/// Rows under a header. Columns are right-aligned, but the first (and
/// those marked `left`), which name things.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns (by index) aligned left besides the first.
    pub left: Vec<usize>,
}

impl Table {
    pub fn new<S: Into<String>>(head: impl IntoIterator<Item = S>) -> Table {
        Table {
            head: head.into_iter().map(Into::into).collect(),
            ..Table::default()
        }
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Removes the columns named `names` whose cell is the same in every
    /// row that `counts` (the others must leave it empty); returns each
    /// removed column's name and value, in the table's order.
    pub fn drop_constant(
        &mut self,
        names: &[&str],
        counts: impl Fn(&[String]) -> bool,
    ) -> Vec<(String, String)> {
        let mut dropped = Vec::new();
        let mut k = 0;
        while k < self.head.len() {
            let name = self.head[k].clone();
            let mut values = self
                .rows
                .iter()
                .filter(|r| counts(r))
                .map(|r| r.get(k).cloned().unwrap_or_default());
            let first = values.next();
            let same = match &first {
                Some(v) => values.all(|x| x == *v),
                None => false,
            };
            let others_empty = self
                .rows
                .iter()
                .filter(|r| !counts(r))
                .all(|r| r.get(k).is_none_or(|c| c.is_empty()));
            if names.contains(&name.as_str()) && same && others_empty {
                self.head.remove(k);
                for r in &mut self.rows {
                    if k < r.len() {
                        r.remove(k);
                    }
                }
                self.left.retain(|&c| c != k);
                for c in &mut self.left {
                    if *c > k {
                        *c -= 1;
                    }
                }
                dropped.push((name, first.unwrap_or_default()));
            } else {
                k += 1;
            }
        }
        dropped
    }

    pub(super) fn is_left(&self, col: usize) -> bool {
        col == 0 || self.left.contains(&col)
    }
}

/// One part of a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A section's title (level 2; the document's own title is level 1).
    Heading(String),
    /// A paragraph.
    Text(String),
    /// A bulleted list; each item is (what, its detail): "**what**: detail".
    List(Vec<(String, String)>),
    Table(Table),
    /// Text in fixed-width columns, kept as it is.
    Pre(String),
    /// Figures: drawn in HTML; listed by title elsewhere.
    Figures(Vec<Figure>),
}

/// A title and its blocks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Document {
    pub fn new(title: impl Into<String>) -> Document {
        Document {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    pub fn push(mut self, b: Block) -> Document {
        self.blocks.push(b);
        self
    }

    pub fn heading(self, t: impl Into<String>) -> Document {
        self.push(Block::Heading(t.into()))
    }

    pub fn text(self, t: impl Into<String>) -> Document {
        self.push(Block::Text(t.into()))
    }

    pub fn table(self, t: Table) -> Document {
        self.push(Block::Table(t))
    }

    /// The tables of the document, in order.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
    }
}

/// A format a document can be written in: what each block becomes in
/// it (nothing, by default). The walk over the document is one, shared:
/// [`Exporter::export`].
pub trait Exporter {
    /// The document's title, when it has one.
    fn title(&self, _out: &mut String, _title: &str) {}
    fn heading(&self, _out: &mut String, _heading: &str) {}
    fn text(&self, _out: &mut String, _text: &str) {}
    /// A list of (what, its detail).
    fn list(&self, _out: &mut String, _items: &[(String, String)]) {}
    fn table(&self, _out: &mut String, _table: &Table) {}
    fn pre(&self, _out: &mut String, _text: &str) {}
    /// A figure, the `n`-th of the document (from 0).
    fn figure(&self, _out: &mut String, _n: usize, _figure: &Figure) {}
    /// After a block of figures.
    fn figures_end(&self, _out: &mut String) {}
    /// The page around what the blocks wrote.
    fn finish(&self, _doc: &Document, body: String) -> String {
        body
    }

    /// The document in this format: each block in order, figures numbered
    /// across the document.
    fn export(&self, doc: &Document) -> String {
        let mut out = String::new();
        if !doc.title.is_empty() {
            self.title(&mut out, &doc.title);
        }
        let mut n = 0;
        for b in &doc.blocks {
            match b {
                Block::Heading(h) => self.heading(&mut out, h),
                Block::Text(t) => self.text(&mut out, t),
                Block::List(items) => self.list(&mut out, items),
                Block::Table(t) => self.table(&mut out, t),
                Block::Pre(p) => self.pre(&mut out, p),
                Block::Figures(f) => {
                    for x in f {
                        self.figure(&mut out, n, x);
                        n += 1;
                    }
                    self.figures_end(&mut out);
                }
            }
        }
        self.finish(doc, out)
    }
}
