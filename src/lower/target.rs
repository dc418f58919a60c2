//! Targets and endpoints: URL schemes, per-kind options, dialects, and whether an endpoint fits
//! an operation (ingest, queries, requests, counting rows).

use indexmap::IndexMap;

use crate::check::{Decl, Ev, Eval, InstanceId, Scope};
use crate::diag::{suggest, Code, Diagnostic};
use crate::plan::store::{self, Store};
use crate::plan::{EndpointPlan, IngestPhase, Setup, Teardown};
use crate::span::{Ident, Span};
use crate::syntax::ast::{self, EndpointKind};
use crate::value::{Text, TextPart, Value};

pub const DIALECTS: &[&str] = &[
    "questdb",
    "postgres",
    "timescaledb",
    "sqlite",
    "victoriametrics",
    "influxdb",
    "ksqldb",
    "generic",
];

/// What an endpoint is asked to do; each operation accepts some kinds only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Ingest,
    Queries,
    Requests,
    CountSql,
    CountMetrics,
}

impl Operation {
    fn accepts(self, k: EndpointKind) -> bool {
        use EndpointKind::*;
        match self {
            Operation::Ingest => matches!(k, IlpTcp | IlpHttp | Qwp | Pg | Sqlite | Null),
            Operation::Queries => matches!(k, Pg | Http | Qwp | Sqlite),
            Operation::Requests => matches!(k, Http | Pg | Sqlite),
            Operation::CountSql => matches!(k, Pg | Sqlite | Http | Qwp),
            Operation::CountMetrics => matches!(k, Http),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Operation::Ingest => "ingest: ilp_tcp, ilp_http, qwp, pg, sqlite or null",
            Operation::Queries => "query runs: pg, http, qwp or sqlite",
            Operation::Requests => "request runs: http, pg or sqlite",
            Operation::CountSql => "SQL counts: pg, sqlite, http or qwp",
            Operation::CountMetrics => "PromQL and InfluxQL counts: http",
        }
    }

    fn hint(self, k: EndpointKind) -> Option<&'static str> {
        match (self, k) {
            (Operation::Ingest, EndpointKind::Http) => {
                Some("`http` is the REST query endpoint; line protocol over HTTP is `ilp_http`")
            }
            (Operation::Queries, EndpointKind::IlpTcp | EndpointKind::IlpHttp) => {
                Some("line-protocol endpoints only write; query over pg, http or qwp")
            }
            _ => None,
        }
    }
}

/// Finds a target by name (`questdb` or `alias.questdb`).
pub fn resolve_target<'p>(
    ev: &Eval<'p>,
    inst: InstanceId,
    path: &[Ident],
) -> Ev<(InstanceId, &'p ast::Target, usize)> {
    match ev.resolve_decl(path, inst) {
        Ok((ti, Decl::Target(t), used)) => Some((ti, t, used)),
        Ok((_, other, _)) => ev.fail(
            Diagnostic::error(
                Code::E0201,
                path[0].span,
                format!("`{}` is a {}, not a target", path[0], other.kind()),
            )
            .label("expected a target"),
        ),
        Err(d) => ev.fail(d),
    }
}

pub fn find_endpoint<'t>(
    ev: &Eval<'_>,
    target: &'t ast::Target,
    name: &str,
    span: Span,
) -> Ev<&'t ast::Endpoint> {
    if let Some(e) = target.endpoints.iter().find(|e| e.name() == name) {
        return Some(e);
    }
    let names: Vec<&str> = target.endpoints.iter().map(ast::Endpoint::name).collect();
    let mut d = Diagnostic::error(
        Code::E0301,
        span,
        format!("target `{}` has no endpoint `{name}`", target.name),
    )
    .label("unknown endpoint")
    .also(target.name.span, "the target is declared here");
    d = if names.is_empty() {
        d.note("the target declares no endpoint")
    } else {
        d.note(format!("its endpoints: {}", names.join(", ")))
    };
    if let Some(s) = suggest(name, names.iter().copied()) {
        d = d.note(format!("did you mean `{s}`?"));
    }
    ev.fail(d)
}

