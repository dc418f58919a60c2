//! A query type's bind program: its lets, binds, `binds from csv` rows and `route by`, compiled
//! once, then evaluated per instance as a pure function of (seed, query name, instance index).
//! docs/rng.md "Query binds" is the specification; this file must match it.
//!
//! The generators are `gen`'s nodes, compiled by `gen::Compiler` and drawn by `gen::Ctx`, the
//! same code as a schema column's, at a query instance's draw sites; `csv` reads the typed rows
//! of `binds from csv`.

mod csv;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;

use crate::gen::{Compiler, Ctx, Node, Shape, Within, V};

use super::schedule::Issued;
use super::sql::{Arg, Dialect, Layout};
use super::Instance;
use crate::gen::Cell;
use crate::plan::{Gen, QueryPhase, QueryPlan};
use crate::value::BindValue;

/// One query type, ready to produce instances. Shared by every worker (`instance` takes
/// `&self`).
#[derive(Clone, Debug)]
pub struct BindProgram {
    seed: u64,
    lets: Vec<Node>,
    /// Binds in declaration order: (slot = n - 1, generator).
    binds: Vec<(usize, Node)>,
    /// `binds from csv`: typed rows; column c binds `$(c+1)`.
    csv: Option<Vec<Vec<Cell>>>,
    route: Option<Node>,
    /// Slots: the largest placeholder number bound or used.
    slots: usize,
    /// Whether a generator reads `issued(q)`, and, once `in_run` says which run this query is
    /// part of, its order's counts and this query's position in it.
    counts_issued: bool,
    order: Option<(Arc<Issued>, usize)>,
    layout: Layout,
    /// `then sql`: the layouts of the further statements, which share the binds.
    then: Vec<Layout>,
    dialect: Dialect,
}

/// The prefix of a query's stream names: `query:<name>`; `:` cannot occur in a schema name,
/// so no query stream is a column's.
fn stream_prefix(query: &str) -> String {
    format!("query:{query}")
}

impl BindProgram {
    /// Compiles `q`'s generators. Files (`binds from csv`, `csv(...)`) are read now, relative
    /// to `base_dir`, else from the embedded stdlib. Lists are written in PostgreSQL's
    /// literals until `with_dialect` says otherwise.
    pub fn compile(q: &QueryPlan, seed: u64, base_dir: &Path) -> Result<BindProgram, String> {
        let read = |p: &str| crate::source::read_data(base_dir, p);
        let prefix = stream_prefix(&q.name);
        let mut let_shapes: Vec<(String, Shape)> = Vec::with_capacity(q.lets.len());
        let mut lets = Vec::with_capacity(q.lets.len());
        for (name, g) in &q.lets {
            let slot = format!("let:{name}");
            let (node, shape) = Compiler {
                read_file: &read,
                prefix: &prefix,
                name: &slot,
                within: Within::Query {
                    lets: &let_shapes,
                    binds: &[],
                },
            }
            .compile(g)
            .map_err(|e| format!("let {name}: {e}"))?;
            lets.push(node);
            let_shapes.push((name.clone(), shape));
        }

        let csv = match &q.csv {
            Some(plan) => {
                let rows = csv::read(plan, &read)?;
                if plan.columns.len() > q.placeholders as usize {
                    return Err(format!(
                        "{} CSV columns but the SQL has {} placeholders",
                        plan.columns.len(),
                        q.placeholders
                    ));
                }
                Some(rows)
            }
            None => None,
        };
        let csv_columns = q.csv.as_ref().map_or(0, |c| c.columns.len());
        let slots = q
            .binds
            .iter()
            .map(|b| b.index as usize)
            .chain([q.placeholders as usize, csv_columns])
            .max()
            .unwrap_or(0);
        let mut shapes: Vec<Option<Shape>> = vec![None; slots];
        for s in shapes.iter_mut().take(csv_columns) {
            *s = Some(Shape::One);
        }
        let mut binds = Vec::with_capacity(q.binds.len());
        for b in &q.binds {
            let slot = (b.index as usize).wrapping_sub(1);
            if slot >= slots || shapes[slot].is_some() {
                return Err(format!(
                    "`${}` is bound twice or is not a placeholder",
                    b.index
                ));
            }
            let name = format!("${}", b.index);
            let (node, shape) = Compiler {
                read_file: &read,
                prefix: &prefix,
                name: &name,
                within: Within::Query {
                    lets: &let_shapes,
                    binds: &shapes,
                },
            }
            .compile(&b.gen)
            .map_err(|e| format!("bind ${}: {e}", b.index))?;
            if shape == Shape::Window {
                return Err(format!(
                    "bind ${}: a window is not a bind value; bind its .start or .end",
                    b.index
                ));
            }
            shapes[slot] = Some(shape);
            binds.push((slot, node));
        }

        let route = match &q.route {
            Some(g) => Some(
                Compiler {
                    read_file: &read,
                    prefix: &prefix,
                    name: "route",
                    within: Within::Query {
                        lets: &let_shapes,
                        binds: &shapes,
                    },
                }
                .compile(g)
                .map_err(|e| format!("route by: {e}"))?
                .0,
            ),
            None => None,
        };

        let is_list = |n: u32| shapes.get(n as usize - 1) == Some(&Some(Shape::List));
        let layout = Layout::new(&q.sql, is_list);
        let then: Vec<Layout> = q
            .instance
            .then
            .iter()
            .map(|sql| Layout::new(sql, is_list))
            .collect();
        for l in std::iter::once(&layout).chain(&then) {
            if let Some(n) = l
                .numbers()
                .find(|&n| shapes.get(n as usize - 1).is_none_or(Option::is_none))
            {
                return Err(format!("the SQL uses `${n}`, which has no bind"));
            }
        }
        let mut counts_issued = false;
        let gens = q.lets.iter().map(|(_, g)| g);
        for g in gens.chain(q.binds.iter().map(|b| &b.gen)).chain(&q.route) {
            g.visit(&mut |g| counts_issued |= matches!(g, Gen::Issued { .. }));
        }
        Ok(BindProgram {
            seed,
            lets,
            binds,
            csv,
            route,
            slots,
            counts_issued,
            order: None,
            layout,
            then,
            dialect: Dialect::Postgres,
        })
    }

