//! Chart primitives as inline SVG: lines over time, grouped bars, and the latency distribution
//! on a log percentile axis. Each chart is a `<figure>` holding one `svg.chart` whose drawn
//! marks have the class `m` (what tests/html.rs looks for), and an HTML legend, which wraps
//! on its own where an SVG legend would need its text measured. Hover values come from SVG
//! `<title>` elements: no script.

use std::fmt::Write;

use super::esc;

/// The plot's size in SVG units; the page scales it to the column's width.
const W: f64 = 640.0;
const H: f64 = 250.0;
const LEFT: f64 = 62.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 30.0;

/// Tableau's 10 colours: distinct for most readers, also in grey print.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

pub fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// What a value on an axis is, for its tick labels and hover text.
#[derive(Clone, Copy, Debug)]
pub enum Unit {
    /// A count or rate, with its unit after the number (`rows/s`).
    Per(&'static str),
    /// Microseconds, shown as µs, ms or s.
    Micros,
    /// Seconds since the phase started.
    Seconds,
}

impl Unit {
    pub fn show(self, v: f64) -> String {
        match self {
            Unit::Per("") => num(v),
            Unit::Per(u) => format!("{} {u}", num(v)),
            Unit::Micros => micros(v),
            Unit::Seconds => format!("{}s", num(v)),
        }
    }

    /// The tick label: short, the unit said once in the axis title.
    fn tick(self, v: f64) -> String {
        match self {
            Unit::Per(_) => num(v),
            Unit::Micros if v == 0.0 => "0".into(),
            Unit::Micros => micros(v),
            Unit::Seconds => format!("{}s", num(v)),
        }
    }

    fn title(self) -> &'static str {
        match self {
            Unit::Per(u) => u,
            Unit::Micros | Unit::Seconds => "",
        }
    }
}

/// Three significant digits with k / M / G: `1.23M`, `845`, `0.5`.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let s = scaled.abs();
    let text = if s >= 100.0 || (suffix.is_empty() && s >= 10.0 && scaled.fract() == 0.0) {
        format!("{scaled:.0}")
    } else if s >= 10.0 {
        format!("{scaled:.1}")
    } else if s >= 1.0 || s == 0.0 {
        format!("{scaled:.2}")
    } else {
        format!("{scaled:.3}")
    };
    format!("{}{suffix}", trim_zeros(&text))
}

/// A duration given in microseconds: `850µs`, `1.25ms`, `2.5s`.
pub fn micros(us: f64) -> String {
    if !us.is_finite() {
        return "-".into();
    }
    if us.abs() >= 1e6 {
        format!("{}s", num(us / 1e6))
    } else if us.abs() >= 1e3 {
        format!("{}ms", num(us / 1e3))
    } else {
        format!("{}µs", num(us))
    }
}

fn trim_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// Ticks from 0 (or `lo`) to at least `hi`, on a 1-2-5 step, about `n` of them.
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut t = first;
    while t < hi + step * 0.999 && out.len() < 50 {
        out.push(t);
        if t >= hi {
            break;
        }
        t += step;
    }
    if out.len() < 2 {
        out.push(first + step);
    }
    out
}

