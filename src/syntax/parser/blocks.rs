//! Walkers of the blocks that do something: ingest, query, hook and run, with their clauses.

use pest::iterators::Pair;

use super::{last, unexpected, Res, Rule, Walker};
use crate::diag::{Code, Diagnostic};
use crate::span::{Ident, Span};
use crate::syntax::ast::*;

impl Walker {
    pub(super) fn via(&self, p: Pair<'_, Rule>) -> Via {
        let inner = p.into_inner().next().expect("grammar: via");
        match inner.as_rule() {
            Rule::ident => Via::Name(self.ident(inner)),
            Rule::endpoint_list => {
                let span = self.span(&inner);
                Via::List(inner.into_inner().map(|i| self.ident(i)).collect(), span)
            }
            r => unexpected(r, "via"),
        }
    }

    pub(super) fn path(&self, p: Pair<'_, Rule>) -> Vec<Ident> {
        p.into_inner().map(|i| self.ident(i)).collect()
    }

    pub(super) fn clause_expr(&self, c: Pair<'_, Rule>) -> Res<Clause<Expr>> {
        let span = self.span(&c);
        let e = c
            .into_inner()
            .find(|p| p.as_rule() == Rule::expr)
            .expect("grammar: clause value");
        Ok(Clause {
            value: self.expr(e)?,
            span,
        })
    }

    pub(super) fn batch(&self, c: Pair<'_, Rule>) -> Res<Clause<Expr>> {
        let has_rows = c.clone().into_inner().any(|p| p.as_rule() == Rule::kw_rows);
        let clause = self.clause_expr(c)?;
        if has_rows {
            return Ok(clause);
        }
        let d = Diagnostic::error(
            Code::E0001,
            clause.value.span,
            "expected `rows` after the batch size",
        )
        .label("`batch` takes a number of rows: `batch 10_000 rows`");
        Err(match clause.value.kind {
            ExprKind::Duration(_) => {
                d.note("a batch is counted in rows; `duration D` ends a phase after a time")
            }
            ExprKind::Size(_) => d.note("a batch is counted in rows, not bytes"),
            _ => d,
        })
    }

