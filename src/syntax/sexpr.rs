//! The AST as S-expressions, for golden parse tests: compact, stable and easy to review.

use std::fmt::{self, Write};

use super::ast::*;

pub fn file(f: &File) -> String {
    let mut out = String::new();
    for item in &f.items {
        item_sexpr(&mut out, item);
        out.push('\n');
    }
    out
}

fn item_sexpr(o: &mut String, item: &Item) {
    match item {
        Item::Import(i) => {
            let _ = write!(o, "(import {} as {}", strlit(&i.path), i.alias);
            for a in &i.args {
                let _ = write!(o, " ({} {})", a.name, expr(&a.value));
            }
            o.push(')');
        }
        Item::Workload(w) => {
            let _ = write!(o, "(workload {}", w.name);
            for s in &w.seed {
                let _ = write!(o, " (seed {})", expr(s));
            }
            for d in &w.description {
                let _ = write!(o, " (description {})", strlit(d));
            }
            o.push(')');
        }
        Item::Param(p) => {
            let _ = write!(o, "(param {}", p.name);
            if let Some(t) = &p.ty {
                let _ = write!(o, " : {}", coltype(t));
            }
            let _ = write!(o, " {})", expr(&p.value));
        }
        Item::Target(t) => {
            let _ = write!(o, "(target {}", t.name);
            for d in &t.dialect {
                let _ = write!(o, "\n  (dialect {d})");
            }
            for e in &t.endpoints {
                let _ = write!(o, "\n  (endpoint {}", e.kind.as_str());
                if let Some(u) = &e.url {
                    let _ = write!(o, " {}", strlit(u));
                }
                if let Some(a) = &e.alias {
                    let _ = write!(o, " as {a}");
                }
                for op in &e.options {
                    let _ = write!(o, " ({} {})", op.name, expr(&op.value));
                }
                o.push(')');
            }
            for c in &t.counts {
                let _ = write!(
                    o,
                    "\n  (count {} via {} {} {})",
                    match c.unit {
                        CountUnit::Rows => "rows",
                        CountUnit::Samples => "samples",
                    },
                    c.endpoint,
                    match c.language {
                        CountLanguage::Sql => "sql",
                        CountLanguage::PromQl => "promql",
                        CountLanguage::InfluxQl => "influxql",
                    },
                    strlit(&c.query)
                );
            }
            for ob in &t.observe_process {
                let _ = match &ob.how {
                    ObserveHow::Pidfile(e) => {
                        write!(o, "\n  (observe process pidfile {})", expr(e))
                    }
                    ObserveHow::Listening(ep) => write!(o, "\n  (observe process listening {ep})"),
                    ObserveHow::Named(e) => write!(o, "\n  (observe process named {})", expr(e)),
                };
            }
            for m in &t.observe_metrics {
                let _ = write!(o, "\n  (observe metrics {}", strlit(&m.url));
                for e in &m.every {
                    let _ = write!(o, " (every {})", expr(e));
                }
                for k in &m.keep {
                    let patterns: Vec<String> = k.iter().map(strlit).collect();
                    let _ = write!(o, " (keep {})", patterns.join(" "));
                }
                for c in &m.cpu {
                    let _ = write!(o, " (cpu {})", strlit(c));
                }
                o.push(')');
            }
            o.push(')');
        }
        Item::Matrix(m) => {
            o.push_str("(matrix");
            for a in &m.axes {
                let _ = write!(o, "\n  (axis {} {}", a.name, expr(&a.values));
                if let Some(w) = &a.when {
                    let _ = write!(o, " (when {})", expr(w));
                }
                o.push(')');
            }
            for e in &m.excludes {
                let _ = write!(o, "\n  (exclude {})", expr(e));
            }
            o.push(')');
        }
        Item::Schema(s) => {
            let _ = write!(o, "(schema {}", s.name);
            for t in &s.table {
                let _ = write!(o, "\n  (table {})", expr(t));
            }
            for r in &s.rows {
                let _ = write!(o, "\n  (rows {})", expr(r));
            }
            for (path, _) in &s.series_from {
                let names: Vec<&str> = path.iter().map(|i| i.name.as_str()).collect();
                let _ = write!(o, "\n  (series-from {})", names.join("."));
            }
            for c in &s.columns {
                if let Some(r) = &c.repeat {
                    let _ = write!(o, "\n  (for {} {})", r.var, expr(&r.values));
                }
                let _ = write!(o, "\n  ({} {}", c.role.as_str(), c.name);
                if let Some(t) = &c.ty {
                    let _ = write!(o, " : {}", coltype(t));
                }
                match &c.gen {
                    ColumnGen::Expr(e) => {
                        let _ = write!(o, " {}", expr(e));
                    }
                    ColumnGen::Series {
                        expr: e,
                        var,
                        domain,
                    } => {
                        let _ = write!(o, " {} (for {} {})", expr(e), var, expr(domain));
                    }
                    ColumnGen::Every { step, from, end } => {
                        let _ = write!(o, " (every {} from {}", expr(step), expr(from));
                        match end {
                            Some(TimeEnd::For(d)) => {
                                let _ = write!(o, " for {}", expr(d));
                            }
                            Some(TimeEnd::To(t)) => {
                                let _ = write!(o, " to {}", expr(t));
                            }
                            None => {}
                        }
                        o.push(')');
                    }
                }
                for (p, _) in &c.per {
                    let p = match p {
                        Per::Series => "series",
                        Per::Row => "row",
                    };
                    let _ = write!(o, " (per {p})");
                }
                for n in &c.null {
                    let _ = write!(o, " (null {})", expr(n));
                }
                o.push(')');
            }
            for k in &s.primary_key {
                let _ = write!(o, "\n  (primary key {})", key_columns(k));
            }
            for (columns, share) in &s.null_one {
                let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
                let _ = write!(o, "\n  (null one of [{}] {})", names.join(" "), expr(share));
            }
            for (share, by, _) in &s.late {
                let _ = write!(o, "\n  (late {} by {} rows)", expr(share), expr(by));
            }
            for k in &s.indexes {
                match &k.name {
                    Some(n) => {
                        let _ = write!(o, "\n  (index {n} {})", key_columns(k));
                    }
                    None => {
                        let _ = write!(o, "\n  (index {})", key_columns(k));
                    }
                }
            }
            o.push(')');
        }
        Item::Ingest(i) => {
            let _ = write!(o, "(ingest {}", i.name);
            if let Some(w) = &i.when {
                let _ = write!(o, "\n  (when {})", expr(w));
            }
            for into in &i.into {
                let _ = write!(o, "\n  (into {} via {}", into.target, via(&into.via));
                if let Some(t) = &into.table {
                    let _ = write!(o, " (table {})", expr(t));
                }
                o.push(')');
            }
            for r in &i.rows {
                match &r.source {
                    RowsSource::Schema(p) => {
                        let _ = write!(o, "\n  (rows {}", path(p));
                    }
                    RowsSource::File(f) => {
                        let _ = write!(o, "\n  (rows (file {})", strlit(f));
                    }
                }
                if let Some(l) = &r.limit {
                    let _ = write!(o, " (limit {})", expr(l));
                }
                o.push(')');
            }
            clauses(o, "batch", &i.batch);
            clauses(o, "workers", &i.workers);
            clauses(o, "ack", &i.ack);
            clauses(o, "setup", &i.setup);
            for q in &i.setup_sql {
                let _ = write!(o, "\n  (setup sql {} {})", q.dialect, strlit(&q.sql));
            }
            clauses(o, "teardown", &i.teardown);
            for v in &i.verify {
                o.push_str("\n  (verify visible");
                if let Some(p) = &v.via {
                    let _ = write!(o, " via {}", path(p));
                }
                if let Some(w) = &v.within {
                    let _ = write!(o, " within {}", expr(w));
                }
                o.push(')');
            }
            for _ in &i.calibrate {
                o.push_str("\n  (calibrate)");
            }
            for r in &i.replay {
                o.push_str("\n  (replay");
                if let Some(w) = &r.when {
                    let _ = write!(o, " when {}", expr(w));
                }
                if let Some(b) = &r.budget {
                    let _ = write!(o, " budget {}", expr(b));
                }
                o.push(')');
            }
            clauses(o, "duration", &i.duration);
            clauses(o, "link", &i.link);
            for c in &i.rate {
                let _ = write!(o, "\n  (rate {}", expr(&c.value.rate));
                if let Some(a) = c.value.arrival {
                    let _ = write!(o, " {}", arrival(a));
                }
                o.push(')');
            }
            for p in &i.probe {
                let _ = write!(o, "\n  (probe visible every {}", expr(&p.every));
                if let Some(v) = &p.via {
                    let _ = write!(o, " via {}", path(v));
                }
                if let Some(w) = &p.within {
                    let _ = write!(o, " within {}", expr(w));
                }
                o.push(')');
            }
            stages(o, &i.stages);
            clauses(o, "warmup", &i.warmup);
            for c in &i.find_max {
                find_max(o, &c.value);
            }
            for c in &i.commit {
                let _ = match &c.value {
                    CommitPolicy::EveryRows(n) => write!(o, "\n  (commit every {} rows)", expr(n)),
                    CommitPolicy::Value(v) => write!(o, "\n  (commit {})", expr(v)),
                };
            }
            o.push(')');
        }
        Item::Query(q) => {
            let _ = write!(o, "(query {}", q.name);
            if let Some(r) = &q.repeat {
                let _ = write!(o, " (for {} {})", r.var, expr(&r.values));
            }
            clauses(o, "label", &q.label);
            for s in &q.sql {
                let _ = write!(o, "\n  (sql {})", strlit(&s.value));
            }
            for s in &q.then {
                let _ = write!(o, "\n  (then sql {})", strlit(&s.value));
            }
            for _ in &q.transaction {
                o.push_str("\n  (transaction)");
            }
            for l in &q.lets {
                let _ = write!(o, "\n  (let {} {})", l.name, expr(&l.value));
            }
            for b in &q.binds {
                let _ = write!(o, "\n  (bind ${} {})", b.index, expr(&b.value));
            }
            for c in &q.csv {
                let _ = write!(o, "\n  (csv {}", strlit(&c.path));
                for (n, t) in &c.columns {
                    let _ = write!(o, " ({n} {t})");
                }
                o.push(')');
            }
            clauses(o, "route", &q.route);
            expects(o, &q.expects);
            clauses(o, "not-found-when", &q.not_found);
            o.push(')');
        }
        Item::Hook(h) => {
            let _ = write!(o, "(hook {} {}", h.name, strlit(&h.path));
            for e in &h.entries {
                let _ = write!(o, " {e}");
            }
            o.push(')');
        }
        Item::Run(r) => {
            let _ = write!(o, "(run {}", r.name);
            if let Some(w) = &r.when {
                let _ = write!(o, "\n  (when {})", expr(w));
            }
            for a in &r.against {
                let _ = write!(o, "\n  (against {}", path(&a.target));
                if let Some(v) = &a.via {
                    let _ = write!(o, " via {}", via(v));
                }
                o.push(')');
            }
            for q in &r.queries {
                o.push_str("\n  (queries");
                for s in &q.value {
                    let _ = write!(o, " {}{}", path(&s.path), if s.glob { ".*" } else { "" });
                    if let Some(w) = &s.weight {
                        let _ = write!(o, " (weight {})", expr(w));
                    }
                }
                o.push(')');
            }
            for q in &r.request {
                match &q.value {
                    RequestSpec::Hook(p) => {
                        let _ = write!(o, "\n  (request {})", path(p));
                    }
                    RequestSpec::Fixed { method, path, body } => {
                        let _ = write!(o, "\n  (request {method} {}", expr(path));
                        if let Some(b) = body {
                            let _ = write!(o, " (body {})", expr(b));
                        }
                        o.push(')');
                    }
                }
            }
            for l in &r.lets {
                let _ = write!(o, "\n  (let {} {})", l.name, expr(&l.value));
            }
            for b in &r.binds {
                let _ = write!(o, "\n  (bind ${} {})", b.index, expr(&b.value));
            }
            clauses(o, "workers", &r.workers);
            for c in &r.count {
                let _ = write!(o, "\n  (count {}", expr(&c.value.count));
                if c.value.per_query {
                    o.push_str(" per query");
                }
                o.push(')');
            }
            clauses(o, "duration", &r.duration);
            clauses(o, "warmup", &r.warmup);
            clauses(o, "repeat", &r.repeat);
            clauses(o, "stop_after", &r.stop_after);
            for c in &r.rate {
                let _ = write!(o, "\n  (rate {}", expr(&c.value.rate));
                if let Some(a) = c.value.arrival {
                    let _ = write!(o, " {}", arrival(a));
                }
                o.push(')');
            }
            clauses(o, "require", &r.require);
            expects(o, &r.expects);
            for _ in &r.check_same {
                o.push_str("\n  (check same results)");
            }
            stages(o, &r.stages);
            for c in &r.find_max {
                find_max(o, &c.value);
            }
            o.push(')');
        }
        Item::Concurrent(c) => {
            let _ = write!(o, "(concurrent {}", c.name);
            for p in &c.phases {
                let names: Vec<&str> = p.value.iter().map(|i| i.name.as_str()).collect();
                let _ = write!(o, "\n  (phases {})", names.join(" "));
            }
            for u in &c.until {
                let _ = write!(o, "\n  (until {})", u.value);
            }
            o.push(')');
        }
    }
}