/// A compact SVG coordinate: one decimal is finer than any screen's pixel at this size.
fn c(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// One line of a line chart: `(x, y)` in the axes' units; a NaN `y` breaks the line.
pub struct Line {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart's frame: the SVG opening, the axes and their grid, and how to place values.
struct Frame {
    out: String,
    x0: f64,
    x1: f64,
    y1: f64,
}

impl Frame {
    fn px(&self, x: f64) -> f64 {
        let w = if self.x1 > self.x0 {
            self.x1 - self.x0
        } else {
            1.0
        };
        LEFT + (x - self.x0) / w * (W - LEFT - RIGHT)
    }

    fn py(&self, y: f64) -> f64 {
        let h = if self.y1 > 0.0 { self.y1 } else { 1.0 };
        H - BOTTOM - (y / h) * (H - TOP - BOTTOM)
    }
}

/// Opens the SVG, draws the y grid from 0 to the last tick over `y_max`, and x ticks from
/// `x_ticks` (value, label) unless the chart places its own (bars).
fn frame(title: &str, y_unit: Unit, y_max: f64, x: (f64, f64), x_ticks: &[(f64, String)]) -> Frame {
    let yt = ticks(0.0, if y_max > 0.0 { y_max } else { 1.0 }, 5);
    let mut f = Frame {
        out: String::new(),
        x0: x.0,
        x1: x.1,
        y1: *yt.last().unwrap_or(&1.0),
    };
    let _ = write!(
        f.out,
        "<svg class=\"chart\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"{}\">",
        esc(title)
    );
    for t in &yt {
        let y = c(f.py(*t));
        let _ = write!(
            f.out,
            "<line class=\"g\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\"/>\
             <text class=\"yt\" x=\"{}\" y=\"{y}\">{}</text>",
            W - RIGHT,
            LEFT - 5.0,
            esc(&y_unit.tick(*t))
        );
    }
    if !y_unit.title().is_empty() {
        let _ = write!(
            f.out,
            "<text class=\"at\" transform=\"translate(12 {}) rotate(-90)\">{}</text>",
            c((TOP + H - BOTTOM) / 2.0),
            esc(y_unit.title())
        );
    }
    for (v, label) in x_ticks {
        let x = c(f.px(*v));
        let _ = write!(
            f.out,
            "<line class=\"tk\" x1=\"{x}\" x2=\"{x}\" y1=\"{}\" y2=\"{}\"/>\
             <text class=\"xt\" x=\"{x}\" y=\"{}\">{}</text>",
            H - BOTTOM,
            H - BOTTOM + 4.0,
            H - BOTTOM + 16.0,
            esc(label)
        );
    }
    let _ = write!(
        f.out,
        "<line class=\"ax\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{b}\" y2=\"{b}\"/>",
        W - RIGHT,
        b = H - BOTTOM
    );
    f
}

fn figure(title: &str, svg: &str, legend: &[&str], note: &str) -> String {
    let keyed: Vec<(&str, Paint)> = legend
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, Paint::nth(i)))
        .collect();
    figure_keyed(title, svg, &keyed, note)
}

fn figure_keyed(title: &str, svg: &str, legend: &[(&str, Paint)], note: &str) -> String {
    let mut out = format!("<figure><figcaption>{}</figcaption>{svg}", esc(title));
    if legend.len() > 1 || !note.is_empty() {
        out.push_str("<ul class=\"legend\">");
        if legend.len() > 1 {
            for (name, paint) in legend {
                let _ = write!(
                    out,
                    "<li><i style=\"background:{}{}\"></i>{}</li>",
                    colour(paint.colour),
                    paint.opacity_css(),
                    esc(name)
                );
            }
        }
        if !note.is_empty() {
            let _ = write!(out, "<li class=\"note\">{}</li>", esc(note));
        }
        out.push_str("</ul>");
    }
    out.push_str("</figure>");
    out
}

/// Draws `lines` as paths in the frame; each path's title says its range.
fn paths(f: &mut Frame, lines: &[Line], y_unit: Unit) {
    for (i, line) in lines.iter().enumerate() {
        let mut d = String::new();
        let mut pen_up = true;
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &(x, y) in &line.points {
            if !y.is_finite() {
                pen_up = true;
                continue;
            }
            lo = lo.min(y);
            hi = hi.max(y);
            let _ = write!(
                d,
                "{}{} {}",
                if pen_up { "M" } else { " " },
                c(f.px(x)),
                c(f.py(y))
            );
            pen_up = false;
        }
        let finite = line.points.iter().filter(|p| p.1.is_finite()).count();
        if finite == 0 {
            continue;
        }
        // A single point draws no line (an empty path): a dot shows it instead.
        if finite > 1 {
            let _ = write!(
                f.out,
                "<path class=\"m\" d=\"{d}\" stroke=\"{}\"><title>{}: {} to {}</title></path>",
                colour(i),
                esc(&line.name),
                esc(&y_unit.show(lo)),
                esc(&y_unit.show(hi))
            );
        } else {
            let (x, y) = *line.points.iter().find(|p| p.1.is_finite()).unwrap();
            let _ = write!(
                f.out,
                "<circle class=\"m\" cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"><title>{}: {}</title></circle>",
                c(f.px(x)),
                c(f.py(y)),
                colour(i),
                esc(&line.name),
                esc(&y_unit.show(y))
            );
        }
    }
}

