//! report.html: one self-contained page of a run (docs/report-format.md, "report.html"). The
//! charts are inline SVG drawn here (`svg`); the page fetches nothing and runs no script, so it
//! opens the same from a laptop's disk, a mail attachment or a CI artifact years later.
//! `run` lays out the sections. Everything the page shows comes from report.json, plan.json,
//! `sources/` and `series/` of the run directory; a directory without some of them (an older
//! run, a report.json alone) still renders what is there.

mod cpu;
mod environment;
mod findmax;
mod freshness;
mod numbers;
mod phase;
mod run;
mod sources;
pub mod svg;
mod tables;

use std::path::Path;

use super::Report;

/// The file name in a run directory.
pub const FILE: &str = "report.html";

/// The page of `report`, reading plan.json, sources/ and series/ from `dir` when given.
pub fn page(report: &Report, dir: Option<&Path>) -> String {
    shell(
        &format!("wlrun: {}", report.workload),
        &run::body(report, dir),
    )
}

/// A whole page around `body`, with the one stylesheet: the run's page and `wlrun compare
/// --html`'s diff page look alike.
pub fn shell(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + CSS.len() + 512);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    out.push_str(&format!(
        "<title>{}</title><style>{CSS}</style></head><body>",
        esc(title)
    ));
    out.push_str(body);
    out.push_str("</body></html>\n");
    out
}

/// Writes report.html into the run directory `dir`.
pub fn write(dir: &Path, report: &Report) -> Result<(), String> {
    let page = page(report, Some(dir));
    super::files::write_whole(&dir.join(FILE), crate::secrets::mask_html(&page).as_bytes())
        .map_err(|e| format!("cannot write {FILE} in {}: {e}", dir.display()))
}

/// Text for HTML and SVG, in content and in quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// One stylesheet for the page: system fonts, two chart columns on a laptop screen, one on a
/// narrow one.
const CSS: &str = "\
:root{--fg:#1d2330;--muted:#5d6677;--line:#d9dde5;--bg:#fff;--soft:#f5f6f8}\
*{box-sizing:border-box}\
body{margin:0 auto;max-width:1320px;padding:16px 22px 40px;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);background:var(--bg)}\
h1{font-size:22px;margin:4px 0 2px}h2{font-size:18px;margin:28px 0 8px;padding-top:8px;border-top:2px solid var(--line)}\
h3{font-size:15px;margin:22px 0 4px}h4{font-size:13px;margin:14px 0 2px;color:var(--muted);font-weight:600}\
p{margin:4px 0}.meta{color:var(--muted)}.meta b{color:var(--fg);font-weight:600}\
nav{margin:8px 0;display:flex;gap:14px;flex-wrap:wrap}nav a{color:#2b5d9b;text-decoration:none}\
.ok{color:#2e7d32}.bad{color:#c62828;font-weight:600}.warn{color:#a15c00}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px 22px}\
figure{margin:0;padding:6px 8px 4px;border:1px solid var(--line);border-radius:6px;background:var(--bg);min-width:0}\
figcaption{font-weight:600;font-size:13px;margin-bottom:2px}\
svg.chart{display:block;width:100%;height:auto}\
svg .g{stroke:#eceef2}svg .ax{stroke:#8a93a3}svg .tk{stroke:#8a93a3}\
svg text{font-size:11px;fill:var(--muted)}svg .yt{text-anchor:end;dominant-baseline:middle}\
svg .xt{text-anchor:middle}svg .at{text-anchor:middle}svg .bv{text-anchor:middle;font-size:10px;fill:var(--fg)}\
svg path.m{fill:none;stroke-width:1.6;stroke-linejoin:round}\
svg .sb{stroke:#8a93a3;stroke-dasharray:4 3}svg .sl{font-size:10px}\
svg .lim{stroke-width:1.4;stroke-dasharray:7 4}svg .ans{stroke:#2e7d32;stroke-width:1.4;stroke-dasharray:4 3}\
.legend{list-style:none;margin:2px 0 0;padding:0;display:flex;flex-wrap:wrap;gap:2px 14px;font-size:12px}\
.legend i{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}\
.legend .note{color:var(--muted)}\
table{border-collapse:collapse;font-size:12.5px;margin:6px 0}th,td{padding:3px 10px 3px 0;text-align:left;border-bottom:1px solid var(--line);vertical-align:top}\
th{color:var(--muted);font-weight:600}caption{text-align:left;font-weight:600;font-size:12.5px;padding:2px 0}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.scroll{overflow-x:auto}\
details{margin:4px 0}summary{cursor:pointer}pre{background:var(--soft);padding:8px 10px;border-radius:4px;overflow-x:auto;font-size:12px;line-height:1.35;max-height:520px}\
ul.msgs{margin:4px 0;padding-left:18px}\
";

#[cfg(test)]
mod tests;