fn find_max(o: &mut String, f: &FindMax) {
    let _ = write!(
        o,
        "\n  (find max rate from {} where {}",
        expr(&f.from),
        expr(&f.condition)
    );
    let options = [
        ("up to", &f.up_to),
        ("samples", &f.samples),
        ("growth", &f.growth),
        ("resolution", &f.resolution),
    ];
    for (name, values) in options {
        for v in values {
            let _ = write!(o, " ({name} {})", expr(v));
        }
    }
    o.push(')');
}

/// `stage` clauses, of a run or an ingest.
fn stages(o: &mut String, stages: &[Stage]) {
    for st in stages {
        let _ = write!(o, "\n  (stage {}", expr(&st.duration));
        if let Some(rt) = &st.rate {
            let _ = write!(o, " (rate {}", expr(&rt.from));
            if let Some(to) = &rt.to {
                let _ = write!(o, " to {}", expr(to));
            }
            if let Some(a) = rt.arrival {
                let _ = write!(o, " {}", arrival(a));
            }
            o.push(')');
        }
        if let Some(w) = &st.workers {
            let _ = write!(o, " (workers {})", expr(w));
        }
        if let Some(w) = &st.warmup {
            let _ = write!(o, " (warmup {})", expr(w));
        }
        o.push(')');
    }
}

