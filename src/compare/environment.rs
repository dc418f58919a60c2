//! Where two runs ran, where it differs: another build, another machine, a loaded box, another
//! server version explain a change that the figures alone would pin on the server. Shown side
//! by side above the metrics; never tested, never a regression. docs/compare.md.

use serde::Serialize;

use crate::report::environment::{gib, Environment};
use crate::report::html::esc;

/// Load averages closer than this are the same load: one runnable process more or less.
const LOAD_SAME_WITHIN: f64 = 1.0;

/// A part of the environment that differs, as each run's report has it (`None`: not known,
/// or not asked).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// The report's field name (`host`, `memory_bytes`, ...), or `server TARGET.ENDPOINT`; or
    /// `environment` when one run's report has none at all.
    pub field: String,
    pub base: Option<String>,
    pub new: Option<String>,
}

/// Every part that differs, in the report's order, then each server by endpoint.
pub fn differences(base: Option<&Environment>, new: Option<&Environment>) -> Vec<Difference> {
    let (b, n) = match (base, new) {
        (Some(b), Some(n)) => (b, n),
        (None, None) => return Vec::new(),
        (b, n) => {
            let said = |e: Option<&Environment>| e.map(|_| "recorded".to_string());
            return vec![Difference {
                field: "environment".into(),
                base: said(b),
                new: said(n),
            }];
        }
    };
    let mut out: Vec<Difference> = fields(b)
        .into_iter()
        .zip(fields(n))
        .filter(|((_, vb), (_, vn))| vb != vn)
        .map(|((field, vb), (_, vn))| Difference {
            field: field.into(),
            base: vb,
            new: vn,
        })
        .collect();
    for (field, vb, vn) in [
        (
            "load_average_start",
            b.load_average_start,
            n.load_average_start,
        ),
        ("load_average_end", b.load_average_end, n.load_average_end),
    ] {
        let same = match (vb, vn) {
            (Some(x), Some(y)) => (x - y).abs() < LOAD_SAME_WITHIN,
            (x, y) => x.is_none() && y.is_none(),
        };
        if !same {
            let show = |v: Option<f64>| v.map(|v| format!("{v:.2}"));
            out.push(Difference {
                field: field.into(),
                base: show(vb),
                new: show(vn),
            });
        }
    }
    let mut names: Vec<String> = b.servers.iter().map(|s| s.name()).collect();
    for s in &n.servers {
        if !names.contains(&s.name()) {
            names.push(s.name());
        }
    }
    for name in names {
        let version = |e: &Environment| {
            e.servers
                .iter()
                .find(|s| s.name() == name)
                .and_then(|s| s.version.clone())
        };
        let (vb, vn) = (version(b), version(n));
        if vb != vn {
            out.push(Difference {
                field: format!("server {name}"),
                base: vb,
                new: vn,
            });
        }
    }
    out
}

/// The parts compared as text: memory to a tenth of a GiB, since MemTotal moves by a few MiB
/// between kernels on the same machine.
fn fields(e: &Environment) -> [(&'static str, Option<String>); 7] {
    [
        ("wlrun_version", Some(e.wlrun_version.clone())),
        ("commit", e.commit.clone()),
        ("host", e.host.clone()),
        ("kernel", e.kernel.clone()),
        ("cpu_model", e.cpu_model.clone()),
        ("cores", e.cores.map(|c| c.to_string())),
        ("memory_bytes", e.memory_bytes.map(gib)),
    ]
}

fn shown(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("(unknown)")
}

/// The differences under a heading, aligned in columns; nothing when the environments agree.
pub fn text(diffs: &[Difference]) -> String {
    if diffs.is_empty() {
        return String::new();
    }
    let rows: Vec<[&str; 3]> = std::iter::once(["", "base", "new"])
        .chain(
            diffs
                .iter()
                .map(|d| [d.field.as_str(), shown(&d.base), shown(&d.new)]),
        )
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1) = (width(0), width(1));
    let mut out = String::from("the runs ran in different environments:\n");
    for r in &rows {
        let line = format!("  {:w0$}  {:w1$}  {}", r[0], r[1], r[2]);
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// The differences as a table for the HTML diff page; nothing when the environments agree.
pub fn html(diffs: &[Difference]) -> String {
    if diffs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<table class=\"env\"><caption>The runs ran in different environments</caption>\
         <tr><th></th><th>base</th><th>new</th></tr>",
    );
    for d in diffs {
        out += &format!(
            "<tr><th>{}</th><td>{}</td><td>{}</td></tr>",
            esc(&d.field),
            esc(shown(&d.base)),
            esc(shown(&d.new))
        );
    }
    out + "</table>"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::environment::ServerVersion;

    fn env(host: &str, load: f64, pg: Option<&str>) -> Environment {
        Environment {
            wlrun_version: "0.1.0".into(),
            commit: Some("abc1234".into()),
            host: Some(host.into()),
            kernel: Some("Linux 6.1.0".into()),
            cpu_model: Some("AMD EPYC".into()),
            cores: Some(2),
            memory_bytes: Some(25_276_194_816),
            load_average_start: Some(load),
            load_average_end: Some(load),
            servers: vec![ServerVersion {
                target: "db".into(),
                endpoint: "pg".into(),
                version: pg.map(str::to_string),
            }],
        }
    }

    #[test]
    fn the_same_environment_shows_nothing() {
        let a = env("vm", 0.5, Some("PostgreSQL 15.6"));
        assert!(differences(Some(&a), Some(&a)).is_empty());
        assert!(differences(None, None).is_empty());
        assert_eq!(text(&[]), "");
        assert_eq!(html(&[]), "");
    }

    #[test]
    fn what_differs_is_shown_side_by_side() {
        let a = env("alpha", 0.5, Some("PostgreSQL 15.6"));
        let mut b = env("beta", 7.25, Some("PostgreSQL 16.2"));
        // A few MiB of MemTotal is the same machine; a load within 1 the same load.
        b.memory_bytes = Some(25_276_194_816 + (4 << 20));
        b.load_average_end = Some(1.2);
        let d = differences(Some(&a), Some(&b));
        let fields: Vec<&str> = d.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["host", "load_average_start", "server db.pg"]);
        assert_eq!(
            text(&d),
            "the runs ran in different environments:\n\
             \x20                     base             new\n\
             \x20 host                alpha            beta\n\
             \x20 load_average_start  0.50             7.25\n\
             \x20 server db.pg        PostgreSQL 15.6  PostgreSQL 16.2\n"
        );
        assert!(html(&d).contains("<th>host</th><td>alpha</td><td>beta</td>"));
    }

    #[test]
    fn a_server_asked_in_one_run_only_and_a_report_without_an_environment() {
        let a = env("vm", 0.5, Some("PostgreSQL 15.6"));
        let mut b = env("vm", 0.5, None);
        b.servers.push(ServerVersion {
            target: "lite".into(),
            endpoint: "sqlite".into(),
            version: Some("SQLite 3.46.0".into()),
        });
        let d = differences(Some(&a), Some(&b));
        assert_eq!(
            d,
            [
                Difference {
                    field: "server db.pg".into(),
                    base: Some("PostgreSQL 15.6".into()),
                    new: None,
                },
                Difference {
                    field: "server lite.sqlite".into(),
                    base: None,
                    new: Some("SQLite 3.46.0".into()),
                },
            ]
        );
        let d = differences(None, Some(&a));
        assert_eq!(
            text(&d),
            "the runs ran in different environments:\n\
             \x20              base       new\n\
             \x20 environment  (unknown)  recorded\n"
        );
    }
}
