//! Queries: a SQL template, its placeholders and binds (expressions or CSV files), lowered into
//! a query plan.

use super::expect::thresholds;
use super::statements::{instance_rules, per_instance, then_sql};
use super::values::{as_gen, missing, single};
use crate::check::{Ev, Eval, InstanceId, RunQueries, Scope};
use crate::diag::{Code, Diagnostic};
use crate::plan::*;
use crate::span::Span;
use crate::syntax::ast;
use crate::value::Value;
use std::collections::BTreeSet;

/// The largest placeholder number. A number sizes a query's bind slots, so it must not come
/// from the text unbounded (`$99999999` took 22 GB); 65,535 is as many parameters as
/// PostgreSQL's Bind message can count.
pub const MAX_PLACEHOLDER: u32 = 65_535;

/// `$n` tokens of SQL text that are not placeholders: `$0` or past [`MAX_PLACEHOLDER`].
pub fn bad_placeholders(sql: &str) -> Vec<String> {
    // Comments are scanned too: a bad token there is reported, as it always was.
    dollar_numbers(sql, false)
        .filter(|&(digits, _)| placeholder_number(digits).is_none())
        .map(|(_, token)| token.to_string())
        .collect()
}

/// `$n` placeholders of SQL text, outside quotes and comments.
pub fn placeholders(sql: &str) -> Vec<u32> {
    dollar_numbers(sql, true)
        .filter_map(|(digits, _)| placeholder_number(digits))
        .collect()
}

fn placeholder_number(digits: &str) -> Option<u32> {
    digits
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_PLACEHOLDER).contains(n))
}

/// Every `$DIGITS` token outside quotes (and outside `--` comments with `skip_comments`), as
/// (the digits, the whole token).
fn dollar_numbers(sql: &str, skip_comments: bool) -> impl Iterator<Item = (&str, &str)> {
    let b = sql.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            match b[i] {
                q @ (b'\'' | b'"') => {
                    i += 1;
                    while i < b.len() && b[i] != q {
                        i += 1;
                    }
                }
                b'-' if skip_comments && b.get(i + 1) == Some(&b'-') => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'$' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                    let start = i + 1;
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                    return Some((&sql[start..i], &sql[start - 1..i]));
                }
                _ => {}
            }
            i += 1;
        }
        None
    })
}

pub(super) const CSV_TYPES: &[&str] = &[
    "text",
    "varchar",
    "int",
    "bigint",
    "long",
    "double",
    "float8",
    "bool",
    "boolean",
    "timestamp",
    "timestamptz",
];

pub(super) fn csv_type_ty(t: &str) -> Ty {
    match t {
        "int" | "bigint" | "long" => Ty::Long,
        "double" | "float8" => Ty::Double,
        "bool" | "boolean" => Ty::Bool,
        "timestamp" | "timestamptz" => Ty::Timestamp,
        _ => Ty::Str,
    }
}

/// `q` lowered: one plan, or one per member of its family (`query NAME for VAR in VALUES`),
/// which share `weight`. `run` lists the run's queries, which `issued(q)` may count
/// (`RunQueries::Any` for a query checked on its own).
pub fn lower_family(
    ev: &Eval<'_>,
    inst: InstanceId,
    q: &ast::Query,
    weight: f64,
    run: &RunQueries,
) -> Ev<Vec<QueryPlan>> {
    let Some(r) = &q.repeat else {
        return lower_query(ev, inst, q, weight, None, run).map(|p| vec![p]);
    };
    let values = super::repeat::values(ev, inst, r)?;
    let members = values.len() as u64;
    let mut plans = Vec::with_capacity(values.len());
    let mut ok = true;
    for value in values {
        let f = Family {
            query: q.name.name.clone(),
            var: r.var.name.clone(),
            value,
            members,
        };
        match lower_query(ev, inst, q, weight / members as f64, Some(&f), run) {
            Some(p) => plans.push(p),
            None => ok = false,
        }
    }
    ok.then_some(plans)
}

/// One member of a query family: `family.var` bound to `family.value` in the query.
pub type Member<'a> = Option<&'a Family>;

