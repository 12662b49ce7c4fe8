//! A self-contained HTML page: inline SVG, inline style, no script,
//! nothing fetched.

use super::document::{Document, Exporter, Figure, Table};

pub struct HtmlExporter;

/// Text made safe inside HTML.
pub fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:'DejaVu Sans',sans-serif;margin:24px;color:#222}\
table{border-collapse:collapse;margin:8px 0 24px;font-size:12px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}\
td.l,th.l{text-align:left}figure{margin:16px 0}\
figcaption{font-size:13px;color:#555}pre{font-size:12px;background:#f8f8f8;padding:8px}";

fn table(t: &Table) -> String {
    let class = |i: usize| if t.is_left(i) { " class=\"l\"" } else { "" };
    let mut s = String::from("<table><thead><tr>");
    for (i, h) in t.head.iter().enumerate() {
        s.push_str(&format!("<th{}>{}</th>", class(i), escape(h)));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        s.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            s.push_str(&format!("<td{}>{}</td>", class(i), escape(c)));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>\n");
    s
}

impl Exporter for HtmlExporter {
    fn title(&self, out: &mut String, title: &str) {
        out.push_str(&format!("<h1>{}</h1>\n", escape(title)));
    }
    fn heading(&self, out: &mut String, h: &str) {
        out.push_str(&format!("<h2>{}</h2>\n", escape(h)));
    }
    fn text(&self, out: &mut String, t: &str) {
        out.push_str(&format!("<p>{}</p>\n", escape(t)));
    }
    fn list(&self, out: &mut String, items: &[(String, String)]) {
        out.push_str("<ul>");
        for (what, detail) in items {
            if detail.is_empty() {
                out.push_str(&format!("<li>{}</li>", escape(what)));
            } else {
                out.push_str(&format!(
                    "<li><b>{}</b>: {}</li>",
                    escape(what),
                    escape(detail)
                ));
            }
        }
        out.push_str("</ul>\n");
    }
    fn table(&self, out: &mut String, t: &Table) {
        out.push_str(&table(t));
    }
    fn pre(&self, out: &mut String, p: &str) {
        out.push_str(&format!("<pre>{}</pre>\n", escape(p)));
    }
    fn figure(&self, out: &mut String, n: usize, f: &Figure) {
        out.push_str(&format!(
            "<figure id=\"fig{}\" class=\"plot\">{}<figcaption>{}</figcaption></figure>\n",
            n + 1,
            f.svg,
            escape(&f.title)
        ));
    }
    fn finish(&self, doc: &Document, body: String) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
            escape(&doc.title)
        )
    }
}