pub fn check_fit(ev: &Eval<'_>, ep: &ast::Endpoint, op: Operation, span: Span) -> Ev<()> {
    if op.accepts(ep.kind) {
        return Some(());
    }
    let mut d = Diagnostic::error(
        Code::E0302,
        span,
        format!(
            "endpoint `{}` ({}) cannot serve {}",
            ep.name(),
            ep.kind.as_str(),
            match op {
                Operation::Ingest => "ingestion",
                Operation::Queries => "query runs",
                Operation::Requests => "request runs",
                Operation::CountSql | Operation::CountMetrics => "this count",
            }
        ),
    )
    .label("this endpoint does not fit the operation")
    .also(ep.kind_span, "declared here")
    .note(format!("accepted for {}", op.describe()));
    if let Some(h) = op.hint(ep.kind) {
        d = d.note(h);
    }
    ev.fail(d)
}

pub fn dialect(ev: &Eval<'_>, target: &ast::Target) -> Ev<String> {
    let Some(d) = target.dialect.first() else {
        return Some("generic".to_string());
    };
    for extra in target.dialect.iter().skip(1) {
        ev.error(
            Diagnostic::error(Code::E0108, extra.span, "a second `dialect`")
                .label("a target has one dialect")
                .also(d.span, "the first one is here"),
        );
    }
    if DIALECTS.contains(&d.name.as_str()) {
        Some(d.name.clone())
    } else {
        let mut diag = Diagnostic::error(Code::E0307, d.span, format!("unknown dialect `{d}`"))
            .label("not a dialect wlrun knows")
            .note(format!("dialects: {}", DIALECTS.join(", ")));
        if let Some(s) = suggest(&d.name, DIALECTS.iter().copied()) {
            diag = diag.note(format!("did you mean `{s}`?"));
        }
        ev.fail(diag)
    }
}

/// The kinds whose protocol has TLS.
const TLS_KINDS: &[EndpointKind] = &[
    EndpointKind::Pg,
    EndpointKind::Http,
    EndpointKind::IlpHttp,
    EndpointKind::IlpTcp,
    EndpointKind::Qwp,
];

/// Option name, the kinds it applies to (empty: all) and the value it takes.
const OPTIONS: &[(&str, &[EndpointKind], Want)] = &[
    ("timeout", &[], Want::Duration),
    ("connect_timeout", &[], Want::Duration),
    ("user", &[], Want::Text),
    ("password", &[], Want::Text),
    // TLS: the URL's scheme (`https://`, `wss://`, `tcps://`) or PostgreSQL's `sslmode`
    // turns it on; these say what is trusted and checked.
    ("tls_ca", TLS_KINDS, Want::Text),
    ("tls_cert", TLS_KINDS, Want::Text),
    ("tls_key", TLS_KINDS, Want::Text),
    ("tls_server_name", TLS_KINDS, Want::Text),
    ("tls_verify", TLS_KINDS, Want::Bool),
    (
        "sslmode",
        &[EndpointKind::Pg],
        Want::Word(&["disable", "prefer", "require", "verify-ca", "verify-full"]),
    ),
    (
        "statements",
        &[EndpointKind::Pg],
        Want::Word(&["prepared", "unnamed", "simple"]),
    ),
    (
        "insert",
        &[EndpointKind::Pg],
        Want::Word(&["copy", "insert"]),
    ),
    ("database", &[EndpointKind::Pg], Want::Text),
    ("application_name", &[EndpointKind::Pg], Want::Text),
    // The largest message the server may send: tokio-postgres buffers each one whole.
    ("max_message", &[EndpointKind::Pg], Want::Size),
    (
        "path",
        &[EndpointKind::Http, EndpointKind::IlpHttp, EndpointKind::Qwp],
        Want::Text,
    ),
    (
        "headers",
        &[EndpointKind::Http, EndpointKind::IlpHttp],
        Want::Headers,
    ),
    // A safety valve only: query answers are read as a stream, in bounded memory.
    ("max_answer", &[EndpointKind::Http], Want::Size),
    (
        "precision",
        &[EndpointKind::IlpHttp, EndpointKind::IlpTcp],
        Want::Word(&["ns", "us", "ms", "s"]),
    ),
    ("gzip", &[EndpointKind::IlpHttp], Want::Bool),
    // The designated timestamp's unit on the wire: TIMESTAMP (µs) or TIMESTAMP_NANOS.
    ("precision", &[EndpointKind::Qwp], Want::Word(&["us", "ns"])),
    ("ack_timeout", &[EndpointKind::Qwp], Want::Duration),
    ("max_frame", &[EndpointKind::Qwp], Want::Size),
    // The server's `qwp.max.uncommitted.rows`: `commit every N rows` must stay under it.
    ("max_uncommitted_rows", &[EndpointKind::Qwp], Want::Count),
    // Query flow control: the bytes of results the server may send ahead of the client.
    ("credit", &[EndpointKind::Qwp], Want::Size),
    (
        "journal",
        &[EndpointKind::Sqlite],
        Want::Word(&["wal", "delete", "truncate", "memory"]),
    ),
    (
        "synchronous",
        &[EndpointKind::Sqlite],
        Want::Word(&["off", "normal", "full"]),
    ),
];

