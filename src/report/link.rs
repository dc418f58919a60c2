//! `link BANDWIDTH`: the rows/s a link of that bandwidth would carry at the bytes per row the
//! phase put on its sockets. A split deployment (loader and server on two machines) hits the
//! wire before the server: QuestDB's write-up measured ILP at ~347 B/row filling a 14.7 Gbit/s
//! link at ~5.3 M rows/s where QWP at ~97 B/row reached ~19 M. The figure is arithmetic on a
//! measured one, never a measurement, and says so (`computed`). docs/report-format.md
//! ("Link ceiling").

use serde::{Deserialize, Serialize};

use crate::value::fmt_bandwidth;

/// What `computed` says in report.json: how the figure was made, so nobody reads it as measured.
pub const COMPUTED: &str =
    "computed: link bits/s / 8 / socket_bytes_per_row (the bytes this phase wrote to its sockets, TLS and framing included, over rows_sent); not measured over the link";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkCeiling {
    /// The link as the language writes it: `14.7Gbit/s`.
    pub link: String,
    pub bits_per_s: f64,
    /// The measured figure it is computed from; `None` when the phase wrote nothing.
    pub socket_bytes_per_row: Option<f64>,
    /// `bits_per_s / 8 / socket_bytes_per_row`; `None` without bytes per row.
    pub rows_per_s: Option<f64>,
    pub computed: String,
}

impl LinkCeiling {
    /// The ceiling of a `bits_per_s` link at `socket_bytes_per_row`.
    pub fn of(bits_per_s: f64, socket_bytes_per_row: Option<f64>) -> LinkCeiling {
        LinkCeiling {
            link: fmt_bandwidth(bits_per_s),
            bits_per_s,
            socket_bytes_per_row,
            rows_per_s: socket_bytes_per_row
                .filter(|b| *b > 0.0)
                .map(|b| bits_per_s / 8.0 / b),
            computed: COMPUTED.to_string(),
        }
    }

    /// The terminal's line: `link 14.7 Gbit/s would carry ≈ 5.3 M rows/s at 347 B/row
    /// (computed)`.
    pub fn line(&self) -> String {
        let link = spaced_unit(&self.link);
        match (self.rows_per_s, self.socket_bytes_per_row) {
            (Some(r), Some(b)) => format!(
                "link {link} would carry ≈ {} rows/s at {} B/row (computed)",
                approx(r),
                bytes(b)
            ),
            _ => format!("link {link}: no ceiling (no bytes were written to a socket)"),
        }
    }
}

/// `14.7 Gbit/s` from `14.7Gbit/s`: the number and its unit apart, as people write a link.
fn spaced_unit(link: &str) -> String {
    let unit_at = link
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(link.len());
    let (n, unit) = link.split_at(unit_at);
    format!("{n} {}", unit.trim_start())
}

/// A rate to two significant digits with its scale, as the write-up quotes them: `5.3 M`,
/// `19 M`, `850 k`, `42`.
pub fn approx(r: f64) -> String {
    let (n, scale) = [(1e9, " G"), (1e6, " M"), (1e3, " k")]
        .into_iter()
        .find(|(s, _)| r >= *s)
        .map_or((r, ""), |(s, p)| (r / s, p));
    let n = if n >= 10.0 {
        format!("{}", n.round() as u64)
    } else {
        format!("{n:.1}")
    };
    format!("{n}{scale}")
}

/// Bytes per row: whole from 100, else one decimal.
fn bytes(b: f64) -> String {
    if b >= 100.0 {
        format!("{}", b.round() as u64)
    } else {
        format!("{b:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The write-up's numbers: over a 14.7 Gbit/s link, ILP at 347 B/row carries ~5.3 M rows/s
    /// and QWP at 97 B/row ~19 M.
    #[test]
    fn the_write_ups_link_ceilings() {
        let ilp = LinkCeiling::of(14.7e9, Some(347.0));
        let qwp = LinkCeiling::of(14.7e9, Some(97.0));
        // 14.7e9 / 8 = 1.8375e9 bytes/s.
        assert!((ilp.rows_per_s.unwrap() - 1.8375e9 / 347.0).abs() < 1e-6);
        assert!((qwp.rows_per_s.unwrap() - 1.8375e9 / 97.0).abs() < 1e-6);
        assert_eq!(approx(ilp.rows_per_s.unwrap()), "5.3 M");
        assert_eq!(approx(qwp.rows_per_s.unwrap()), "19 M");
        assert_eq!(
            ilp.line(),
            "link 14.7 Gbit/s would carry ≈ 5.3 M rows/s at 347 B/row (computed)"
        );
        assert_eq!(
            qwp.line(),
            "link 14.7 Gbit/s would carry ≈ 19 M rows/s at 97.0 B/row (computed)"
        );
        assert!(ilp.computed.starts_with("computed"));
    }

    #[test]
    fn small_links_and_no_bytes() {
        let l = LinkCeiling::of(100e6, Some(50.0));
        assert_eq!(l.rows_per_s, Some(250_000.0));
        assert_eq!(
            l.line(),
            "link 100 Mbit/s would carry ≈ 250 k rows/s at 50.0 B/row (computed)"
        );
        let none = LinkCeiling::of(1e9, None);
        assert_eq!(none.rows_per_s, None);
        assert_eq!(
            none.line(),
            "link 1 Gbit/s: no ceiling (no bytes were written to a socket)"
        );
        assert_eq!(LinkCeiling::of(1e9, Some(0.0)).rows_per_s, None);
        assert_eq!(approx(42.0), "42");
        assert_eq!(approx(7.26), "7.3");
    }
}
