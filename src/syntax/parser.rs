//! The pest parser and one walker per rule that builds an AST node. Pest types stay in this
//! module; a catch-all arm names the rule it did not expect, so a grammar change that the walkers
//! miss fails loudly in tests instead of silently dropping input.

use std::sync::LazyLock;

use pest::iterators::{Pair, Pairs};
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest::Parser as _;
use pest_derive::Parser;

use super::ast::*;
use super::literal;
use crate::diag::{Code, Diagnostic};
use crate::span::{FileId, Ident, Span};

// pest_generator resolves the grammar path against CARGO_MANIFEST_DIR first, so the grammar can
// live in the top-level `grammar/` folder.
#[derive(Parser)]
#[grammar = "grammar/workload.pest"]
pub(crate) struct WlParser;

pub(crate) type Res<T> = Result<T, Diagnostic>;

/// The end of the last token in `text[from..to]`, skipping whitespace and comments; `from` when
/// there is none.
fn token_end(text: &str, from: usize, to: usize) -> usize {
    let text = &text[..to];
    let (mut i, mut end) = (from, from);
    while let Some(c) = text[i..].chars().next() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            i = rest.find('\n').map_or(to, |n| i + n);
        } else if let Some(body) = rest.strip_prefix("/*") {
            i = body.find("*/").map_or(to, |n| i + 2 + n + 2);
        } else {
            i += c.len_utf8();
            if !c.is_whitespace() {
                end = i;
            }
        }
    }
    end
}

static PRATT: LazyLock<PrattParser<Rule>> = LazyLock::new(|| {
    PrattParser::new()
        .op(Op::infix(Rule::or, Assoc::Left))
        .op(Op::infix(Rule::and, Assoc::Left))
        .op(Op::prefix(Rule::not))
        .op(Op::infix(Rule::eq, Assoc::Left)
            | Op::infix(Rule::ne, Assoc::Left)
            | Op::infix(Rule::lt, Assoc::Left)
            | Op::infix(Rule::le, Assoc::Left)
            | Op::infix(Rule::gt, Assoc::Left)
            | Op::infix(Rule::ge, Assoc::Left)
            | Op::infix(Rule::member, Assoc::Left))
        .op(Op::infix(Rule::range, Assoc::Left))
        .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
        .op(Op::infix(Rule::mul, Assoc::Left)
            | Op::infix(Rule::div, Assoc::Left)
            | Op::infix(Rule::rem, Assoc::Left))
        .op(Op::prefix(Rule::neg))
});

pub(crate) fn parse_pairs(text: &str) -> Result<Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    WlParser::parse(Rule::file, text).map_err(Box::new)
}

pub(crate) fn parse_value_pairs(
    text: &str,
) -> Result<Pairs<'_, Rule>, Box<pest::error::Error<Rule>>> {
    WlParser::parse(Rule::value_only, text).map_err(Box::new)
}

pub(crate) struct Walker {
    pub file: FileId,
}

fn unexpected(rule: Rule, walker: &str) -> ! {
    unreachable!("grammar rule {rule:?} reached walker `{walker}`")
}

impl Walker {
    /// A pair's span without the whitespace and comments pest skips after its last part (a rule
    /// ending in a repetition keeps them), so a caret stops at the text it is about.
    fn span(&self, p: &Pair<'_, Rule>) -> Span {
        let s = p.as_span();
        // Past the last innermost pair only unnamed literal tokens (`)`, `]`, `"`) and skipped
        // trivia remain, never a string's text, so `//` in a string is not taken for a comment.
        // (An outer nested pair may itself end in skipped trivia.) A pair with none inside is a
        // token, or a string's text, and exact as it is.
        let Some(tail_from) = p
            .clone()
            .into_inner()
            .flatten()
            .filter(|c| c.clone().into_inner().next().is_none())
            .map(|c| c.as_span().end())
            .max()
        else {
            return Span::new(self.file, s.start(), s.end());
        };
        Span::new(
            self.file,
            s.start(),
            token_end(s.get_input(), tail_from, s.end()),
        )
    }