#[derive(Clone, Copy)]
enum Want {
    Duration,
    Text,
    Bool,
    Size,
    Headers,
    Word(&'static [&'static str]),
    /// A positive integer.
    Count,
}

pub fn endpoint_plan(
    ev: &Eval<'_>,
    tinst: InstanceId,
    target: &ast::Target,
    ep: &ast::Endpoint,
) -> Ev<EndpointPlan> {
    let scope = Scope::new(tinst);
    let url = endpoint_url(ev, ep, &scope)?;
    let mut options = IndexMap::new();
    let mut ok = true;
    for o in &ep.options {
        match endpoint_option(ev, ep, o, &options, &scope) {
            Some(v) => {
                options.insert(o.name.name.clone(), v);
            }
            None => ok = false,
        }
    }
    if options.contains_key("tls_cert") != options.contains_key("tls_key") {
        let (given, missing) = if options.contains_key("tls_cert") {
            ("tls_cert", "tls_key")
        } else {
            ("tls_key", "tls_cert")
        };
        let at = ep
            .options
            .iter()
            .find(|o| o.name.name == given)
            .map_or(ep.kind_span, |o| o.name.span);
        ev.error(
            Diagnostic::error(Code::E0305, at, format!("`{given}` without `{missing}`"))
                .label(format!("mutual TLS needs `{missing}` too"))
                .note("a client certificate goes with its private key: give both PEM files"),
        );
        ok = false;
    }
    if ok {
        ok = credentials_once(ev, ep, url.as_ref(), &options);
    }
    let dialect = dialect(ev, target)?;
    ok.then(|| EndpointPlan {
        target: target.name.name.clone(),
        name: ep.name().to_string(),
        kind: ep.kind.as_str().to_string(),
        dialect,
        url,
        options,
    })
}

/// HTTP Basic credentials (`user`, or `user@` in the URL) and an `Authorization` header of
/// the endpoint's own would both set the one header: the run refused that at its start, after
/// the earlier phases had run; it is a mistake in the file, found here.
fn credentials_once(
    ev: &Eval<'_>,
    ep: &ast::Endpoint,
    url: Option<&Text>,
    options: &IndexMap<String, Value>,
) -> bool {
    let Some(Value::Map(headers)) = options.get("headers") else {
        return true;
    };
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
    {
        return true;
    }
    let user_option = ep.options.iter().find(|o| o.name.name == "user");
    let in_url = url.is_some_and(url_has_user);
    if user_option.is_none() && !in_url {
        return true;
    }
    let header = ep
        .options
        .iter()
        .find(|o| o.name.name == "headers")
        .map_or(ep.kind_span, |o| o.value.span);
    let mut d = Diagnostic::error(
        Code::E0305,
        header,
        "both Basic credentials and an `Authorization` header are given; keep one",
    )
    .label("an `Authorization` header");
    d = match (user_option, &ep.url) {
        (Some(o), _) => d.also(o.name.span, "`user` sets `Authorization: Basic ...` too"),
        (None, Some(u)) => d.also(u.span, "the URL's user sets `Authorization: Basic ...` too"),
        (None, None) => d,
    };
    ev.error(d);
    false
}

