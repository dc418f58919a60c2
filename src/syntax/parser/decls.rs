//! Walkers of the declarations: imports, the workload header, params, targets and their
//! endpoints and count rules, the matrix, schemas and their columns.

use pest::iterators::Pair;

use super::{last, unexpected, Res, Rule, Walker};
use crate::syntax::ast::*;

impl Walker {
    pub(super) fn import(&self, p: Pair<'_, Rule>) -> Res<Import> {
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

    pub(super) fn named_arg(&self, p: Pair<'_, Rule>) -> Res<NamedArg> {
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("grammar: arg name"));
        let value = self.expr(it.next().expect("grammar: arg value"))?;
        Ok(NamedArg { name, value })
    }

    pub(super) fn workload(&self, p: Pair<'_, Rule>) -> Res<Workload> {
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

    pub(super) fn param(&self, p: Pair<'_, Rule>) -> Res<Param> {
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

    pub(super) fn col_type(&self, p: Pair<'_, Rule>) -> ColType {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("grammar: type name"));
        let arg = it.next().map(|a| {
            let a = last(a);
            match a.as_rule() {
                Rule::int => {
                    let digits: String = a.as_str().chars().filter(|c| *c != '_').collect();
                    TypeArg::Length(digits.parse().unwrap_or(u64::MAX), self.span(&a))
                }
                _ => TypeArg::Unit(self.ident(a)),
            }
        });
        ColType { name, arg, span }
    }

    /// `primary key (...)` or `index [NAME] (...)`.
    fn key(&self, p: Pair<'_, Rule>) -> Key {
        let span = self.span(&p);
        let mut name = None;
        let mut columns = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_primary | Rule::kw_key | Rule::kw_index => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::key_columns => {
                    for k in c.into_inner() {
                        let mut it = k.into_inner();
                        let name = self.ident(it.next().expect("grammar: key column"));
                        let order = it.next().map(|o| (o.as_str() == "desc", self.span(&o)));
                        columns.push(KeyColumn { name, order });
                    }
                }
                r => unexpected(r, "key"),
            }
        }
        Key {
            name,
            columns,
            span,
        }
    }

    pub(super) fn target(&self, p: Pair<'_, Rule>) -> Res<Target> {
        let span = self.span(&p);
        let mut name = None;
        let mut dialect = Vec::new();
        let mut counts = Vec::new();
        let mut endpoints = Vec::new();
        let mut observe_process = Vec::new();
        let mut observe_metrics = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_target => {}
                Rule::observe_process_clause => observe_process.push(self.observe_process(c)?),
                Rule::observe_metrics_clause => observe_metrics.push(self.observe_metrics(c)?),
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
            observe_process,
            observe_metrics,
        })
    }

    fn observe_metrics(&self, p: Pair<'_, Rule>) -> Res<ObserveMetrics> {
        let span = self.span(&p);
        let mut url = None;
        let mut every = Vec::new();
        let mut keep = Vec::new();
        let mut cpu = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_observe | Rule::kw_metrics => {}
                Rule::string => url = Some(self.string(c)?),
                Rule::metrics_every => every.push(self.expr(last(c))?),
                Rule::metrics_keep => {
                    let mut patterns = Vec::new();
                    for s in c.into_inner().filter(|s| s.as_rule() == Rule::string) {
                        patterns.push(self.string(s)?);
                    }
                    keep.push(patterns);
                }
                Rule::metrics_cpu => cpu.push(self.string(last(c))?),
                r => unexpected(r, "observe metrics"),
            }
        }
        Ok(ObserveMetrics {
            url: url.expect("grammar: observe metrics URL"),
            every,
            keep,
            cpu,
            span,
        })
    }

    pub(super) fn observe_process(&self, p: Pair<'_, Rule>) -> Res<ObserveProcess> {
        let span = self.span(&p);
        let how = last(p);
        let rule = how.as_rule();
        let value = last(how);
        let how = match rule {
            Rule::observe_pidfile => ObserveHow::Pidfile(self.expr(value)?),
            Rule::observe_listening => ObserveHow::Listening(self.ident(value)),
            Rule::observe_named => ObserveHow::Named(self.expr(value)?),
            r => unexpected(r, "observe process"),
        };
        Ok(ObserveProcess { how, span })
    }

    pub(super) fn count_rule(&self, p: Pair<'_, Rule>) -> Res<CountRule> {
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

    pub(super) fn endpoint(&self, p: Pair<'_, Rule>) -> Res<Endpoint> {
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

    pub(super) fn matrix(&self, p: Pair<'_, Rule>) -> Res<Matrix> {
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

    pub(super) fn schema(&self, p: Pair<'_, Rule>) -> Res<Schema> {
        let span = self.span(&p);
        let mut name = None;
        let mut table = Vec::new();
        let mut rows = Vec::new();
        let mut columns = Vec::new();
        let mut primary_key = Vec::new();
        let mut indexes = Vec::new();
        let mut series_from = Vec::new();
        let mut null_one = Vec::new();
        let mut late = Vec::new();
        for c in p.into_inner() {
            match c.as_rule() {
                Rule::kw_schema => {}
                Rule::ident => name = Some(self.ident(c)),
                Rule::table_clause => table.push(self.expr(last(c))?),
                Rule::schema_rows => rows.push(self.expr(last(c))?),
                Rule::primary_key => primary_key.push(self.key(c)),
                Rule::index_clause => indexes.push(self.key(c)),
                Rule::null_one => {
                    let (mut columns, mut share) = (Vec::new(), None);
                    for i in c.into_inner() {
                        match i.as_rule() {
                            Rule::ident => columns.push(self.ident(i)),
                            Rule::expr => share = Some(self.expr(i)?),
                            _ => {}
                        }
                    }
                    null_one.push((columns, share.expect("grammar: null one share")));
                }
                Rule::late_rows => {
                    let span = self.span(&c);
                    let mut exprs = c.into_inner().filter(|i| i.as_rule() == Rule::expr);
                    let share = self.expr(exprs.next().expect("grammar: late share"))?;
                    let by = self.expr(exprs.next().expect("grammar: late by"))?;
                    late.push((share, by, span));
                }
                Rule::series_column
                | Rule::tag_column
                | Rule::field_column
                | Rule::timestamp_column => columns.push(self.column(c)?),
                Rule::series_from => {
                    let span = self.span(&c);
                    let path = last(c).into_inner().map(|i| self.ident(i)).collect();
                    series_from.push((path, span));
                }
                Rule::schema_for => {
                    let span = self.span(&c);
                    let mut inner = c
                        .into_inner()
                        .filter(|p| !matches!(p.as_rule(), Rule::kw_for | Rule::kw_in));
                    let var = self.ident(inner.next().expect("grammar: for variable"));
                    let values = self.expr(inner.next().expect("grammar: for values"))?;
                    let repeat = Repeat { var, values, span };
                    for col in inner {
                        let mut col = self.column(col)?;
                        col.repeat = Some(repeat.clone());
                        columns.push(col);
                    }
                }
                r => unexpected(r, "schema"),
            }
        }
        Ok(Schema {
            name: name.expect("grammar: schema name"),
            table,
            rows,
            series_from,
            columns,
            primary_key,
            indexes,
            null_one,
            late,
            span,
        })
    }

    pub(super) fn column(&self, p: Pair<'_, Rule>) -> Res<Column> {
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
                Rule::col_name => {
                    name = Some(crate::span::Ident {
                        name: c.as_str().to_string(),
                        span: self.span(&c),
                    })
                }
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
            repeat: None,
            owner: None,
            ty,
            gen,
            per,
            null,
            span,
        })
    }
}