    fn ident(&self, p: Pair<'_, Rule>) -> Ident {
        debug_assert_eq!(p.as_rule(), Rule::ident);
        Ident {
            name: p.as_str().to_string(),
            span: self.span(&p),
        }
    }

    fn invalid(&self, p: &Pair<'_, Rule>, message: String) -> Diagnostic {
        Diagnostic::error(Code::E0005, self.span(p), message).label("invalid literal")
    }

    pub fn file(&self, pair: Pair<'_, Rule>) -> Res<File> {
        let mut items = Vec::new();
        for p in pair.into_inner() {
            let item = match p.as_rule() {
                Rule::import => Item::Import(self.import(p)?),
                Rule::workload => Item::Workload(self.workload(p)?),
                Rule::param => Item::Param(self.param(p)?),
                Rule::target => Item::Target(self.target(p)?),
                Rule::matrix => Item::Matrix(self.matrix(p)?),
                Rule::schema => Item::Schema(self.schema(p)?),
                Rule::ingest => Item::Ingest(self.ingest(p)?),
                Rule::query => Item::Query(self.query(p)?),
                Rule::hook => Item::Hook(self.hook(p)?),
                Rule::run => Item::Run(self.run(p)?),
                Rule::EOI => continue,
                r => unexpected(r, "file"),
            };
            items.push(item);
        }
        Ok(File { items })
    }