/// One query, or one member of a family, lowered for a run whose queries `run` lists.
pub fn lower_query(
    ev: &Eval<'_>,
    inst: InstanceId,
    q: &ast::Query,
    weight: f64,
    member: Member<'_>,
    run: &RunQueries,
) -> Ev<QueryPlan> {
    let mut scope = Scope::new(inst);
    if let Some(f) = member {
        scope.push_local(f.var.clone(), Value::Int(f.value), Some(Ty::Long));
    }
    let texts = scope.clone();
    scope.binds = Some(Vec::new());
    scope.run = run.clone();
    let (sql, sql_span) = query_sql(ev, q, &texts)?;
    let then = then_sql(ev, q, &texts);
    // The statements of an instance share its binds: `then sql` uses the same placeholders.
    let mut used = placeholders(&sql);
    for (t, _) in then.iter().flatten() {
        used.extend(placeholders(t));
    }
    // A set, so that the checks below cost the numbers used, not their product.
    let used_set: BTreeSet<u32> = used.iter().copied().collect();
    let max = used_set.last().copied().unwrap_or(0);
    let mut ok = placeholders_fit(ev, &sql, sql_span, &used_set, max) && then.is_some();
    for (t, span) in then.iter().flatten() {
        // Its tokens only: gaps are judged once, over all the statements, above.
        ok &= placeholders_fit(ev, t, *span, &BTreeSet::new(), 0);
    }
    let label = match member {
        // A member's name tells it apart: `update[3]`, also its label unless it has its own.
        Some(f) if q.label.is_empty() => format!("{}[{}]", q.name.name, f.value),
        _ => query_label(ev, q, &scope, &mut ok),
    };
    let lets = query_lets(ev, &q.lets, &mut scope, &mut ok);
    let csv_plan = csv_binds(ev, inst, q, &mut scope, &mut ok);
    let text = Template {
        what: "SQL",
        span: sql_span,
        owner: (q.name.span, "in this query"),
    };
    let binds = expr_binds(
        ev,
        &q.binds,
        &used,
        &text,
        csv_plan.is_some(),
        &mut scope,
        &mut ok,
    );
    ok &= all_bound(ev, &used_set, &text, &scope);
    if let Some(plan) = &csv_plan {
        if plan.columns.len() as u32 > max {
            ev.error(
                Diagnostic::error(
                    Code::E0601,
                    q.csv[0].span,
                    format!(
                        "{} CSV columns but the SQL has {} placeholder{}",
                        plan.columns.len(),
                        max,
                        if max == 1 { "" } else { "s" }
                    ),
                )
                .label("CSV columns bind $1, $2, ... in order"),
            );
            ok = false;
        }
    }
    let route = query_route(ev, q, &scope, &mut ok);
    let run_wide: Vec<ast::Expect> = q
        .expects
        .iter()
        .filter(|e| !per_instance(e))
        .cloned()
        .collect();
    let expects = thresholds(ev, &run_wide, &scope, true);
    let then_texts = then
        .unwrap_or_default()
        .into_iter()
        .map(|(t, _)| t)
        .collect();
    let instance = instance_rules(ev, q, then_texts, &scope);
    ok.then_some(QueryPlan {
        name: match member {
            Some(f) => format!("{}[{}]", q.name.name, f.value),
            None => q.name.name.clone(),
        },
        label,
        sql,
        placeholders: max,
        lets,
        binds,
        csv: csv_plan,
        route,
        weight,
        expects: expects?,
        instance: instance?,
        family: member.cloned(),
    })
}

/// The `sql` clause as literal text, with its span; `scope` holds a family member's variable.
fn query_sql(ev: &Eval<'_>, q: &ast::Query, scope: &Scope) -> Option<(String, Span)> {
    let Some(sql_clause) = single(ev, &q.sql, |c| c.span, "sql") else {
        return ev.fail(missing(
            q.name.span,
            "sql",
            "sql \"SELECT count(*) FROM cpu WHERE hostname = $1\"",
        ));
    };
    let span = sql_clause.value.span;
    match ev.string(&sql_clause.value, scope)?.as_lit() {
        Some(s) => Some((s, span)),
        None => ev.fail(
            Diagnostic::error(Code::E0203, span, "SQL cannot contain env(...) values")
                .label("secrets do not belong in SQL text"),
        ),
    }
}

