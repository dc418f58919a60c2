//! The stable text listing of a plan (`wlrun plan`). Golden tests snapshot it, so its shape
//! changes only on purpose; docs/plan-format.md explains each line.

use std::collections::HashMap;
use std::fmt::Write;

use super::*;

/// The statements the phase's setup runs, in order: what `setup recreate` or `truncate`
/// writes (`ddl:`), then the user's (`setup sql:`).
fn setup_lines(o: &mut String, p: &super::IngestPhase) {
    use super::table::StatementKind;
    for s in &p.setup_ddl {
        let _ = match s.kind {
            StatementKind::Sql => writeln!(o, "    setup sql: {}", s.sql),
            StatementKind::CreateFromFile => writeln!(
                o,
                "    ddl: CREATE TABLE {} (the file's columns, typed when it is read)",
                crate::sql_text::quote_ident(&p.table)
            ),
            _ => writeln!(o, "    ddl: {}", s.sql),
        };
    }
}

/// `8640000` -> `8,640,000`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn endpoint(e: &EndpointPlan) -> String {
    let mut s = format!("{}.{} ({}", e.target, e.name, e.kind);
    if let Some(u) = e.shown_url() {
        let _ = write!(s, " {u}");
    }
    s.push(')');
    for (k, v) in &e.options {
        let _ = write!(s, " {k}={}", shown_option(k, v));
    }
    // Loud, as in the report: the server will not be authenticated.
    if matches!(
        e.options.get("tls_verify"),
        Some(crate::value::Value::Bool(false))
    ) {
        s.push_str(" [TLS NOT VERIFIED]");
    }
    s
}

fn load(l: &Load) -> String {
    match l {
        Load::Closed => "closed loop".to_string(),
        Load::Open { rate, arrival } => format!("open loop rate {rate} {arrival}"),
    }
}

fn stop(s: &Stop) -> String {
    match s {
        Stop::Count { count, per_query } => {
            format!(
                "count {}{}",
                thousands(*count),
                if *per_query { " per query" } else { "" }
            )
        }
        Stop::Duration { duration } => format!("duration {duration}"),
    }
}

fn thresholds(o: &mut String, indent: &str, ts: &[Threshold]) {
    for t in ts {
        let _ = writeln!(o, "{indent}expect {} {} {}", t.metric, t.op, t.value);
    }
}

/// A `concurrent` group, listed before its first member in file order, where it runs.
fn group_line(o: &mut String, cell: &Cell, phase: &Phase) {
    let first = cell.phases.iter().map(Phase::name);
    let Some(g) = cell.groups.iter().find(|g| {
        first
            .clone()
            .find(|n| g.phases.iter().any(|m| m == n))
            .is_some_and(|n| n == phase.name())
    }) else {
        return;
    };
    let end = match &g.until {
        Some(u) => format!("ends when {u} ends; the others are stopped then"),
        None => "ends when every member has ended".to_string(),
    };
    let _ = writeln!(
        o,
        "  concurrent {}: {} start together; {end}",
        g.name,
        g.phases.join(", ")
    );
}

fn schema_body(s: &SchemaPlan) -> String {
    let mut o = String::new();
    let width = s.columns.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &s.columns {
        let ty = match &c.unit {
            Some(u) => format!("{}({u})", c.ty),
            None => c.ty.clone(),
        };
        let gen = match (&s.time, c.role.as_str()) {
            (Some(t), "timestamp") => format!(
                "every {} from {} ({} timestamps)",
                t.step,
                t.start,
                thousands(t.count)
            ),
            _ => c.gen.to_string(),
        };
        let _ = write!(o, "      {:<9} {:<width$} {:<13} {gen}", c.role, c.name, ty);
        if c.role != "series" && c.role != "timestamp" {
            let _ = write!(o, " per {}", c.per);
        }
        if c.null_probability > 0.0 {
            let _ = write!(o, " null {}%", c.null_probability * 100.0);
        }
        o.push('\n');
    }
    if let Some(d) = &s.disorder {
        for n in &d.null_one {
            let names: Vec<&str> = n
                .columns
                .iter()
                .map(|&c| s.columns[c].name.as_str())
                .collect();
            let _ = writeln!(
                o,
                "      null one of [{}] {}%",
                names.join(", "),
                n.share * 100.0
            );
        }
        if let Some(l) = &d.late {
            let _ = writeln!(
                o,
                "      late {}% by {} rows (median)",
                l.share * 100.0,
                l.median_rows
            );
        }
    }
    o
}