    /// Lists are inlined with `dialect`'s literals: the endpoint's, `Dialect::of_endpoint`.
    /// Only lists of timestamps, floats or booleans are written differently per dialect.
    pub fn with_dialect(mut self, dialect: Dialect) -> BindProgram {
        self.dialect = dialect;
        self
    }

    /// This query is at `position` in `phase`'s queries: `issued(q)` counts in that run's
    /// order. Without it, `issued(q)` is Null.
    pub fn in_run(mut self, phase: &QueryPhase, position: usize) -> BindProgram {
        if self.counts_issued {
            self.order = Some((Arc::new(Issued::new(phase, self.seed)), position));
        }
        self
    }

    /// The SQL's placeholder numbers, in the order `Instance::binds` holds their values.
    pub fn bind_order(&self) -> &[u32] {
        self.layout.order()
    }

    /// Instance `index` of this query type (`query`: its position in the phase, copied into
    /// the instance): lets, then the CSV row `index mod rows`, then binds in declaration
    /// order, then `route by`; the SQL with lists inlined and the other placeholders
    /// renumbered. Depends on nothing but the seed, the query's name and `index`.
    pub fn instance(&self, query: usize, index: u64) -> Result<Instance, String> {
        let (lets, args, issued) = self.draw(index);
        let route = self.route.as_ref().map(|node| match node {
            Node::Bind(slot) => args[*slot].as_ref().map_or_else(String::new, V::text),
            _ => Ctx::instance(self.seed, index, &lets, &args, &issued)
                .value(node)
                .text(),
        });
        let mut args: Vec<Arg> = args.into_iter().map(arg).collect();
        // Rendering moves the values it sends out of `args`: the further statements take
        // copies, the first statement the originals.
        let then = self
            .then
            .iter()
            .map(|l| l.render(&mut args.clone(), self.dialect))
            .collect::<Result<Vec<_>, String>>()?;
        let (sql, binds) = self.layout.render(&mut args, self.dialect)?;
        Ok(Instance {
            query,
            index,
            sql,
            binds,
            route,
            then,
        })
    }

    /// The values of instance `index` as text (docs/rng.md §6), `$N`'s in `texts[N - 1]`
    /// (empty when unbound): what a request template writes in place of its placeholders.
    /// `texts` is reused, so that a request allocates only what its values need.
    pub fn texts(&self, index: u64, texts: &mut Vec<String>) {
        let (_, args, _) = self.draw(index);
        texts.resize_with(self.slots, String::new);
        for (t, a) in texts.iter_mut().zip(&args) {
            t.clear();
            if let Some(v) = a {
                v.write_text(t);
            }
        }
    }

    /// Lets, then the CSV row `index mod rows`, then binds in declaration order: the lets'
    /// values and each slot's.
    fn draw(&self, index: u64) -> (Vec<V>, Vec<Option<V>>, Vec<u64>) {
        let issued = match &self.order {
            Some((order, own)) => order.before(*own, index),
            None => Vec::new(),
        };
        let mut lets: Vec<V> = Vec::with_capacity(self.lets.len());
        for node in &self.lets {
            let v = Ctx::instance(self.seed, index, &lets, &[], &issued).value(node);
            lets.push(v);
        }
        let mut args: Vec<Option<V>> = vec![None; self.slots];
        if let Some(rows) = &self.csv {
            let row = &rows[(index % rows.len() as u64) as usize];
            for (slot, c) in args.iter_mut().zip(row) {
                *slot = Some(V::One(c.clone()));
            }
        }
        for (slot, node) in &self.binds {
            let v = Ctx::instance(self.seed, index, &lets, &args, &issued).value(node);
            args[*slot] = Some(v);
        }
        (lets, args, issued)
    }
}

fn arg(v: Option<V>) -> Arg {
    match v {
        Some(V::One(c)) => Arg::One(bind_value(c)),
        Some(V::List(cs)) => Arg::List(cs.into_iter().map(bind_value).collect()),
        // Windows are refused when compiling; unbound slots are not in the SQL.
        Some(V::Window { .. }) | None => Arg::One(BindValue::Null),
    }
}

/// A generated value as a bind value; durations are integer nanoseconds.
fn bind_value(c: Cell) -> BindValue {
    match c {
        Cell::Null => BindValue::Null,
        Cell::Long(v) | Cell::Duration(v) => BindValue::Int(v),
        Cell::Double(v) => BindValue::Float(v),
        Cell::Bool(b) => BindValue::Bool(b),
        Cell::Str(s) => BindValue::Text(s),
        Cell::Timestamp(ns) => BindValue::Timestamp(ns),
    }
}