fn max_y(lines: &[Line]) -> Option<f64> {
    lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .reduce(f64::max)
}

/// A vertical marker on a chart over time: a stage's start.
pub struct Mark {
    /// Seconds, as the chart's x.
    pub x: f64,
    pub label: String,
}

/// Lines over time, x in seconds from the phase's start. `None` when there is nothing to draw.
pub fn over_time(title: &str, y_unit: Unit, lines: &[Line], note: &str) -> Option<String> {
    over_time_marked(title, y_unit, lines, note, &[])
}

/// Lines over time with vertical `marks` (dashed, labelled at the top, behind the lines; not
/// drawn marks `m` of the chart's data).
pub fn over_time_marked(
    title: &str,
    y_unit: Unit,
    lines: &[Line],
    note: &str,
    marks: &[Mark],
) -> Option<String> {
    let y_max = max_y(lines)?;
    let xs = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
    let x_lo = xs.clone().fold(f64::INFINITY, f64::min).min(0.0);
    let x_hi = xs.fold(f64::NEG_INFINITY, f64::max);
    let x_hi = if x_hi > x_lo { x_hi } else { x_lo + 1.0 };
    let xt: Vec<(f64, String)> = ticks(x_lo, x_hi, 8)
        .into_iter()
        .filter(|t| *t <= x_hi + 1e-9)
        .map(|t| (t, Unit::Seconds.tick(t)))
        .collect();
    let mut f = frame(title, y_unit, y_max, (x_lo, x_hi), &xt);
    for m in marks.iter().filter(|m| m.x >= x_lo && m.x <= x_hi) {
        let x = c(f.px(m.x));
        let _ = write!(
            f.out,
            "<line class=\"sb\" x1=\"{x}\" x2=\"{x}\" y1=\"{TOP}\" y2=\"{}\"><title>{}</title></line>\
             <text class=\"sl\" x=\"{}\" y=\"{}\">{}</text>",
            H - BOTTOM,
            esc(&m.label),
            c(f.px(m.x) + 3.0),
            TOP + 9.0,
            esc(&m.label)
        );
    }
    paths(&mut f, lines, y_unit);
    f.out.push_str("</svg>");
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    Some(figure(title, &f.out, &names, note))
}

/// `k` on the percentile axis is log10(1 / (1 - q)): 0 is the median's left end (0%), 1 is
/// 90%, 2 is 99%, 3 is 99.9%.
pub fn percentile_label(k: f64) -> String {
    match k.round() as i64 {
        n if n <= 0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        n => format!("99.{}%", "9".repeat(n as usize - 2)),
    }
}

/// The latency distribution on a log percentile axis (HdrHistogram's plot): `lines` hold
/// `(k, µs)` with k as `percentile_label` reads it.
pub fn distribution(title: &str, lines: &[Line], note: &str) -> Option<String> {
    let y_max = max_y(lines)?;
    let k_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(1.0f64, f64::max)
        .ceil();
    let xt: Vec<(f64, String)> = (0..=k_max as i64)
        .map(|k| (k as f64, percentile_label(k as f64)))
        .collect();
    let mut f = frame(title, Unit::Micros, y_max, (0.0, k_max), &xt);
    paths(&mut f, lines, Unit::Micros);
    f.out.push_str("</svg>");
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    Some(figure(title, &f.out, &names, note))
}