/// Whether a URL carries `user@` before its host, `env(...)` parts read as opaque text.
fn url_has_user(url: &Text) -> bool {
    let text: String = url
        .parts
        .iter()
        .map(|p| match p {
            TextPart::Lit(s) => s.as_str(),
            TextPart::Env { .. } => "x",
        })
        .collect();
    let rest = text.split_once("://").map_or(text.as_str(), |(_, r)| r);
    rest.split(['/', '?', '#'])
        .next()
        .is_some_and(|a| a.contains('@'))
}

/// The endpoint's URL, checked against its kind; `null` takes none.
fn endpoint_url(ev: &Eval<'_>, ep: &ast::Endpoint, scope: &Scope) -> Ev<Option<Text>> {
    let url = match (&ep.url, ep.kind) {
        (None, EndpointKind::Null) => None,
        (Some(u), EndpointKind::Null) => {
            return ev.fail(
                Diagnostic::error(Code::E0303, u.span, "the `null` endpoint takes no URL")
                    .label("remove this"),
            )
        }
        (None, k) => {
            return ev.fail(
                Diagnostic::error(
                    Code::E0303,
                    ep.kind_span,
                    format!("endpoint `{}` needs a URL", k.as_str()),
                )
                .label(format!("expected `{} \"{}\"`", k.as_str(), example_url(k))),
            )
        }
        (Some(u), k) => {
            let text = ev.string(u, scope)?;
            check_url(ev, k, &text, u.span)?;
            Some(text)
        }
    };
    Some(url)
}