/// What the `rows` rows of a schema are made of: ` = 3 series x 60 timestamps`, then notes in
/// parentheses. A schema without a series key has no series to count (`SchemaPlan::series` is
/// 1 there only so that the arithmetic holds), and `rows N` over a series key takes the series
/// in turn.
fn rows_made_of(s: &SchemaPlan, rows: u64) -> String {
    let keyed = s.columns.iter().any(|c| c.role == "series");
    let mut notes = Vec::new();
    let made_of = match (&s.time, keyed) {
        (Some(t), true) => format!(
            " = {} series x {} timestamps",
            thousands(s.series),
            thousands(t.count)
        ),
        (Some(t), false) => format!(" = {} timestamps", thousands(t.count)),
        (None, true) if s.rows == s.series => format!(" = {} series", thousands(s.series)),
        (None, true) => format!(" over {} series in turn", thousands(s.series)),
        (None, false) => String::new(),
    };
    if !keyed {
        notes.push("no series key".to_string());
    }
    if rows < s.rows {
        notes.push(format!("limited from {}", thousands(s.rows)));
    }
    if notes.is_empty() {
        made_of
    } else {
        format!("{made_of} ({})", notes.join(", "))
    }
}

pub fn listing(plan: &Plan) -> String {
    let mut o = String::new();
    let w = &plan.workload;
    let _ = writeln!(o, "workload {}  seed {}  file {}", w.name, w.seed, w.file);
    if let Some(d) = &w.description {
        let _ = writeln!(o, "  {d}");
    }
    if !plan.axes.is_empty() {
        o.push_str("axes\n");
        let width = plan.axes.iter().map(|a| a.name.len()).max().unwrap_or(0);
        for a in &plan.axes {
            let values: Vec<String> = a.values.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                o,
                "  {:<width$}  {}{}",
                a.name,
                values.join(", "),
                if a.implicit {
                    "  (from a via list)"
                } else {
                    ""
                }
            );
        }
    }
    let _ = writeln!(o, "cells {}", plan.cells.len());
    let mut schemas_seen: HashMap<String, usize> = HashMap::new();
    for cell in &plan.cells {
        let _ = writeln!(
            o,
            "\ncell {}{}{}",
            cell.index,
            if cell.key.is_empty() { "" } else { "  " },
            cell.key
        );
        if !cell.params.is_empty() {
            let ps: Vec<String> = cell
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(o, "  params  {}", ps.join(" "));
        }
        for ob in &cell.observe {
            let _ = writeln!(
                o,
                "  observe {}: process {} and its children, from /proc, while a phase runs against it",
                ob.target, ob.root
            );
        }
        for m in &cell.observe_metrics {
            observe_line(&mut o, m);
        }
        for phase in &cell.phases {
            group_line(&mut o, cell, phase);
            match phase {
                Phase::Ingest(p) => {
                    let _ = writeln!(o, "  ingest {} -> {}", p.name, endpoint(&p.endpoint));
                    match (&p.source, p.rows_expected) {
                        (RowSource::Schema(s), Some(rows)) => {
                            let _ = writeln!(
                                o,
                                "    table {}  rows {}{}",
                                p.table,
                                thousands(rows),
                                rows_made_of(s, rows)
                            );
                        }
                        (
                            RowSource::File {
                                path,
                                format,
                                bytes,
                            },
                            rows,
                        ) => {
                            let _ = writeln!(
                                o,
                                "    table {}  rows from file {path:?} ({format}{}){}",
                                p.table,
                                bytes
                                    .map(|b| format!(", {} bytes", thousands(b)))
                                    .unwrap_or_default(),
                                rows.map(|r| format!(" limit {}", thousands(r)))
                                    .unwrap_or_default()
                            );
                        }
                        (RowSource::Schema(_), None) => {}
                    }
                    let _ = writeln!(
                        o,
                        "    batch {} rows  workers {}  ack {}  setup {}  teardown {}{}{}",
                        thousands(p.batch_rows),
                        p.workers,
                        p.ack,
                        p.setup,
                        p.teardown,
                        if p.calibrate { "  calibrate" } else { "" },
                        p.duration
                            .as_ref()
                            .map(|d| format!("  duration {d}"))
                            .unwrap_or_default()
                    );
                    if let Some(c) = p.commit {
                        let _ = writeln!(o, "    {}", commit_line(c, p));
                    }
                    if let Some(Value::Rate(r)) = &p.rate {
                        let _ = writeln!(
                            o,
                            "    rate {}: batches on a fixed schedule, {} per worker{}",
                            crate::value::fmt_rate(*r),
                            crate::value::fmt_rate(r / p.workers.max(1) as f64),
                            match (&p.duration, p.rows_expected) {
                                // R x D rows, or the data's, whichever is fewer.
                                (Some(d @ Value::Duration(ns)), e) => {
                                    let span = (r * *ns as f64 / 1e9).ceil() as u64;
                                    format!(
                                        "; {} rows scheduled in {d}",
                                        thousands(e.map_or(span, |e| e.min(span)))
                                    )
                                }
                                // As the language writes a duration (the plan does not
                                // import the runtime's formatting).
                                (None, Some(e)) => format!(
                                    "; the schedule spans {}",
                                    Value::Duration(
                                        (e as f64 / r * 1e3).round() as i64 * 1_000_000
                                    )
                                ),
                                _ => String::new(),
                            }
                        );
                    }
                    super::stages::ingest_stage_lines(&mut o, p);
                    if let Some(b) = p.replay_budget {
                        let _ = writeln!(
                            o,
                            "    replay: encoded before the clock starts, within {}",
                            crate::value::fmt_size(b)
                        );
                    }
                    if p.replay_when == Some(false) {
                        let _ = writeln!(
                            o,
                            "    live: generated and encoded while sending (`replay when` is false in this cell)"
                        );
                    }
                    if let Some(l) = &p.link {
                        let _ = writeln!(
                            o,
                            "    link {l}: the rows/s it would carry at the measured socket bytes per row (computed)"
                        );
                    }
                    let _ = writeln!(o, "    routing {}", p.routing);
                    // Where the DDL goes when it is not the ingest endpoint: a line-protocol
                    // ingest sets its table up over another endpoint of the target.
                    if let super::setup::Admin::Sql { endpoint: e, .. } = super::setup::admin(p) {
                        if (&e.target, &e.name) != (&p.endpoint.target, &p.endpoint.name) {
                            let _ = writeln!(o, "    ddl via {}", endpoint(e));
                        }
                    }
                    setup_lines(&mut o, p);
                    if let Some(v) = &p.verify {
                        let _ = writeln!(
                            o,
                            "    verify visible via {} {} {:?} within {}{}",
                            endpoint(&v.endpoint),
                            v.language,
                            v.query,
                            v.within,
                            if v.unit == "samples" {
                                " (samples / fields)"
                            } else {
                                ""
                            }
                        );
                    }
                    if let Some(pr) = &p.probe {
                        let c = &pr.count;
                        let _ = writeln!(
                            o,
                            "    probe visible every {} via {} {} {:?}{}, until all visible or {} after sending",
                            pr.every,
                            endpoint(&c.endpoint),
                            c.language,
                            c.query,
                            if c.unit == "samples" { " (samples / fields)" } else { "" },
                            c.within
                        );
                    }
                    if let Some(w) = &p.warmup {
                        let _ = writeln!(o, "    warmup {w} per step, its probes not judged");
                    }
                    if let Some(f) = &p.findmax {
                        let _ = writeln!(o, "    {}", f.listing());
                    }
                    if let RowSource::Schema(s) = &p.source {
                        let body = schema_body(s);
                        let key = format!("{}\n{body}", s.name);
                        match schemas_seen.get(&key) {
                            Some(first) => {
                                let _ = writeln!(o, "    schema {} as in cell {first}", s.name);
                            }
                            None => {
                                schemas_seen.insert(key, cell.index);
                                let _ = writeln!(o, "    schema {}", s.name);
                                o.push_str(&body);
                            }
                        }
                    }
                }
                Phase::Queries(p) => {
                    let _ = writeln!(o, "  queries {} -> {}", p.name, endpoint(&p.endpoint));
                    let _ = writeln!(
                        o,
                        "    workers {}  {}  {}{}  repeat {}  mix {}{}",
                        p.run.workers,
                        load(&p.run.load),
                        stop(&p.run.stop),
                        p.run
                            .warmup
                            .as_ref()
                            .map(|w| format!("  warmup {w}"))
                            .unwrap_or_default(),
                        p.run.repeat,
                        p.mix,
                        if p.check_same_results {
                            "  check same results across endpoints"
                        } else {
                            ""
                        }
                    );
                    if let Some(n) = p.run.stop_after_errors {
                        let _ = writeln!(
                            o,
                            "    stop after {n} error{}",
                            if n == 1 { "" } else { "s" }
                        );
                    }
                    super::stages::stage_lines(&mut o, &p.run.stages);
                    for r in &p.run.require {
                        let _ = writeln!(o, "    require rows({}) {} {}", r.table, r.op, r.value);
                    }
                    thresholds(&mut o, "    ", &p.run.expects);
                    if let Some(f) = &p.run.findmax {
                        let _ = writeln!(o, "    {}", f.listing());
                    }
                    for q in &p.queries {
                        let _ = writeln!(
                            o,
                            "    query {}{}  {:?}",
                            q.name,
                            if q.weight != 1.0 {
                                // A family's share of a weight is a fraction: 4 decimals say it.
                                let w = format!("{:.4}", q.weight);
                                format!(" weight {}", w.trim_end_matches('0').trim_end_matches('.'))
                            } else {
                                String::new()
                            },
                            q.label
                        );
                        if let Some(f) = &q.family {
                            let _ = writeln!(
                                o,
                                "      from {} for {} = {} (1 of {})",
                                f.query, f.var, f.value, f.members
                            );
                        }
                        // SQL whitespace is collapsed for reading; the plan keeps the text as written.
                        let sql = q.sql.split_whitespace().collect::<Vec<_>>().join(" ");
                        let _ = writeln!(o, "      sql {sql:?}");
                        for t in &q.instance.then {
                            let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
                            let _ = writeln!(o, "      then sql {t:?}");
                        }
                        if q.instance.transaction {
                            let _ = writeln!(o, "      transaction");
                        }
                        for (name, g) in &q.lets {
                            let _ = writeln!(o, "      let {name} = {g}");
                        }
                        for b in &q.binds {
                            let _ = writeln!(o, "      bind ${} = {}", b.index, b.gen);
                        }
                        if let Some(c) = &q.csv {
                            let cols: Vec<String> =
                                c.columns.iter().map(|(n, t)| format!("{n} {t}")).collect();
                            let _ = writeln!(
                                o,
                                "      binds from csv {:?} ({}) [{} rows]",
                                c.path,
                                cols.join(", "),
                                thousands(c.rows)
                            );
                        }
                        if let Some(r) = &q.route {
                            let _ = writeln!(o, "      route by {r}");
                        }
                        thresholds(&mut o, "      ", &q.expects);
                        for c in &q.instance.checks {
                            let _ = writeln!(o, "      expect {c} (each instance)");
                        }
                        if let Some(c) = &q.instance.not_found {
                            let _ = writeln!(o, "      not found when {c}");
                        }
                    }
                }
                Phase::Requests(p) => {
                    let _ = writeln!(o, "  requests {} -> {}", p.name, endpoint(&p.endpoint));
                    match &p.request {
                        RequestPlan::Hook { hook, function, .. } => {
                            let _ = writeln!(
                                o,
                                "    hook {} from {:?} calls {}  functions {}",
                                hook.name,
                                hook.path,
                                function,
                                hook.functions.join(", ")
                            );
                        }
                        RequestPlan::Fixed { method, path, body } => {
                            let _ = writeln!(o, "    request {method} {path:?}");
                            if let Some(b) = body {
                                let _ = writeln!(o, "      body {b:?}");
                            }
                        }
                        RequestPlan::Template {
                            method,
                            path,
                            body,
                            lets,
                            binds,
                            ..
                        } => {
                            let _ = writeln!(o, "    request {method} {path:?} (a template)");
                            if let Some(b) = body {
                                let _ = writeln!(o, "      body {b:?}");
                            }
                            for (name, g) in lets {
                                let _ = writeln!(o, "      let {name} = {g}");
                            }
                            for b in binds {
                                let _ = writeln!(o, "      bind ${} = {}", b.index, b.gen);
                            }
                        }
                    }

                    let _ = writeln!(
                        o,
                        "    workers {}  {}  {}{}  repeat {}",
                        p.run.workers,
                        load(&p.run.load),
                        stop(&p.run.stop),
                        p.run
                            .warmup
                            .as_ref()
                            .map(|w| format!("  warmup {w}"))
                            .unwrap_or_default(),
                        p.run.repeat
                    );
                    if let Some(n) = p.run.stop_after_errors {
                        let _ = writeln!(
                            o,
                            "    stop after {n} error{}",
                            if n == 1 { "" } else { "s" }
                        );
                    }
                    super::stages::stage_lines(&mut o, &p.run.stages);
                    for r in &p.run.require {
                        let _ = writeln!(o, "    require rows({}) {} {}", r.table, r.op, r.value);
                    }
                    thresholds(&mut o, "    ", &p.run.expects);
                    if let Some(f) = &p.run.findmax {
                        let _ = writeln!(o, "    {}", f.listing());
                    }
                    for b in &p.body {
                        let _ = writeln!(o, "    expect {b}");
                    }
                }
            }
        }
    }
    o
}