/// Placeholders are `$1` up to [`MAX_PLACEHOLDER`], used without gaps.
fn placeholders_fit(
    ev: &Eval<'_>,
    sql: &str,
    span: Span,
    used_set: &BTreeSet<u32>,
    max: u32,
) -> bool {
    let mut ok = true;
    let mut seen = std::collections::HashSet::new();
    let bad: Vec<String> = bad_placeholders(sql)
        .into_iter()
        .filter(|b| seen.insert(b.clone()))
        .collect();
    if !bad.is_empty() {
        // One diagnostic for the whole SQL, however many there are.
        let shown: Vec<String> = bad.iter().take(3).map(|b| format!("`{b}`")).collect();
        let more = match bad.len() - shown.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        let is = if bad.len() == 1 {
            "is not a placeholder"
        } else {
            "are not placeholders"
        };
        ev.error(
            Diagnostic::error(
                Code::E0601,
                span,
                format!("{}{more} {is}", shown.join(", ")),
            )
            .label(format!(
                "placeholders run $1, $2, ... up to ${MAX_PLACEHOLDER}"
            )),
        );
        ok = false;
    }
    let gaps = number_ranges((1..=max).filter(|n| !used_set.contains(n)));
    if !gaps.is_empty() {
        ev.error(
            Diagnostic::error(
                Code::E0601,
                span,
                format!("the SQL uses ${max} but not {}", describe_ranges(&gaps)),
            )
            .label("placeholders must run $1, $2, ... without gaps"),
        );
        ok = false;
    }
    ok
}

/// `label "..."`, the query's name without one.
fn query_label(ev: &Eval<'_>, q: &ast::Query, scope: &Scope, ok: &mut bool) -> String {
    let Some(c) = single(ev, &q.label, |c| c.span, "label") else {
        return q.name.name.clone();
    };
    match ev.eval(&c.value, scope) {
        Some(Value::Str(t)) => t.redacted(),
        Some(other) => {
            ev.error(ev.mismatch(c.value.span, "a string", &other, scope));
            *ok = false;
            String::new()
        }
        None => {
            *ok = false;
            String::new()
        }
    }
}