/// One `name value` option: known, for this kind, given once, of the value its name wants.
fn endpoint_option(
    ev: &Eval<'_>,
    ep: &ast::Endpoint,
    o: &ast::EndpointOption,
    given: &IndexMap<String, Value>,
    scope: &Scope,
) -> Ev<Value> {
    let name = o.name.name.as_str();
    // A name may have an entry per kind (`precision` takes other units on `qwp`).
    let entry = OPTIONS
        .iter()
        .filter(|(n, _, _)| *n == name)
        .find(|(_, ks, _)| ks.is_empty() || ks.contains(&ep.kind))
        .or_else(|| OPTIONS.iter().find(|(n, _, _)| *n == name));
    let Some((_, kinds, want)) = entry else {
        let valid: Vec<&str> = OPTIONS
            .iter()
            .filter(|(_, ks, _)| ks.is_empty() || ks.contains(&ep.kind))
            .map(|(n, _, _)| *n)
            .collect();
        let mut d = Diagnostic::error(
            Code::E0304,
            o.name.span,
            format!(
                "unknown option `{name}` for a `{}` endpoint",
                ep.kind.as_str()
            ),
        )
        .label("unknown option")
        .note(format!(
            "options of `{}`: {}",
            ep.kind.as_str(),
            valid.join(", ")
        ));
        if name == "tls" {
            d = d.note(
                "TLS follows the URL's scheme (`https://`, `wss://`, `tcps://`); a `pg` \
                 endpoint takes `sslmode` (disable, prefer, require, verify-ca, verify-full)",
            );
        } else if let Some(s) = suggest(name, valid.iter().copied()) {
            d = d.note(format!("did you mean `{s}`?"));
        }
        return ev.fail(d);
    };
    if !kinds.is_empty() && !kinds.contains(&ep.kind) {
        ev.error(
            Diagnostic::error(
                Code::E0304,
                o.name.span,
                format!(
                    "option `{name}` does not apply to a `{}` endpoint",
                    ep.kind.as_str()
                ),
            )
            .label("not an option of this kind")
            .note(format!(
                "`{name}` applies to: {}",
                kinds
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        );
        return None;
    }
    if given.contains_key(name) {
        ev.error(
            Diagnostic::error(
                Code::E0108,
                o.name.span,
                format!("option `{name}` is given twice"),
            )
            .label("duplicate option"),
        );
        return None;
    }
    let mut v = ev.eval(&o.value, scope)?;
    // libpq's words have dashes (`verify-full`), which a bare word cannot: take them quoted,
    // or with underscores.
    if let Want::Word(words) = want {
        let text = match &v {
            Value::Str(t) => t.as_lit(),
            Value::Symbol(w) => Some(w.replace('_', "-")),
            _ => None,
        };
        if let Some(w) = text.filter(|w| words.contains(&w.as_str())) {
            v = Value::Symbol(w);
        }
    }
    let good = match (want, &v) {
        (Want::Duration, Value::Duration(d)) => *d > 0,
        (Want::Text, Value::Str(_)) => true,
        (Want::Bool, Value::Bool(_)) => true,
        (Want::Size, Value::Size(s)) => *s > 0,
        (Want::Headers, Value::Map(m)) => m.iter().all(|(_, v)| matches!(v, Value::Str(_))),
        (Want::Word(words), Value::Symbol(w)) => words.contains(&w.as_str()),
        (Want::Count, Value::Int(n)) => *n > 0,
        _ => false,
    };
    if !good {
        let expected = match want {
            Want::Duration => "a positive duration like `10s`".to_string(),
            Want::Text => "a string".to_string(),
            Want::Bool => "`true` or `false`".to_string(),
            Want::Size => "a size like `2MiB`".to_string(),
            Want::Headers => "a map of strings `{ \"Header\": \"value\" }`".to_string(),
            Want::Word(words) => format!("one of {}", words.join(", ")),
            Want::Count => "a positive integer like `2_000_000`".to_string(),
        };
        let mut d = Diagnostic::error(
            Code::E0305,
            o.value.span,
            format!("invalid value {v} for option `{name}`"),
        )
        .label(format!("expected {expected}"));
        if let (Want::Word(words), Value::Symbol(w)) = (want, &v) {
            if let Some(s) = suggest(w, words.iter().copied()) {
                d = d.note(format!("did you mean `{s}`?"));
            }
        }
        return ev.fail(d);
    }
    Some(v)
}

fn example_url(k: EndpointKind) -> &'static str {
    match k {
        EndpointKind::Pg => "postgres://user@127.0.0.1:5432/db",
        EndpointKind::Http | EndpointKind::IlpHttp => "http://127.0.0.1:9000",
        EndpointKind::IlpTcp => "tcp://127.0.0.1:9009",
        EndpointKind::Qwp => "ws://127.0.0.1:9000",
        EndpointKind::Sqlite => "bench.db",
        EndpointKind::Null => "",
    }
}

/// Checks the scheme and the host:port shape of the literal part of a URL; parts from `env`
/// are checked when the run resolves them.
pub(super) fn check_url(ev: &Eval<'_>, kind: EndpointKind, url: &Text, span: Span) -> Ev<()> {
    let literal_prefix: String = url
        .parts
        .iter()
        .map_while(|p| match p {
            TextPart::Lit(s) => Some(s.as_str()),
            TextPart::Env { .. } => None,
        })
        .collect();
    let whole = url.as_lit();
    let schemes: &[&str] = match kind {
        EndpointKind::Pg => &["postgres://", "postgresql://"],
        EndpointKind::Http | EndpointKind::IlpHttp => &["http://", "https://"],
        EndpointKind::IlpTcp => &["tcp://", "tcps://"],
        EndpointKind::Qwp => &["ws://", "wss://"],
        EndpointKind::Sqlite => {
            if whole.as_deref() == Some("") {
                return ev.fail(
                    Diagnostic::error(Code::E0303, span, "an empty SQLite path")
                        .label("expected a file path or \":memory:\""),
                );
            }
            return Some(());
        }
        EndpointKind::Null => return Some(()),
    };
    let Some(scheme) = schemes.iter().find(|s| literal_prefix.starts_with(**s)) else {
        let mut d = Diagnostic::error(
            Code::E0303,
            span,
            format!(
                "a `{}` endpoint URL must start with {}",
                kind.as_str(),
                schemes.join(" or ")
            ),
        )
        .label(format!("expected e.g. \"{}\"", example_url(kind)));
        if kind != EndpointKind::Pg && literal_prefix.starts_with("postgres") {
            d = d.note("PostgreSQL URLs belong to `pg` endpoints");
        }
        return ev.fail(d);
    };
    if let Some(full) = whole {
        let rest = &full[scheme.len()..];
        let authority = rest.split('/').next().unwrap_or("");
        let hostport = authority.rsplit('@').next().unwrap_or("");
        let port_ok = match hostport.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || hostport.starts_with('[') => {
                !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
            }
            _ => !hostport.is_empty() && kind != EndpointKind::IlpTcp,
        };
        if !port_ok {
            return ev.fail(
                Diagnostic::error(
                    Code::E0303,
                    span,
                    format!("cannot read a host and port in `{full}`"),
                )
                .label(format!("expected e.g. \"{}\"", example_url(kind))),
            );
        }
    }
    Some(())
}