    fn import(&self, p: Pair<'_, Rule>) -> Res<Import> {
        let span = self.span(&p);
        let mut path = None;
        let mut alias = None;
        let mut args = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_import | Rule::kw_as => {}
                Rule::string => path = Some(self.string(c)?),
                Rule::ident => alias = Some(self.ident(c)),
                Rule::import_args => {
                    for a in c.into_inner() {
                        args.push(self.named_arg(a)?);
                    }
                }
                r => unexpected(r, "import"),
            }
        }
        Ok(Import {
            path: path.expect("grammar: import path"),
            alias: alias.expect("grammar: import alias"),
            args,
            span,
        })
    }

    fn named_arg(&self, p: Pair<'_, Rule>) -> Res<NamedArg> {
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("grammar: arg name"));
        let value = self.expr(it.next().expect("grammar: arg value"))?;
        Ok(NamedArg { name, value })
    }

    fn workload(&self, p: Pair<'_, Rule>) -> Res<Workload> {
        let span = self.span(&p);
        let mut name = None;
        let mut seed = Vec::new();
        let mut description = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_workload => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::seed_clause => seed.push(self.expr(last(c))?),
                Rule::description_clause => description.push(self.string(last(c))?),
                r => unexpected(r, "workload"),
            }
        }
        Ok(Workload {
            name: name.expect("grammar: workload name"),
            seed,
            description,
            span,
        })
    }

    fn param(&self, p: Pair<'_, Rule>) -> Res<Param> {
        let span = self.span(&p);
        let mut name = None;
        let mut ty = None;
        let mut value = None;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_param => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::col_type => ty = Some(self.col_type(c)),
                Rule::expr => value = Some(self.expr(c)?),
                r => unexpected(r, "param"),
            }
        }
        Ok(Param {
            name: name.expect("grammar: param name"),
            ty,
            value: value.expect("grammar: param value"),
            span,
        })
    }

    fn col_type(&self, p: Pair<'_, Rule>) -> ColType {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("grammar: type name"));
        let arg = it.next().map(|a| self.ident(a));
        ColType { name, arg, span }
    }

    fn target(&self, p: Pair<'_, Rule>) -> Res<Target> {
        let span = self.span(&p);
        let mut name = None;
        let mut dialect = Vec::new();
        let mut counts = Vec::new();
        let mut endpoints = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_target => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::dialect_clause => dialect.push(self.ident(last(c))),
                Rule::count_clause => counts.push(self.count_rule(c)?),
                Rule::endpoint => endpoints.push(self.endpoint(c)?),
                r => unexpected(r, "target"),
            }
        }
        Ok(Target {
            name: name.expect("grammar: target name"),
            dialect,
            counts,
            endpoints,
            span,
        })
    }

    fn count_rule(&self, p: Pair<'_, Rule>) -> Res<CountRule> {
        let span = self.span(&p);
        let mut unit = CountUnit::Rows;
        let mut endpoint = None;
        let mut language = CountLanguage::Sql;
        let mut query = None;
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_count | Rule::kw_via => {}
                Rule::count_unit => {
                    unit = match c.as_str() {
                        "samples" => CountUnit::Samples,
                        _ => CountUnit::Rows,
                    }
                }
                Rule::ident => endpoint = Some(self.ident(c)),
                Rule::count_language => {
                    language = match c.as_str() {
                        "promql" => CountLanguage::PromQl,
                        "influxql" => CountLanguage::InfluxQl,
                        _ => CountLanguage::Sql,
                    }
                }
                Rule::string => query = Some(self.string(c)?),
                r => unexpected(r, "count"),
            }
        }
        Ok(CountRule {
            unit,
            endpoint: endpoint.expect("grammar: count endpoint"),
            language,
            query: query.expect("grammar: count query"),
            span,
        })
    }

    fn endpoint(&self, p: Pair<'_, Rule>) -> Res<Endpoint> {
        let span = self.span(&p);
        let mut kind = None;
        let mut url = None;
        let mut alias = None;
        let mut options = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::endpoint_kind => {
                    let k = EndpointKind::parse(c.as_str()).expect("grammar: endpoint kinds");
                    kind = Some((k, self.span(&c)));
                }
                Rule::endpoint_url => url = Some(self.string(last(c))?),
                Rule::kw_as => {}
                Rule::ident => alias = Some(self.ident(c)),
                Rule::endpoint_options => {
                    for o in c.into_inner() {
                        let mut it = o.into_inner();
                        let name = self.ident(it.next().expect("grammar: option name"));
                        let value = self.expr(it.next().expect("grammar: option value"))?;
                        options.push(EndpointOption { name, value });
                    }
                }
                r => unexpected(r, "endpoint"),
            }
        }
        let (kind, kind_span) = kind.expect("grammar: endpoint kind");
        Ok(Endpoint {
            kind,
            kind_span,
            url,
            alias,
            options,
            span,
        })
    }

    fn matrix(&self, p: Pair<'_, Rule>) -> Res<Matrix> {
        let span = self.span(&p);
        let mut axes = Vec::new();
        let mut excludes = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_matrix => {}
                Rule::exclude => excludes.push(self.expr(last(c))?),
                Rule::axis => {
                    let span = self.span(&c);
                    let mut name = None;
                    let mut values = None;
                    let mut when = None;
                    for a in c.into_inner() {
                        match a.as_rule() {
                            Rule::ident => name = Some(self.ident(a)),
                            Rule::kw_in => {}
                            Rule::expr => values = Some(self.expr(a)?),
                            Rule::when_clause => when = Some(self.expr(last(a))?),
                            r => unexpected(r, "axis"),
                        }
                    }
                    axes.push(Axis {
                        name: name.expect("grammar: axis name"),
                        values: values.expect("grammar: axis values"),
                        when,
                        span,
                    });
                }
                r => unexpected(r, "matrix"),
            }
        }
        Ok(Matrix {
            axes,
            excludes,
            span,
        })
    }

    fn schema(&self, p: Pair<'_, Rule>) -> Res<Schema> {
        let span = self.span(&p);
        let mut name = None;
        let mut table = Vec::new();
        let mut rows = Vec::new();
        let mut columns = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_schema => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::table_clause => table.push(self.expr(last(c))?),
                Rule::schema_rows => rows.push(self.expr(last(c))?),
                Rule::series_column
                | Rule::tag_column
                | Rule::field_column
                | Rule::timestamp_column => columns.push(self.column(c)?),
                r => unexpected(r, "schema"),
            }
        }
        Ok(Schema {
            name: name.expect("grammar: schema name"),
            table,
            rows,
            columns,
            span,
        })
    }

    fn column(&self, p: Pair<'_, Rule>) -> Res<Column> {
        let span = self.span(&p);
        let role = match p.as_rule() {
            Rule::series_column => ColumnRole::Series,
            Rule::tag_column => ColumnRole::Tag,
            Rule::field_column => ColumnRole::Field,
            _ => ColumnRole::Timestamp,
        };
        let mut name = None;
        let mut ty = None;
        let mut exprs = Vec::new();
        let mut var = None;
        let mut end = None;
        let mut per = Vec::new();
        let mut null = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_series
                | Rule::kw_tag
                | Rule::kw_field
                | Rule::kw_timestamp
                | Rule::kw_for
                | Rule::kw_in
                | Rule::kw_every
                | Rule::kw_from => {}
                Rule::ident if name.is_none() => name = Some(self.ident(c)),
                Rule::ident => var = Some(self.ident(c)),
                Rule::col_type => ty = Some(self.col_type(c)),
                Rule::expr => exprs.push(self.expr(c)?),
                Rule::time_span => end = Some(TimeEnd::For(self.expr(last(c))?)),
                Rule::time_until => end = Some(TimeEnd::To(self.expr(last(c))?)),
                Rule::per_clause => {
                    let unit = last(c);
                    let p = if unit.as_str() == "row" {
                        Per::Row
                    } else {
                        Per::Series
                    };
                    per.push((p, self.span(&unit)));
                }
                Rule::null_clause => null.push(self.expr(last(c))?),
                r => unexpected(r, "column"),
            }
        }
        let mut exprs = exprs.into_iter();
        let first = exprs.next().expect("grammar: column expression");
        let gen = match role {
            ColumnRole::Series => ColumnGen::Series {
                expr: first,
                var: var.expect("grammar: series variable"),
                domain: exprs.next().expect("grammar: series domain"),
            },
            ColumnRole::Timestamp => ColumnGen::Every {
                step: first,
                from: exprs.next().expect("grammar: timestamp start"),
                end,
            },
            _ => ColumnGen::Expr(first),
        };
        Ok(Column {
            role,
            name: name.expect("grammar: column name"),
            ty,
            gen,
            per,
            null,
            span,
        })
    }

    fn via(&self, p: Pair<'_, Rule>) -> Via {
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

    fn path(&self, p: Pair<'_, Rule>) -> Vec<Ident> {
        p.into_inner().map(|i| self.ident(i)).collect()
    }

    fn clause_expr(&self, c: Pair<'_, Rule>) -> Res<Clause<Expr>> {
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

    fn batch(&self, c: Pair<'_, Rule>) -> Res<Clause<Expr>> {
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

    fn ingest(&self, p: Pair<'_, Rule>) -> Res<Ingest> {
        let span = self.span(&p);
        let mut ing = Ingest {
            name: Ident {
                name: String::new(),
                span,
            },
            into: vec![],
            rows: vec![],
            batch: vec![],
            workers: vec![],
            ack: vec![],
            setup: vec![],
            teardown: vec![],
            verify: vec![],
            calibrate: vec![],
            replay: vec![],
            duration: vec![],
            span,
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_ingest => {}
                Rule::ident => ing.name = self.ident(c),
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
                Rule::calibrate_clause => ing.calibrate.push(self.span(&c)),
                Rule::replay_clause => {
                    let span = self.span(&c);
                    let mut budget = None;
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::kw_replay | Rule::kw_budget => {}
                            Rule::expr => budget = Some(self.expr(i)?),
                            r => unexpected(r, "replay"),
                        }
                    }
                    ing.replay.push(Replay { budget, span });
                }
                Rule::duration_clause => ing.duration.push(self.clause_expr(c)?),
                r => unexpected(r, "ingest"),
            }
        }
        Ok(ing)
    }

    fn query(&self, p: Pair<'_, Rule>) -> Res<Query> {
        let span = self.span(&p);
        let mut q = Query {
            name: Ident {
                name: String::new(),
                span,
            },
            label: vec![],
            sql: vec![],
            lets: vec![],
            binds: vec![],
            csv: vec![],
            route: vec![],
            expects: vec![],
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
                Rule::let_clause => {
                    let span = self.span(&c);
                    let mut it = c.into_inner().skip(1);
                    let name = self.ident(it.next().expect("grammar: let name"));
                    let value = self.expr(it.next().expect("grammar: let value"))?;
                    q.lets.push(Let { name, value, span });
                }
                Rule::bind_clause => {
                    let span = self.span(&c);
                    let mut it = c.into_inner().skip(1);
                    let ph = it.next().expect("grammar: bind placeholder");
                    let index_span = self.span(&ph);
                    let index = self.placeholder(&ph)?;
                    let value = self.expr(it.next().expect("grammar: bind value"))?;
                    q.binds.push(Bind {
                        index,
                        index_span,
                        value,
                        span,
                    });
                }
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
                Rule::route_clause => q.route.push(self.clause_expr(c)?),
                Rule::expect_clause => q.expects.push(self.expect(c)?),
                r => unexpected(r, "query"),
            }
        }
        Ok(q)
    }

    fn placeholder(&self, p: &Pair<'_, Rule>) -> Res<u32> {
        match p.as_str()[1..].parse::<u32>() {
            Ok(n) if n >= 1 => Ok(n),
            Ok(_) => Err(self.invalid(p, "placeholders start at `$1`".to_string())),
            Err(_) => Err(self.invalid(p, format!("placeholder `{}` is too large", p.as_str()))),
        }
    }

    fn expect(&self, c: Pair<'_, Rule>) -> Res<Expect> {
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

    fn hook(&self, p: Pair<'_, Rule>) -> Res<Hook> {
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

    fn run(&self, p: Pair<'_, Rule>) -> Res<Run> {
        let span = self.span(&p);
        let mut r = Run {
            name: Ident {
                name: String::new(),
                span,
            },
            against: vec![],
            queries: vec![],
            request: vec![],
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
            span,
        };
        for c in p.into_inner() {
            let cspan = self.span(&c);
            match c.as_rule() {
                Rule::kw_run => {}
                Rule::ident => r.name = self.ident(c),
                Rule::against_clause => {
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
                    r.against.push(Against {
                        target,
                        via,
                        span: cspan,
                    });
                }
                Rule::queries_clause => {
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
                    r.queries.push(Clause {
                        value: sels,
                        span: cspan,
                    });
                }
                Rule::request_clause => {
                    let inner = last(c);
                    let value = match inner.as_rule() {
                        Rule::fixed_request => {
                            let mut parts = inner.into_inner();
                            let method = parts.next().expect("grammar: method").as_str();
                            let path = self.expr(parts.next().expect("grammar: request path"))?;
                            // `body` keyword, then the body expression.
                            let body = match parts.nth(1) {
                                Some(b) => Some(self.expr(b)?),
                                None => None,
                            };
                            RequestSpec::Fixed {
                                method: method.to_string(),
                                path,
                                body,
                            }
                        }
                        _ => RequestSpec::Hook(self.path(inner)),
                    };
                    r.request.push(Clause { value, span: cspan });
                }
                Rule::workers_clause => r.workers.push(self.clause_expr(c)?),
                Rule::run_count => {
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
                    r.count.push(Clause {
                        value: RunCount {
                            count: count.expect("grammar: count value"),
                            per_query,
                        },
                        span: cspan,
                    });
                }
                Rule::duration_clause => r.duration.push(self.clause_expr(c)?),
                Rule::warmup_clause => r.warmup.push(self.clause_expr(c)?),
                Rule::repeat_clause => r.repeat.push(self.clause_expr(c)?),
                Rule::stop_clause => r.stop_after.push(self.clause_expr(c)?),
                Rule::rate_clause => {
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
                    r.rate.push(Clause {
                        value: Rate {
                            rate: rate.expect("grammar: rate value"),
                            arrival,
                        },
                        span: cspan,
                    });
                }
                Rule::require_clause => r.require.push(self.clause_expr(c)?),
                Rule::expect_clause => r.expects.push(self.expect(c)?),
                Rule::check_clause => r.check_same.push(cspan),
                r => unexpected(r, "run"),
            }
        }
        Ok(r)
    }

    // -------------------------------------------------------------------------------------------
    // Expressions

    pub fn expr(&self, p: Pair<'_, Rule>) -> Res<Expr> {
        debug_assert_eq!(p.as_rule(), Rule::expr);
        // `2016-01-01` parses as 2016 - 1 - 1; nobody means that.
        let text = p.as_str().trim_end();
        let b = text.as_bytes();
        if b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && b.iter()
                .enumerate()
                .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        {
            return Err(Diagnostic::error(
                Code::E0005,
                self.span(&p),
                format!("`{text}` is a date without a time"),
            )
            .label(format!("write `{text}T00:00:00Z`"))
            .note(
                "timestamps are RFC 3339 with a time and a zone; a bare date would be subtraction",
            ));
        }
        // Pest's Pratt parser recurses on prefix operators and the tree recurses on every operator;
        // bounding both here keeps every later walk over the tree shallow.
        let operators = p
            .clone()
            .into_inner()
            .filter(|c| !is_operand(c.as_rule()))
            .count();
        if operators > super::MAX_EXPR_OPERATORS {
            return Err(Diagnostic::error(
                Code::E0002,
                self.span(&p),
                format!(
                    "expression has {operators} operators; at most {} are allowed",
                    super::MAX_EXPR_OPERATORS
                ),
            )
            .label("split this expression into params"));
        }
        PRATT
            .map_primary(|prim| self.primary(prim))
            .map_prefix(|op, rhs| {
                let rhs = rhs?;
                let span = self.span(&op).to(rhs.span);
                let op = match op.as_rule() {
                    Rule::neg => UnOp::Neg,
                    Rule::not => UnOp::Not,
                    r => unexpected(r, "prefix"),
                };
                Ok(Expr {
                    kind: ExprKind::Unary(op, Box::new(rhs)),
                    span,
                })
            })
            .map_infix(|lhs, op, rhs| {
                let (lhs, rhs) = (lhs?, rhs?);
                let span = lhs.span.to(rhs.span);
                let op = match op.as_rule() {
                    Rule::or => BinOp::Or,
                    Rule::and => BinOp::And,
                    Rule::eq => BinOp::Eq,
                    Rule::ne => BinOp::Ne,
                    Rule::lt => BinOp::Lt,
                    Rule::le => BinOp::Le,
                    Rule::gt => BinOp::Gt,
                    Rule::ge => BinOp::Ge,
                    Rule::member => BinOp::In,
                    Rule::range => BinOp::Range,
                    Rule::add => BinOp::Add,
                    Rule::sub => BinOp::Sub,
                    Rule::mul => BinOp::Mul,
                    Rule::div => BinOp::Div,
                    Rule::rem => BinOp::Rem,
                    r => unexpected(r, "infix"),
                };
                Ok(Expr {
                    kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                    span,
                })
            })
            .parse(p.into_inner())
    }

    fn primary(&self, p: Pair<'_, Rule>) -> Res<Expr> {
        let span = self.span(&p);
        let s = p.as_str();
        let lit = |r: Result<ExprKind, String>| r.map_err(|m| self.invalid(&p, m));
        let kind = match p.as_rule() {
            Rule::int => lit(literal::int(s).map(ExprKind::Int))?,
            Rule::float => lit(literal::float(s).map(ExprKind::Float))?,
            Rule::duration => lit(literal::duration(s).map(ExprKind::Duration))?,
            Rule::size => lit(literal::size(s).map(ExprKind::Size))?,
            Rule::rate => lit(literal::rate(s).map(|r| ExprKind::Rate(r.0)))?,
            Rule::percent => lit(literal::percent(s).map(ExprKind::Percent))?,
            Rule::timestamp => lit(literal::timestamp(s).map(ExprKind::Timestamp))?,
            Rule::boolean => ExprKind::Bool(s == "true"),
            Rule::none => ExprKind::None,
            Rule::string => ExprKind::Str(self.string(p)?),
            Rule::env_call => {
                let mut it = p.into_inner().skip(1);
                let name = self.string(it.next().expect("grammar: env name"))?;
                let default = match it.next() {
                    Some(d) => Some(Box::new(self.expr(d)?)),
                    None => None,
                };
                ExprKind::Env { name, default }
            }
            Rule::list => ExprKind::List(
                p.into_inner()
                    .map(|e| self.expr(e))
                    .collect::<Res<Vec<_>>>()?,
            ),
            Rule::map => {
                let mut entries = Vec::new();
                for e in p.into_inner() {
                    let mut it = e.into_inner();
                    let k = it.next().expect("grammar: map key");
                    let key = match k.as_rule() {
                        Rule::ident => MapKey::Ident(self.ident(k)),
                        Rule::string => {
                            let lit = self.string(k)?;
                            let text = lit.as_plain().ok_or_else(|| {
                                self.invalid_span(lit.span, "map keys cannot interpolate")
                            })?;
                            MapKey::Str(text, lit.span)
                        }
                        r => unexpected(r, "map key"),
                    };
                    entries.push((key, self.expr(it.next().expect("grammar: map value"))?));
                }
                ExprKind::Map(entries)
            }
            Rule::expr => return self.expr(p),
            Rule::placeholder => ExprKind::Placeholder(self.placeholder(&p)?),
            Rule::path => ExprKind::Path(self.path(p)),
            Rule::call => {
                let mut it = p.into_inner();
                let callee = self.path(it.next().expect("grammar: callee"));
                let mut args = Vec::new();
                for a in it {
                    let mut name = None;
                    let mut value = None;
                    for i in a.into_inner() {
                        match i.as_rule() {
                            Rule::ident => name = Some(self.ident(i)),
                            Rule::expr => value = Some(self.expr(i)?),
                            r => unexpected(r, "call_arg"),
                        }
                    }
                    args.push(CallArg {
                        name,
                        value: value.expect("grammar: argument value"),
                    });
                }
                ExprKind::Call { callee, args }
            }
            r => unexpected(r, "primary"),
        };
        Ok(Expr { kind, span })
    }

    fn invalid_span(&self, span: Span, message: &str) -> Diagnostic {
        Diagnostic::error(Code::E0005, span, message)
    }

    pub fn string(&self, p: Pair<'_, Rule>) -> Res<StrLit> {
        let span = self.span(&p);
        let mut parts: Vec<StrPart> = Vec::new();
        let push_text = |parts: &mut Vec<StrPart>, t: &str| match parts.last_mut() {
            Some(StrPart::Text(s)) => s.push_str(t),
            _ => parts.push(StrPart::Text(t.to_string())),
        };
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::str_text => push_text(&mut parts, c.as_str()),
                Rule::str_escape => {
                    let t = match &c.as_str()[1..] {
                        "n" => "\n",
                        "t" => "\t",
                        "r" => "\r",
                        other => other,
                    };
                    push_text(&mut parts, t);
                }
                Rule::interp => parts.push(StrPart::Interp(self.expr(last(c))?)),
                r => unexpected(r, "string"),
            }
        }
        Ok(StrLit { parts, span })
    }
}

fn is_operand(r: Rule) -> bool {
    !is_operator(r)
}

pub(crate) fn is_operator(r: Rule) -> bool {
    matches!(
        r,
        Rule::neg
            | Rule::not
            | Rule::or
            | Rule::and
            | Rule::eq
            | Rule::ne
            | Rule::lt
            | Rule::le
            | Rule::gt
            | Rule::ge
            | Rule::member
            | Rule::range
            | Rule::add
            | Rule::sub
            | Rule::mul
            | Rule::div
            | Rule::rem
    )
}

/// The last child of a pair: the value of a `keyword value` clause.
fn last(p: Pair<'_, Rule>) -> Pair<'_, Rule> {
    p.into_inner().last().expect("grammar: clause has a value")
}