fn clauses(o: &mut String, name: &str, cs: &[Clause<Expr>]) {
    for c in cs {
        let _ = write!(o, "\n  ({name} {})", expr(&c.value));
    }
}

fn expects(o: &mut String, es: &[Expect]) {
    for e in es {
        match e {
            Expect::Status(v, _) => {
                let _ = write!(o, "\n  (expect status {})", expr(v));
            }
            Expect::Body(BodyCheck::Json(shape), _) => {
                let _ = match shape {
                    Some(s) => write!(o, "\n  (expect body json {s})"),
                    None => write!(o, "\n  (expect body json)"),
                };
            }
            Expect::Body(BodyCheck::Contains(v), _) => {
                let _ = write!(o, "\n  (expect body contains {})", expr(v));
            }
            Expect::Condition(v, _) => {
                let _ = write!(o, "\n  (expect {})", expr(v));
            }
        }
    }
}

fn via(v: &Via) -> String {
    match v {
        Via::Name(n) => n.to_string(),
        Via::List(l, _) => format!(
            "[{}]",
            l.iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

fn path(p: &[crate::span::Ident]) -> String {
    p.iter()
        .map(|i| i.name.as_str())
        .collect::<Vec<_>>()
        .join(".")
}

fn key_columns(k: &Key) -> String {
    let cols: Vec<String> = k
        .columns
        .iter()
        .map(|c| match c.order {
            Some((true, _)) => format!("{} desc", c.name),
            Some((false, _)) => format!("{} asc", c.name),
            None => c.name.to_string(),
        })
        .collect();
    format!("({})", cols.join(", "))
}

fn coltype(t: &ColType) -> String {
    match &t.arg {
        Some(a) => format!("{}({})", t.name, a),
        None => t.name.to_string(),
    }
}

fn strlit(s: &StrLit) -> String {
    let mut out = String::from("\"");
    for p in &s.parts {
        match p {
            StrPart::Text(t) => {
                for c in t.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        '\t' => out.push_str("\\t"),
                        '\r' => out.push_str("\\r"),
                        c => out.push(c),
                    }
                }
            }
            StrPart::Interp(e) => {
                let _ = write!(out, "${{{}}}", expr(e));
            }
        }
    }
    out.push('"');
    out
}

pub fn expr(e: &Expr) -> String {
    struct E<'a>(&'a Expr);
    impl fmt::Display for E<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match &self.0.kind {
                ExprKind::Int(v) => write!(f, "{v}"),
                ExprKind::Float(v) => write!(f, "{v:?}"),
                ExprKind::Duration(ns) => write!(f, "(duration {ns}ns)"),
                ExprKind::Size(b) => write!(f, "(size {b}B)"),
                ExprKind::Rate(r) => write!(f, "(rate {r:?}/s)"),
                ExprKind::Percent(p) => write!(f, "(percent {p:?})"),
                ExprKind::Bandwidth(b) => write!(f, "(bandwidth {b:?}bit/s)"),
                ExprKind::Timestamp(ns) => write!(f, "(timestamp {ns})"),
                ExprKind::Bool(b) => write!(f, "{b}"),
                ExprKind::None => f.write_str("none"),
                ExprKind::Str(s) => f.write_str(&strlit(s)),
                ExprKind::Env { name, default } => {
                    write!(f, "(env {}", strlit(name))?;
                    if let Some(d) = default {
                        write!(f, " {}", E(d))?;
                    }
                    f.write_str(")")
                }
                ExprKind::List(items) => {
                    f.write_str("[")?;
                    for (i, x) in items.iter().enumerate() {
                        if i > 0 {
                            f.write_str(" ")?;
                        }
                        write!(f, "{}", E(x))?;
                    }
                    f.write_str("]")
                }
                ExprKind::Map(entries) => {
                    f.write_str("{")?;
                    for (i, (k, v)) in entries.iter().enumerate() {
                        if i > 0 {
                            f.write_str(" ")?;
                        }
                        write!(f, "{:?}: {}", k.text(), E(v))?;
                    }
                    f.write_str("}")
                }
                ExprKind::Placeholder(n) => write!(f, "${n}"),
                ExprKind::Path(p) => f.write_str(&path(p)),
                ExprKind::Call { callee, args } => {
                    write!(f, "({}", path(callee))?;
                    for a in args {
                        match &a.name {
                            Some(n) => write!(f, " {n}={}", E(&a.value))?,
                            None => write!(f, " {}", E(&a.value))?,
                        }
                    }
                    f.write_str(")")
                }
                ExprKind::Unary(op, x) => {
                    let op = match op {
                        UnOp::Neg => "-",
                        UnOp::Not => "not",
                    };
                    write!(f, "({op} {})", E(x))
                }
                ExprKind::Binary(op, a, b) => write!(f, "({} {} {})", op.as_str(), E(a), E(b)),
            }
        }
    }
    E(e).to_string()
}

fn arrival(a: Arrival) -> &'static str {
    match a {
        Arrival::Fixed => "fixed",
        Arrival::Poisson => "poisson",
    }
}