/// `observe metrics`: what is scraped during the target's phases, and what is made of it.
fn observe_line(o: &mut String, m: &super::metrics::MetricsPlan) {
    let every = std::time::Duration::from_nanos(m.every_ns);
    let _ = write!(
        o,
        "  observe metrics of {}: {} every {every:?} (a slower scrape fails)",
        m.target,
        m.shown_url()
    );
    if !m.keep.is_empty() {
        let keep: Vec<String> = m.keep.iter().map(|k| format!("{k:?}")).collect();
        let _ = write!(o, ", keep {}", keep.join(", "));
    }
    if let Some(c) = &m.cpu {
        let _ = write!(o, ", server cpu = increase of {:?} summed", c.text);
    }
    o.push('\n');
}

/// The commit policy of a QWP ingest, as the listing shows it.
fn commit_line(c: Commit, p: &IngestPhase) -> String {
    match c {
        Commit::PerBatch => {
            "commit per_batch: each batch commits (its last message without FLAG_DEFER_COMMIT)"
                .to_string()
        }
        Commit::EveryRows { rows, cap } => {
            // The first batch boundary at or after `rows` (the last batch may be short).
            let at = rows.div_ceil(p.batch_rows.max(1)) * p.batch_rows;
            format!(
                "commit every {} rows: messages carry FLAG_DEFER_COMMIT, a worker commits after {} \
                 rows and at its end (server cap {} uncommitted rows)",
                thousands(rows),
                thousands(at),
                thousands(cap)
            )
        }
        Commit::NotQwp { rows } => format!(
            "commit every {} rows: not applied, `{}` has no deferred commit (QWP only)",
            thousands(rows),
            p.endpoint.kind
        ),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1000), "1,000");
        assert_eq!(super::thousands(1234567), "1,234,567");
    }
}