/// The text whose `$N` the binds fill: a query's SQL or a request template's path and body.
pub(super) struct Template {
    /// "SQL" or "request".
    pub what: &'static str,
    pub span: Span,
    /// The query or run it belongs to, and how a diagnostic points at it.
    pub owner: (Span, &'static str),
}

/// `let NAME = EXPR`, each visible to the lets and binds after it. A let that fails is
/// poisoned, so its uses do not report again.
pub(super) fn query_lets(
    ev: &Eval<'_>,
    lets_in: &[ast::Let],
    scope: &mut Scope,
    ok: &mut bool,
) -> Vec<(String, Gen)> {
    let mut lets = Vec::new();
    for l in lets_in {
        if scope.local(&l.name.name).is_some() {
            ev.error(
                Diagnostic::error(
                    Code::E0103,
                    l.name.span,
                    format!("`{}` is defined twice", l.name),
                )
                .label("duplicate let"),
            );
            *ok = false;
            continue;
        }
        let Some(v) = ev.eval(&l.value, scope) else {
            scope.poisoned.push(l.name.name.clone());
            *ok = false;
            continue;
        };
        let Some(ty) = ev.value_ty(&v, scope) else {
            ev.error(ev.mismatch(l.value.span, "a value or a generator", &v, scope));
            scope.poisoned.push(l.name.name.clone());
            *ok = false;
            continue;
        };
        lets.push((l.name.name.clone(), as_gen(&v)));
        scope.push_local(
            l.name.name.clone(),
            Value::Gen(Box::new(Gen::Let {
                name: l.name.name.clone(),
            })),
            Some(ty),
        );
    }
    lets
}

/// `binds from csv`: its columns bind `$1`, `$2`, ... in order.
fn csv_binds(
    ev: &Eval<'_>,
    inst: InstanceId,
    q: &ast::Query,
    scope: &mut Scope,
    ok: &mut bool,
) -> Option<CsvPlan> {
    let c = single(ev, &q.csv, |c| c.span, "binds from csv")?;
    let binds = scope.binds.as_mut().expect("a query scope has binds");
    match lower_csv(ev, inst, c) {
        Some(plan) => {
            for (i, (_, t)) in plan.columns.iter().enumerate() {
                binds.push((i as u32 + 1, csv_type_ty(t)));
            }
            Some(plan)
        }
        None => {
            // Keep the declared columns bound so one CSV problem does not cascade into
            // "no bind" errors for every placeholder.
            for (i, (_, t)) in c.columns.iter().enumerate() {
                binds.push((i as u32 + 1, csv_type_ty(&t.name)));
            }
            *ok = false;
            None
        }
    }
}

/// `bind $N = EXPR`: used by the text, bound once, not a window.
pub(super) fn expr_binds(
    ev: &Eval<'_>,
    binds_in: &[ast::Bind],
    used: &[u32],
    text: &Template,
    has_csv: bool,
    scope: &mut Scope,
    ok: &mut bool,
) -> Vec<BindPlan> {
    let mut binds = Vec::new();
    for b in binds_in {
        if !used.contains(&b.index) {
            ev.error(
                Diagnostic::error(
                    Code::E0601,
                    b.index_span,
                    format!("the {} has no `${}`", text.what, b.index),
                )
                .label("this bind is never used")
                .also(
                    text.span,
                    format!(
                        "placeholders in this {}: {}",
                        text.what,
                        describe_placeholders(used)
                    ),
                ),
            );
            *ok = false;
            continue;
        }
        let bound = scope.binds.as_ref().expect("a query scope has binds");
        if bound.iter().any(|(i, _)| *i == b.index) {
            ev.error(
                Diagnostic::error(
                    Code::E0601,
                    b.index_span,
                    format!("`${}` is bound twice", b.index),
                )
                .label(if has_csv {
                    "already bound by a CSV column or an earlier bind"
                } else {
                    "already bound above"
                }),
            );
            *ok = false;
            continue;
        }
        // A bind that fails still counts as bound, so one mistake is reported once.
        let ty = match ev.eval(&b.value, scope) {
            None => None,
            Some(v) => match ev.value_ty(&v, scope) {
                None => {
                    ev.error(ev.mismatch(b.value.span, "a value or a generator", &v, scope));
                    None
                }
                Some(Ty::Window) => {
                    ev.error(
                        Diagnostic::error(
                            Code::E0201,
                            b.value.span,
                            "a window is not a bind value",
                        )
                        .label("bind its `.start` or `.end`"),
                    );
                    *ok = false;
                    continue;
                }
                Some(ty) => Some((ty, v)),
            },
        };
        let binds_so_far = scope.binds.as_mut().expect("a query scope has binds");
        let Some((ty, v)) = ty else {
            binds_so_far.push((b.index, Ty::Str));
            *ok = false;
            continue;
        };
        binds_so_far.push((b.index, ty));
        binds.push(BindPlan {
            index: b.index,
            gen: as_gen(&v),
        });
    }
    binds
}

/// Every placeholder the text uses has a bind.
pub(super) fn all_bound(
    ev: &Eval<'_>,
    used_set: &BTreeSet<u32>,
    text: &Template,
    scope: &Scope,
) -> bool {
    let bound: BTreeSet<u32> = scope
        .binds
        .as_ref()
        .expect("a query scope has binds")
        .iter()
        .map(|(i, _)| *i)
        .collect();
    let unbound = number_ranges(used_set.iter().copied().filter(|n| !bound.contains(n)));
    let Some(&(first, _)) = unbound.first() else {
        return true;
    };
    let message = match unbound[..] {
        [(a, b)] if a == b => format!("`${a}` has no bind"),
        _ => format!("binds {} are missing", describe_ranges(&unbound)),
    };
    ev.error(
        Diagnostic::error(Code::E0601, text.span, message)
            .label(format!("add `bind ${first} = ...`"))
            .also(text.owner.0, text.owner.1),
    );
    false
}

/// `route by EXPR`: a bind (a generator), so that routing follows the values sent.
fn query_route(ev: &Eval<'_>, q: &ast::Query, scope: &Scope, ok: &mut bool) -> Option<Gen> {
    let c = single(ev, &q.route, |c| c.span, "route by")?;
    match ev.eval(&c.value, scope) {
        Some(v @ Value::Gen(_)) => Some(as_gen(&v)),
        Some(other) => {
            ev.error(
                Diagnostic::error(
                    Code::E0603,
                    c.value.span,
                    format!("`route by` needs a bind, found {}", other.kind()),
                )
                .label("route by a value that changes per query, such as `$1`"),
            );
            *ok = false;
            None
        }
        None => {
            *ok = false;
            None
        }
    }
}

/// Increasing numbers as runs of consecutive ones: 2, 3, 4, 7 is (2, 4), (7, 7).
pub(super) fn number_ranges(numbers: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for n in numbers {
        match out.last_mut() {
            Some((_, hi)) if hi.checked_add(1) == Some(n) => *hi = n,
            _ => out.push((n, n)),
        }
    }
    out
}

/// `$2`, `$4..$9`, ...: a handful of runs, then how many more, so a message stays one line.
pub(super) fn describe_ranges(ranges: &[(u32, u32)]) -> String {
    const SHOWN: usize = 5;
    let mut parts: Vec<String> = ranges
        .iter()
        .take(SHOWN)
        .map(|&(a, b)| match b - a {
            0 => format!("${a}"),
            1 => format!("${a}, ${b}"),
            _ => format!("${a}..${b}"),
        })
        .collect();
    if ranges.len() > SHOWN {
        parts.push(format!("{} more", ranges.len() - SHOWN));
    }
    match &parts[..] {
        [init @ .., last] if !init.is_empty() => format!("{} and {last}", init.join(", ")),
        _ => parts.join(""),
    }
}

pub(super) fn describe_placeholders(used: &[u32]) -> String {
    if used.is_empty() {
        return "none".to_string();
    }
    let mut u = used.to_vec();
    u.sort_unstable();
    u.dedup();
    describe_ranges(&number_ranges(u.into_iter()))
}

pub(super) fn lower_csv(ev: &Eval<'_>, inst: InstanceId, c: &ast::CsvBinds) -> Ev<CsvPlan> {
    let Some(path) = c.path.as_plain() else {
        return ev.fail(
            Diagnostic::error(Code::E0602, c.path.span, "CSV paths cannot interpolate")
                .label("write the path literally"),
        );
    };
    let table = crate::check::read_csv_header(ev, inst, &path, c.path.span)?;
    let mut ok = true;
    let mut columns = Vec::new();
    for (name, ty) in &c.columns {
        if !CSV_TYPES.contains(&ty.name.as_str()) {
            ev.error(
                Diagnostic::error(
                    Code::E0602,
                    ty.span,
                    format!("unknown CSV column type `{ty}`"),
                )
                .label("not a CSV bind type")
                .note(format!("types: {}", CSV_TYPES.join(", "))),
            );
            ok = false;
        }
        if !table.header.contains(&name.name) {
            let mut d = Diagnostic::error(
                Code::E0602,
                name.span,
                format!("`{path}` has no column `{name}`"),
            )
            .label("not in the CSV header")
            .note(table.header_note());
            if let Some(s) = crate::diag::suggest(
                &name.name,
                table.quotable_header().iter().map(String::as_str),
            ) {
                d = d.note(format!("did you mean `{s}`?"));
            }
            ev.error(d);
            ok = false;
        }
        columns.push((name.name.clone(), ty.name.clone()));
    }
    if table.rows == 0 {
        ev.error(
            Diagnostic::error(
                Code::E0602,
                c.path.span,
                format!("`{path}` has a header but no rows"),
            )
            .label("nothing to bind"),
        );
        ok = false;
    }
    ok.then_some(CsvPlan {
        path: crate::check::root_relative(ev, inst, &path),
        columns,
        rows: table.rows,
    })
}