/// Setup and teardown on InfluxDB and VictoriaMetrics act through the store's HTTP API
/// (`store::store_endpoint`). Where the phase gives no way to it, or (InfluxDB) names no
/// database, they are refused here: skipped at run time, a second run would count the rows
/// of the first as its baseline and see none of its own arrive. `setup` and `teardown` are
/// the spans of the clauses when written, `into` stands for the default `setup recreate`.
pub fn check_store_admin(
    ev: &Eval<'_>,
    phase: &IngestPhase,
    setup: Option<Span>,
    teardown: Option<Span>,
    into: Span,
) -> Ev<()> {
    let Some(store) = store::store(phase) else {
        return Some(());
    };
    // `setup sql` statements are SQL: a store runs none of them (no dialect of theirs matches).
    let (what, span, default) = if matches!(phase.setup, Setup::Recreate | Setup::Truncate) {
        (
            format!("setup {}", phase.setup),
            setup.unwrap_or(into),
            setup.is_none(),
        )
    } else if phase.teardown == Teardown::Drop {
        ("teardown drop".to_string(), teardown.unwrap_or(into), false)
    } else {
        return Some(());
    };
    let dialect = &phase.endpoint.dialect;
    let leave = match (what.as_str(), phase.teardown) {
        ("teardown drop", _) => "or keep the data: `teardown keep`",
        (_, Teardown::Drop) => {
            "or leave the data alone: `setup shared` (counts only rows inside the cell's time \
             range) and `teardown keep`"
        }
        _ => {
            "or leave the data alone: `setup shared` (counts only rows inside the cell's time \
             range)"
        }
    };
    let default_note = |d: Diagnostic| {
        if default {
            d.note("`setup recreate` is the default")
        } else {
            d
        }
    };
    if store::store_endpoint(phase).is_none() {
        let (label, api) = match store {
            Store::Influx => ("nothing to send InfluxQL to", "InfluxQL"),
            Store::Victoria => (
                "nothing to send the series delete to",
                "/api/v1/admin/tsdb/delete_series",
            ),
        };
        let d = Diagnostic::error(
            Code::E0302,
            span,
            format!(
                "`{what}` on `{dialect}` needs the server's HTTP API, which endpoint `{}` ({}) \
                 does not reach",
                phase.endpoint.name, phase.endpoint.kind
            ),
        )
        .label(label)
        .note(format!(
            "{api} goes to the `http` endpoint of the target's count \
             (`count rows via api ...` with `verify visible` or `probe visible`), else to an \
             `ilp_http` ingest endpoint"
        ))
        .note(leave);
        return ev.fail(default_note(d));
    }
    if store == Store::Influx {
        let literal = |v: &Value| match v {
            Value::Str(t) => t.as_lit(),
            _ => None,
        };
        if store::influx_database(phase, literal) == store::InfluxDatabase::Missing {
            let d = Diagnostic::error(
                Code::E0302,
                span,
                format!("`{what}` on `influxdb` needs the name of the database"),
            )
            .label("no database named")
            .note(
                "InfluxDB 1.x names it in the path: \
                 `ilp_http \"http://127.0.0.1:8086\" { path \"/write?db=bench\" }`, \
                 `http \"http://127.0.0.1:8086\" as api { path \"/query?db=bench\" }`",
            )
            .note(leave);
            return ev.fail(default_note(d));
        }
    }
    Some(())
}