/// A horizontal bound on a chart (an SLA's `p99 < 20ms`), in the colour of the line it bounds.
pub struct Limit {
    pub y: f64,
    pub label: String,
    pub colour: usize,
}

/// One measurement drawn as a dot over the lines: filled when it met what it was judged by,
/// hollow when it did not; its title is its hover text.
pub struct Dot {
    pub x: f64,
    pub y: f64,
    pub met: bool,
    pub colour: usize,
    pub title: String,
}

/// Lines of y against x from 0 (a rate, not time), with dashed horizontal `limits`, vertical
/// `marks` (an answer) and `dots`. The x unit labels the ticks only: the caller's note names
/// it, since a title inside the plot would sit on the last dot. `None` when there is nothing
/// to draw.
pub fn curve(
    title: &str,
    (x_unit, y_unit): (Unit, Unit),
    lines: &[Line],
    limits: &[Limit],
    marks: &[Mark],
    dots: &[Dot],
    note: &str,
) -> Option<String> {
    // The bound must show even when every step stayed far under it.
    let y_max = limits
        .iter()
        .map(|l| l.y * 1.1)
        .fold(max_y(lines)?, f64::max);
    let x_hi = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let x_hi = if x_hi > 0.0 { x_hi } else { 1.0 };
    let xt: Vec<(f64, String)> = ticks(0.0, x_hi, 8)
        .into_iter()
        .map(|t| (t, x_unit.tick(t)))
        .collect();
    let x_end = xt.last().map_or(x_hi, |t| t.0.max(x_hi));
    let mut f = frame(title, y_unit, y_max, (0.0, x_end), &xt);
    for l in limits {
        let y = c(f.py(l.y));
        let _ = write!(
            f.out,
            "<line class=\"lim\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{}\">\
             <title>{}</title></line><text class=\"sl\" x=\"{}\" y=\"{}\">{}</text>",
            W - RIGHT,
            colour(l.colour),
            esc(&l.label),
            LEFT + 4.0,
            c(f.py(l.y) - 3.0),
            esc(&l.label)
        );
    }
    for m in marks {
        let x = c(f.px(m.x));
        let _ = write!(
            f.out,
            "<line class=\"ans\" x1=\"{x}\" x2=\"{x}\" y1=\"{TOP}\" y2=\"{}\"><title>{}</title></line>\
             <text class=\"sl\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            H - BOTTOM,
            esc(&m.label),
            c(f.px(m.x) - 3.0),
            TOP + 9.0,
            esc(&m.label)
        );
    }
    paths(&mut f, lines, y_unit);
    for d in dots {
        let fill = if d.met { colour(d.colour) } else { "#fff" };
        let _ = write!(
            f.out,
            "<circle class=\"m\" cx=\"{}\" cy=\"{}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{}\" \
             stroke-width=\"1.5\"><title>{}</title></circle>",
            c(f.px(d.x)),
            c(f.py(d.y)),
            colour(d.colour),
            esc(&d.title)
        );
    }
    f.out.push_str("</svg>");
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    Some(figure(title, &f.out, &names, note))
}

/// A bar's colour: one of the palette's, lighter for the later variants of one series
/// (sent, acked, visible of `protocol=qwp` are one hue).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paint {
    pub colour: usize,
    /// 0 is the full colour, each step lighter.
    pub shade: usize,
}

impl Paint {
    pub fn nth(i: usize) -> Paint {
        Paint {
            colour: i,
            shade: 0,
        }
    }

    fn opacity(self) -> f64 {
        [1.0, 0.62, 0.36, 0.2][self.shade.min(3)]
    }

    fn opacity_css(self) -> String {
        if self.shade == 0 {
            String::new()
        } else {
            format!(";opacity:{}", self.opacity())
        }
    }
}

/// Bars grouped along x: one group per label in `groups`, one bar per series in each.
pub struct Bars {
    pub groups: Vec<String>,
    /// (name, one value per group; `None` where the cell has no such figure).
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// Per series; empty: one palette colour each.
    pub paints: Vec<Paint>,
}

