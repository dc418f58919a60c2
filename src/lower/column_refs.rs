//! The references between a schema's columns: a column may not depend on itself, and a
//! per-series column may not read a per-row one. Linear in columns and references: the search
//! once started a walk from every column and copied its path at every step, so a chain of 1,000
//! columns took 15 s to check.

use std::collections::HashMap;

use crate::check::Eval;
use crate::diag::{Code, Diagnostic};
use crate::plan::ColumnPlan;
use crate::syntax::ast;

pub(super) fn check_column_refs(ev: &Eval<'_>, s: &ast::Schema, columns: &[ColumnPlan]) -> bool {
    let index: HashMap<&str, usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let deps: Vec<Vec<usize>> = columns
        .iter()
        .map(|c| {
            let mut names = Vec::new();
            c.gen.columns_used(&mut names);
            names
                .iter()
                .filter_map(|n| index.get(n.as_str()).copied())
                .collect()
        })
        .collect();
    let span_of = |name: &str| {
        s.columns
            .iter()
            .find(|c| c.name.name == name)
            .map_or(s.name.span, |c| c.name.span)
    };
    let mut ok = true;
    for cycle in cycles(&deps) {
        let first = &columns[cycle[0]].name;
        let chain: Vec<&str> = cycle
            .iter()
            .chain([&cycle[0]])
            .map(|&i| columns[i].name.as_str())
            .collect();
        ev.error(
            Diagnostic::error(
                Code::E0208,
                span_of(first),
                format!("column `{first}` depends on itself"),
            )
            .label("this column's value needs its own value")
            .note(format!("the chain: {}", chain.join(" -> "))),
        );
        ok = false;
    }
    for (i, c) in columns.iter().enumerate() {
        if c.per != "series" {
            continue;
        }
        for &j in &deps[i] {
            let other = &columns[j];
            if other.per == "row" {
                ev.error(
                    Diagnostic::error(
                        Code::E0501,
                        span_of(&c.name),
                        format!(
                            "`{}` is drawn once per series but reads `{}`, which changes every row",
                            c.name, other.name
                        ),
                    )
                    .label("a per-series value cannot depend on a per-row one")
                    .also(span_of(&other.name), "drawn per row")
                    .note(format!(
                        "make `{}` per row, or `{}` per series",
                        c.name, other.name
                    )),
                );
                ok = false;
            }
        }
    }
    ok
}

/// One cycle per strongly connected component that has one (Tarjan's algorithm, with its own
/// stack so that a long chain cannot overflow the thread's), each from its first column in
/// declaration order, by a shortest path back to it.
fn cycles(deps: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = deps.len();
    let (mut order, mut low) = (vec![UNSEEN; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut out, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..n {
        if order[root] != UNSEEN {
            continue;
        }
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        let mut work = vec![(root, 0usize)];
        while let Some(top) = work.last_mut() {
            let v = top.0;
            if let Some(&w) = deps[v].get(top.1) {
                top.1 += 1;
                if order[w] == UNSEEN {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] != order[v] {
                continue;
            }
            let mut members = Vec::new();
            while let Some(w) = stack.pop() {
                on_stack[w] = false;
                members.push(w);
                if w == v {
                    break;
                }
            }
            let first = *members.iter().min().expect("a component has a member");
            if members.len() > 1 || deps[first].contains(&first) {
                out.push(path_back(deps, first, &members));
            }
        }
    }
    out.sort();
    out
}

/// A shortest path from `start` back to itself within `members` (breadth first): `start` and
/// the columns after it, without the final return to `start`.
fn path_back(deps: &[Vec<usize>], start: usize, members: &[usize]) -> Vec<usize> {
    let inside: std::collections::HashSet<usize> = members.iter().copied().collect();
    let mut parent: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &deps[v] {
            if w == start {
                let mut path = vec![v];
                while let Some(&p) = parent.get(path.last().expect("not empty")) {
                    path.push(p);
                }
                path.reverse();
                return path;
            }
            if inside.contains(&w) && !parent.contains_key(&w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}
