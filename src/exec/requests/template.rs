//! A request template run (`request POST "/query" body "...$1..."` with `bind $1 = ...`): the
//! path and body cut once at their placeholders, and per request the bind program's values
//! written between the pieces. The values come from `query::binds::BindProgram`, the
//! evaluator of query binds, so a template draws what a query with the same binds would.

use std::path::Path;

use hyper::{HeaderMap, Method};

use crate::net::http1;
use crate::plan::{template_placeholders, BindPlan, Gen, QueryPlan};
use crate::query::binds::BindProgram;

enum Piece {
    Text(String),
    /// `$N`: the value of slot `N - 1`.
    Slot(usize),
}

pub(super) struct Template {
    method: Method,
    pub(super) head: bool,
    path: Vec<Piece>,
    body: Option<Vec<Piece>>,
    program: BindProgram,
}

/// A connection's buffers for its requests' values, path and body: reused, so that a request
/// allocates only what its values' text needs.
#[derive(Default)]
pub(super) struct Scratch {
    texts: Vec<String>,
    path: String,
    body: String,
}

/// What the plan's `RequestPlan::Template` holds.
pub(super) struct Parts<'a> {
    pub run: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub body: Option<&'a str>,
    pub placeholders: u32,
    pub lets: &'a [(String, Gen)],
    pub binds: &'a [BindPlan],
}

impl Template {
    pub(super) fn new(p: Parts<'_>, seed: u64, base_dir: &Path) -> Result<Template, String> {
        let method = Method::from_bytes(p.method.as_bytes())
            .map_err(|_| format!("`{}` is not an HTTP method", p.method))?;
        // The run's binds are a query's without SQL: the same compiler, and the streams of a
        // query named as the run is, so the two draw the same values at the same index.
        let plan = QueryPlan {
            name: p.run.to_string(),
            label: p.run.to_string(),
            sql: String::new(),
            placeholders: p.placeholders,
            lets: p.lets.to_vec(),
            binds: p.binds.to_vec(),
            csv: None,
            route: None,
            weight: 1.0,
            expects: Vec::new(),
            instance: Default::default(),
            family: None,
        };
        let program = BindProgram::compile(&plan, seed, base_dir)
            .map_err(|e| format!("run {}: {e}", p.run))?;
        Ok(Template {
            head: method == Method::HEAD,
            method,
            path: pieces(p.path),
            body: p.body.map(pieces),
            program,
        })
    }

    /// Request `index` rendered into `out`, the endpoint's headers included.
    pub(super) fn render(
        &self,
        t: &http1::Target,
        index: u64,
        s: &mut Scratch,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        self.program.texts(index, &mut s.texts);
        fill(&self.path, &s.texts, &mut s.path);
        let body = match &self.body {
            Some(b) => {
                fill(b, &s.texts, &mut s.body);
                s.body.as_bytes()
            }
            None => &[],
        };
        t.render(out, &self.method, &s.path, &HeaderMap::new(), body)
    }
}

fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = text;
    for (n, token) in template_placeholders(text) {
        // The lowering refused a template with a bad number; none is left here.
        let Ok(n) = usize::try_from(n) else { continue };
        if n == 0 {
            continue;
        }
        let at = rest.find(token).expect("the placeholders are in order");
        // `$1` is also the start of `$12`: cut at this very token, not at a longer one.
        if at > 0 {
            out.push(Piece::Text(rest[..at].to_string()));
        }
        out.push(Piece::Slot(n - 1));
        rest = &rest[at + token.len()..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_string()));
    }
    out
}

fn fill(pieces: &[Piece], texts: &[String], out: &mut String) {
    out.clear();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Slot(i) => out.push_str(texts.get(*i).map_or("", String::as_str)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_at_each_placeholder() {
        let p = pieces(r#"{"a":$1,"b":"$12$1"}"#);
        let texts: Vec<String> = (1..=12).map(|n| format!("<{n}>")).collect();
        let mut out = String::new();
        fill(&p, &texts, &mut out);
        assert_eq!(out, r#"{"a":<1>,"b":"<12><1>"}"#);
    }
}