pub fn bars(title: &str, y_unit: Unit, b: &Bars, note: &str) -> Option<String> {
    let y_max = b
        .series
        .iter()
        .flat_map(|s| s.1.iter().flatten().copied())
        .filter(|v| v.is_finite())
        .reduce(f64::max)?;
    let n_groups = b.groups.len().max(1) as f64;
    let n_series = b.series.len().max(1) as f64;
    let mut f = frame(title, y_unit, y_max, (0.0, n_groups), &[]);
    let group_w = f.px(1.0) - f.px(0.0);
    let bar_w = (group_w * 0.8 / n_series).max(1.0);
    // Values are written above the bars while they fit.
    let labelled = bar_w >= 26.0;
    for (g, label) in b.groups.iter().enumerate() {
        let x = c(f.px(g as f64 + 0.5));
        let _ = write!(
            f.out,
            "<text class=\"xt\" x=\"{x}\" y=\"{}\">{}</text>",
            H - BOTTOM + 16.0,
            esc(label)
        );
        for (s, (name, values)) in b.series.iter().enumerate() {
            let paint = b.paints.get(s).copied().unwrap_or(Paint::nth(s));
            let Some(v) = values.get(g).copied().flatten().filter(|v| v.is_finite()) else {
                continue;
            };
            let left = f.px(g as f64) + group_w * 0.1 + s as f64 * bar_w;
            let top = f.py(v);
            let _ = write!(
                f.out,
                "<rect class=\"m\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}>\
                 <title>{} · {}: {}</title></rect>",
                c(left),
                c(top),
                c((bar_w - 1.0).max(0.5)),
                c((H - BOTTOM - top).max(0.5)),
                colour(paint.colour),
                if paint.shade == 0 {
                    String::new()
                } else {
                    format!(" fill-opacity=\"{}\"", paint.opacity())
                },
                esc(label),
                esc(name),
                esc(&y_unit.show(v))
            );
            if labelled {
                let _ = write!(
                    f.out,
                    "<text class=\"bv\" x=\"{}\" y=\"{}\">{}</text>",
                    c(left + bar_w / 2.0),
                    c(top - 3.0),
                    esc(&y_unit.tick(v))
                );
            }
        }
    }
    f.out.push_str("</svg>");
    let keyed: Vec<(&str, Paint)> = b
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                s.0.as_str(),
                b.paints.get(i).copied().unwrap_or(Paint::nth(i)),
            )
        })
        .collect();
    Some(figure_keyed(title, &f.out, &keyed, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_compact_and_ticks_cover_the_range() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(845.0), "845");
        assert_eq!(num(12_345.0), "12.3k");
        assert_eq!(num(1_234_567.0), "1.23M");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(micros(850.0), "850µs");
        assert_eq!(micros(1_250.0), "1.25ms");
        assert_eq!(micros(2_500_000.0), "2.5s");
        let t = ticks(0.0, 97.0, 5);
        assert_eq!(t.first(), Some(&0.0));
        assert!(*t.last().unwrap() >= 97.0 && t.len() <= 8, "{t:?}");
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(percentile_label(2.0), "99%");
        assert_eq!(percentile_label(4.0), "99.99%");
    }

    #[test]
    fn charts_without_values_are_not_drawn() {
        let empty = Line {
            name: "a".into(),
            points: vec![(0.0, f64::NAN)],
        };
        assert!(over_time("t", Unit::Per("rows/s"), &[empty], "").is_none());
        let b = Bars {
            groups: vec!["x".into()],
            series: vec![("s".into(), vec![None])],
            paints: vec![],
        };
        assert!(bars("t", Unit::Micros, &b, "").is_none());
        let one = Line {
            name: "a".into(),
            points: vec![(0.0, 5.0)],
        };
        let svg = over_time("t <&>", Unit::Per("rows/s"), &[one], "").unwrap();
        assert!(svg.contains("<circle class=\"m\""), "{svg}");
        assert!(svg.contains("t &lt;&amp;&gt;"), "{svg}");
    }
}