    /// `commit every N rows` or `commit EXPR`.
    fn commit(&self, c: Pair<'_, Rule>) -> Res<Clause<CommitPolicy>> {
        let span = self.span(&c);
        let inner = c
            .into_inner()
            .find(|p| p.as_rule() != Rule::kw_commit)
            .expect("grammar: commit policy");
        let value = match inner.as_rule() {
            Rule::commit_every => {
                let e = inner
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::expr)
                    .expect("grammar: commit every N");
                CommitPolicy::EveryRows(self.expr(e)?)
            }
            _ => CommitPolicy::Value(self.expr(inner)?),
        };
        Ok(Clause { value, span })
    }

    pub(super) fn ingest(&self, p: Pair<'_, Rule>) -> Res<Ingest> {
        let span = self.span(&p);
        let mut ing = Ingest {
            name: Ident {
                name: String::new(),
                span,
            },
            when: None,
            into: vec![],
            rows: vec![],
            batch: vec![],
            workers: vec![],
            ack: vec![],
            setup: vec![],
            setup_sql: vec![],
            teardown: vec![],
            verify: vec![],
            calibrate: vec![],
            replay: vec![],
            duration: vec![],
            rate: vec![],
            probe: vec![],
            find_max: vec![],
            warmup: vec![],
            stages: vec![],
            commit: vec![],
            link: vec![],
            span,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_ingest => {}
                Rule::ident => ing.name = self.ident(c),
                Rule::when_clause => ing.when = Some(self.expr(last(c))?),
                Rule::into_clause => {
                    let span = self.span(&c);
                    let mut target = None;
                    let mut via = None;
                    let mut table = None;
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::kw_into | Rule::kw_via | Rule::kw_table => {}
                            Rule::ident => target = Some(self.ident(i)),
                            Rule::via_endpoints => via = Some(self.via(i)),
                            Rule::expr => table = Some(self.expr(i)?),
                            r => unexpected(r, "into"),
                        }
                    }
                    ing.into.push(Into {
                        target: target.expect("grammar: into target"),
                        via: via.expect("grammar: into via"),
                        table,
                        span,
                    });
                }
                Rule::rows_source => {
                    let span = self.span(&c);
                    let mut source = None;
                    let mut limit = None;
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::kw_rows | Rule::kw_limit => {}
                            Rule::rows_file => {
                                source = Some(RowsSource::File(self.string(last(i))?))
                            }
                            Rule::path => source = Some(RowsSource::Schema(self.path(i))),
                            Rule::expr => limit = Some(self.expr(i)?),
                            r => unexpected(r, "rows"),
                        }
                    }
                    ing.rows.push(Rows {
                        source: source.expect("grammar: rows source"),
                        limit,
                        span,
                    });
                }
                Rule::batch_clause => ing.batch.push(self.batch(c)?),
                Rule::workers_clause => ing.workers.push(self.clause_expr(c)?),
                Rule::ack_clause => ing.ack.push(self.clause_expr(c)?),
                Rule::setup_clause => ing.setup.push(self.clause_expr(c)?),
                Rule::setup_sql => {
                    let span = self.span(&c);
                    let mut it = c.into_inner().skip(2);
                    let d = it.next().expect("grammar: setup sql dialect");
                    let dialect = Ident {
                        name: d.as_str().to_string(),
                        span: self.span(&d),
                    };
                    let sql = self.string(it.next().expect("grammar: setup sql statement"))?;
                    ing.setup_sql.push(SetupSql { dialect, sql, span });
                }
                Rule::teardown_clause => ing.teardown.push(self.clause_expr(c)?),
                Rule::verify_clause => {
                    let span = self.span(&c);
                    let mut via = None;
                    let mut within = None;
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::kw_verify | Rule::kw_visible | Rule::kw_via | Rule::kw_within => {
                            }
                            Rule::path => via = Some(self.path(i)),
                            Rule::expr => within = Some(self.expr(i)?),
                            r => unexpected(r, "verify"),
                        }
                    }
                    ing.verify.push(Verify { via, within, span });
                }
                Rule::probe_clause => ing.probe.push(self.probe(c)?),
                Rule::calibrate_clause => ing.calibrate.push(self.span(&c)),
                Rule::replay_clause => {
                    let span = self.span(&c);
                    let mut budget = None;
                    let mut when = None;
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::kw_replay | Rule::kw_budget => {}
                            Rule::replay_when => when = Some(self.expr(last(i))?),
                            Rule::expr => budget = Some(self.expr(i)?),
                            r => unexpected(r, "replay"),
                        }
                    }
                    ing.replay.push(Replay { when, budget, span });
                }
                Rule::duration_clause => ing.duration.push(self.clause_expr(c)?),
                Rule::rate_clause => {
                    let span = self.span(&c);
                    ing.rate.push(Clause {
                        value: self.rate(c)?,
                        span,
                    })
                }
                Rule::findmax_clause => ing.find_max.push(self.find_max(c)?),
                Rule::warmup_clause => ing.warmup.push(self.clause_expr(c)?),
                Rule::stage_clause => ing.stages.push(self.stage(c)?),
                Rule::commit_clause => ing.commit.push(self.commit(c)?),
                Rule::link_clause => ing.link.push(self.clause_expr(c)?),
                r => unexpected(r, "ingest"),
            }
        }
        Ok(ing)
    }

    pub(super) fn query(&self, p: Pair<'_, Rule>) -> Res<Query> {
        let span = self.span(&p);
        let mut q = Query {
            name: Ident {
                name: String::new(),
                span,
            },
            label: vec![],
            repeat: None,
            sql: vec![],
            then: vec![],
            transaction: vec![],
            lets: vec![],
            binds: vec![],
            csv: vec![],
            route: vec![],
            expects: vec![],
            not_found: vec![],
            span,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_query => {}
                Rule::ident => q.name = self.ident(c),
                Rule::label_clause => q.label.push(self.clause_expr(c)?),
                Rule::sql_clause => {
                    let span = self.span(&c);
                    q.sql.push(Clause {
                        value: self.string(last(c))?,
                        span,
                    });
                }
                Rule::let_clause => q.lets.push(self.let_clause(c)?),
                Rule::bind_clause => q.binds.push(self.bind_clause(c)?),
                Rule::csv_binds => {
                    let span = self.span(&c);
                    let mut path = None;
                    let mut columns = Vec::new();
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::kw_binds | Rule::kw_from | Rule::kw_csv => {}
                            Rule::string => path = Some(self.string(i)?),
                            Rule::csv_column => {
                                let mut it = i.into_inner();
                                let n = self.ident(it.next().expect("grammar: csv column name"));
                                let t = self.ident(it.next().expect("grammar: csv column type"));
                                columns.push((n, t));
                            }
                            r => unexpected(r, "csv_binds"),
                        }
                    }
                    q.csv.push(CsvBinds {
                        path: path.expect("grammar: csv path"),
                        columns,
                        span,
                    });
                }
                Rule::query_for => {
                    let span = self.span(&c);
                    let mut it = c
                        .into_inner()
                        .filter(|p| !matches!(p.as_rule(), Rule::kw_for | Rule::kw_in));
                    let var = self.ident(it.next().expect("grammar: for variable"));
                    let values = self.expr(it.next().expect("grammar: for values"))?;
                    q.repeat = Some(Repeat { var, values, span });
                }
                Rule::then_clause => {
                    let span = self.span(&c);
                    q.then.push(Clause {
                        value: self.string(last(c))?,
                        span,
                    });
                }
                Rule::transaction_clause => q.transaction.push(self.span(&c)),
                Rule::route_clause => q.route.push(self.clause_expr(c)?),
                Rule::expect_clause => q.expects.push(self.expect(c)?),
                Rule::not_found_clause => q.not_found.push(self.clause_expr(c)?),
                r => unexpected(r, "query"),
            }
        }
        Ok(q)
    }

    pub(super) fn placeholder(&self, p: &Pair<'_, Rule>) -> Res<u32> {
        match p.as_str()[1..].parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            Ok(_) => Err(self.invalid(p, "placeholders start at `$1`".to_string())),
            Err(_) => Err(self.invalid(p, format!("placeholder `{}` is too large", p.as_str()))),
        }
    }

    pub(super) fn expect(&self, c: Pair<'_, Rule>) -> Res<Expect> {
        let span = self.span(&c);
        let inner = c.into_inner().nth(1).expect("grammar: expect body");
        match inner.as_rule() {
            Rule::status_expect => Ok(Expect::Status(self.expr(last(inner))?, span)),
            Rule::body_expect => {
                let check = last(inner);
                match check.as_rule() {
                    Rule::body_json => Ok(Expect::Body(
                        BodyCheck::Json(check.into_inner().nth(1).map(|s| s.as_str().to_string())),
                        span,
                    )),
                    _ => Ok(Expect::Body(
                        BodyCheck::Contains(self.expr(last(check))?),
                        span,
                    )),
                }
            }
            Rule::expr => Ok(Expect::Condition(self.expr(inner)?, span)),
            r => unexpected(r, "expect"),
        }
    }

    pub(super) fn hook(&self, p: Pair<'_, Rule>) -> Res<Hook> {
        let span = self.span(&p);
        let mut name = None;
        let mut path = None;
        let mut entries = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_hook | Rule::kw_from => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::string => path = Some(self.string(c)?),
                Rule::hook_entries => entries = c.into_inner().map(|i| self.ident(i)).collect(),
                r => unexpected(r, "hook"),
            }
        }
        Ok(Hook {
            name: name.expect("grammar: hook name"),
            path: path.expect("grammar: hook path"),
            entries,
            span,
        })
    }

    pub(super) fn run(&self, p: Pair<'_, Rule>) -> Res<Run> {
        let span = self.span(&p);
        let mut r = Run {
            name: Ident {
                name: String::new(),
                span,
            },
            when: None,
            against: vec![],
            queries: vec![],
            request: vec![],
            lets: vec![],
            binds: vec![],
            workers: vec![],
            count: vec![],
            duration: vec![],
            warmup: vec![],
            repeat: vec![],
            stop_after: vec![],
            rate: vec![],
            require: vec![],
            expects: vec![],
            check_same: vec![],
            stages: vec![],
            find_max: vec![],
            span,
        };
        for c in p.into_inner() {
            let cspan = self.span(&c);
            match c.as_rule() {
                Rule::kw_run => {}
                Rule::when_clause => r.when = Some(self.expr(last(c))?),
                Rule::stage_clause => r.stages.push(self.stage(c)?),
                Rule::ident => r.name = self.ident(c),
                Rule::against_clause => r.against.push(self.against(c, cspan)),
                Rule::queries_clause => r.queries.push(Clause {
                    value: self.query_selectors(c)?,
                    span: cspan,
                }),
                Rule::request_clause => r.request.push(Clause {
                    value: self.request_spec(c)?,
                    span: cspan,
                }),
                Rule::let_clause => r.lets.push(self.let_clause(c)?),
                Rule::bind_clause => r.binds.push(self.bind_clause(c)?),
                Rule::workers_clause => r.workers.push(self.clause_expr(c)?),
                Rule::run_count => r.count.push(Clause {
                    value: self.run_count(c)?,
                    span: cspan,
                }),
                Rule::duration_clause => r.duration.push(self.clause_expr(c)?),
                Rule::warmup_clause => r.warmup.push(self.clause_expr(c)?),
                Rule::repeat_clause => r.repeat.push(self.clause_expr(c)?),
                Rule::stop_clause => r.stop_after.push(self.clause_expr(c)?),
                Rule::rate_clause => r.rate.push(Clause {
                    value: self.rate(c)?,
                    span: cspan,
                }),
                Rule::require_clause => r.require.push(self.clause_expr(c)?),
                Rule::expect_clause => r.expects.push(self.expect(c)?),
                Rule::check_clause => r.check_same.push(cspan),
                Rule::findmax_clause => r.find_max.push(self.find_max(c)?),
                r => unexpected(r, "run"),
            }
        }
        Ok(r)
    }

    /// `let NAME = EXPR` of a query or of a request template.
    fn let_clause(&self, c: Pair<'_, Rule>) -> Res<Let> {
        let span = self.span(&c);
        let mut it = c.into_inner().skip(1);
        let name = self.ident(it.next().expect("grammar: let name"));
        let value = self.expr(it.next().expect("grammar: let value"))?;
        Ok(Let { name, value, span })
    }

    /// `bind $N = EXPR` of a query or of a request template.
    fn bind_clause(&self, c: Pair<'_, Rule>) -> Res<Bind> {
        let span = self.span(&c);
        let mut it = c.into_inner().skip(1);
        let ph = it.next().expect("grammar: bind placeholder");
        let index_span = self.span(&ph);
        let index = self.placeholder(&ph)?;
        let value = self.expr(it.next().expect("grammar: bind value"))?;
        Ok(Bind {
            index,
            index_span,
            value,
            span,
        })
    }

    /// `against TARGET[.ENDPOINT] [via ENDPOINT | via [E, ...]]`.
    fn against(&self, c: Pair<'_, Rule>, span: Span) -> Against {
        let mut target = Vec::new();
        let mut via = None;
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_against | Rule::kw_via => {}
                Rule::path => target = self.path(i),
                Rule::via_endpoints => via = Some(self.via(i)),
                r => unexpected(r, "against"),
            }
        }
        Against { target, via, span }
    }

    /// `queries SELECTOR [weight W], ...`.
    fn query_selectors(&self, c: Pair<'_, Rule>) -> Res<Vec<QuerySelector>> {
        let mut sels = Vec::new();
        for s in c.into_inner().skip(1) {
            let sspan = self.span(&s);
            let mut path = Vec::new();
            let mut glob = false;
            let mut weight = None;
            for i in s.into_inner() {
                match i.as_rule() {
                    Rule::query_pattern => {
                        for part in i.into_inner() {
                            match part.as_rule() {
                                Rule::ident => path.push(self.ident(part)),
                                Rule::glob => glob = true,
                                r => unexpected(r, "query_pattern"),
                            }
                        }
                    }
                    Rule::kw_weight => {}
                    Rule::expr => weight = Some(self.expr(i)?),
                    r => unexpected(r, "query_selector"),
                }
            }
            sels.push(QuerySelector {
                path,
                glob,
                weight,
                span: sspan,
            });
        }
        Ok(sels)
    }

    /// `request METHOD "PATH" [body "TEXT"]` or `request HOOK.FUNCTION`.
    fn request_spec(&self, c: Pair<'_, Rule>) -> Res<RequestSpec> {
        let inner = last(c);
        if inner.as_rule() != Rule::fixed_request {
            return Ok(RequestSpec::Hook(self.path(inner)));
        }
        let mut parts = inner.into_inner();
        let method = parts.next().expect("grammar: method").as_str();
        let path = self.expr(parts.next().expect("grammar: request path"))?;
        // `body` keyword, then the body expression.
        let body = match parts.nth(1) {
            Some(b) => Some(self.expr(b)?),
            None => None,
        };
        Ok(RequestSpec::Fixed {
            method: method.to_string(),
            path,
            body,
        })
    }

    /// `count N [per query]`.
    fn run_count(&self, c: Pair<'_, Rule>) -> Res<RunCount> {
        let mut count = None;
        let mut per_query = false;
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_count => {}
                Rule::expr => count = Some(self.expr(i)?),
                Rule::per_query => per_query = true,
                r => unexpected(r, "count"),
            }
        }
        Ok(RunCount {
            count: count.expect("grammar: count value"),
            per_query,
        })
    }

    /// `rate R [fixed | poisson]`.
    fn rate(&self, c: Pair<'_, Rule>) -> Res<Rate> {
        let mut rate = None;
        let mut arrival = None;
        for i in c.into_inner() {
            match i.as_rule() {
                Rule::kw_rate => {}
                Rule::expr => rate = Some(self.expr(i)?),
                Rule::arrival => {
                    arrival = Some(if i.as_str() == "poisson" {
                        Arrival::Poisson
                    } else {
                        Arrival::Fixed
                    })
                }
                r => unexpected(r, "rate"),
            }
        }
        Ok(Rate {
            rate: rate.expect("grammar: rate value"),
            arrival,
        })
    }

    // -------------------------------------------------------------------------------------------
    // Expressions
}
