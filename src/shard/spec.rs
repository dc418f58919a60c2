//! Which shard this process is, and where the shards meet: `--shard I/N` or the environment a
//! Kubernetes Indexed Job sets (`JOB_COMPLETION_INDEX`, with `WLRUN_SHARDS` from the manifest),
//! `--barrier HOST:PORT` or `WLRUN_BARRIER`, and `--barrier-timeout`. Every mistake here is a
//! usage error (exit 2) with a message that names the flag or the variable.

use std::time::Duration;

/// The port shard 0 listens on when the address names none.
pub const DEFAULT_PORT: u16 = 7471;
/// How long a shard waits for the others at a barrier (and to join) before the run fails.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The index a Kubernetes Indexed Job gives each pod.
pub const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// The shard count, set by the manifest `wlrun k8s` prints (or by hand).
pub const COUNT_VAR: &str = "WLRUN_SHARDS";
/// Where shard 0 listens: `HOST:PORT`.
pub const BARRIER_VAR: &str = "WLRUN_BARRIER";
/// More shards than this is a typo, not a cluster: every shard opens a connection to shard 0.
const MAX_SHARDS: u64 = 10_000;

/// Shard `index` of `count` (0-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spec {
    pub index: u64,
    pub count: u64,
}

impl Spec {
    /// `I/N`, with 0 <= I < N.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}` is not a shard: write I/N, e.g. 0/4"))?;
        let number = |s: &str, what: &str| {
            s.trim().parse::<u64>().map_err(|_| {
                format!("`{text}` is not a shard: the {what} `{s}` is not a whole number")
            })
        };
        let spec = Spec {
            index: number(i, "index")?,
            count: number(n, "count")?,
        };
        spec.check(&format!("`{text}`"))
    }

    fn check(self, what: &str) -> Result<Spec, String> {
        if self.count == 0 {
            return Err(format!("{what}: a run has at least one shard"));
        }
        if self.count > MAX_SHARDS {
            return Err(format!(
                "{what}: {} shards is more than the {MAX_SHARDS} wlrun coordinates",
                self.count
            ));
        }
        if self.index >= self.count {
            return Err(format!(
                "{what}: shard {} does not exist in a run of {} (shards are numbered from 0 to {})",
                self.index,
                self.count,
                self.count - 1
            ));
        }
        Ok(self)
    }

    /// The shard this process is: `--shard` when given (it wins over the environment), else
    /// `JOB_COMPLETION_INDEX` and `WLRUN_SHARDS` together; `None` when neither says. The note
    /// says that `--shard` overrode a different environment.
    pub fn resolve(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(Option<Spec>, Option<String>), String> {
        let index = env(INDEX_VAR).filter(|v| !v.trim().is_empty());
        let count = env(COUNT_VAR).filter(|v| !v.trim().is_empty());
        if let Some(text) = flag {
            let spec = Spec::parse(text).map_err(|e| format!("--shard {e}"))?;
            let note = match (&index, &count) {
                (None, None) => None,
                _ => Some(format!(
                    "--shard {}/{} wins over the environment ({INDEX_VAR}={}, {COUNT_VAR}={})",
                    spec.index,
                    spec.count,
                    index.as_deref().unwrap_or("unset"),
                    count.as_deref().unwrap_or("unset")
                )),
            };
            // The same shard either way needs no note.
            let same = index.as_deref().map(str::trim) == Some(&spec.index.to_string())
                && count.as_deref().map(str::trim) == Some(&spec.count.to_string());
            return Ok((Some(spec), note.filter(|_| !same)));
        }
        match (index, count) {
            (None, None) => Ok((None, None)),
            (Some(i), None) => Err(format!(
                "{INDEX_VAR}={i} is set but {COUNT_VAR} is not: a shard needs the shard count too \
                 (set {COUNT_VAR}, or pass --shard I/N)"
            )),
            (None, Some(n)) => Err(format!(
                "{COUNT_VAR}={n} is set but {INDEX_VAR} is not: a shard needs its index too \
                 (Kubernetes sets it in an Indexed Job; or pass --shard I/N)"
            )),
            (Some(i), Some(n)) => {
                let number = |var: &str, v: &str| {
                    v.trim().parse::<u64>().map_err(|_| {
                        format!("{var}={v} is not a whole number (it counts from 0 in {INDEX_VAR}, from 1 in {COUNT_VAR})")
                    })
                };
                let spec = Spec {
                    index: number(INDEX_VAR, &i)?,
                    count: number(COUNT_VAR, &n)?,
                };
                let what = format!("{INDEX_VAR}={} {COUNT_VAR}={}", i.trim(), n.trim());
                Ok((Some(spec.check(&what)?), None))
            }
        }
    }

    /// The lead shard: it sets tables up and tears them down, counts the visible rows, reads
    /// the `require` guards, and coordinates the barriers.
    pub fn leads(&self) -> bool {
        self.index == 0
    }
}

/// Where shard 0 listens, as the shards were told, and who may join (`access`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Address {
    /// `None`: not given (shard 0 binds every interface; the others cannot connect).
    pub host: Option<String>,
    pub port: u16,
    /// `--barrier-bind`: what shard 0 listens on, apart from the name the others dial.
    pub listen: Option<String>,
    pub access: super::access::Access,
}

impl Address {
    /// `HOST:PORT`, `HOST` (port 7471), `:PORT`, `[V6]:PORT`; `--barrier` wins over
    /// `WLRUN_BARRIER`.
    pub fn resolve(
        flag: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Address, String> {
        let (text, from) = match flag {
            Some(f) => (Some(f.to_string()), "--barrier"),
            None => (
                env(BARRIER_VAR).filter(|v| !v.trim().is_empty()),
                BARRIER_VAR,
            ),
        };
        let Some(text) = text else {
            return Ok(Address {
                host: None,
                port: DEFAULT_PORT,
                ..Address::default()
            });
        };
        Address::parse(text.trim(), DEFAULT_PORT).map_err(|e| format!("{from} `{text}`: {e}"))
    }

    /// `--barrier-bind`'s `HOST:PORT`, `HOST` (the barrier's `port`), `:PORT`, `[V6]:PORT`, as
    /// a socket address to bind (no host: every interface).
    pub(super) fn parse_listen(text: &str, port: u16) -> Result<String, String> {
        let a = Address::parse(text, port)?;
        Ok(match a.host.as_deref() {
            None => format!("0.0.0.0:{}", a.port),
            Some(h) if h.contains(':') => format!("[{h}]:{}", a.port),
            Some(h) => format!("{h}:{}", a.port),
        })
    }

    fn parse(text: &str, default_port: u16) -> Result<Address, String> {
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or("an IPv6 address in brackets needs its `]`")?;
            match after.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None if after.is_empty() => (h, None),
                None => return Err("write HOST:PORT".into()),
            }
        } else {
            match text.rsplit_once(':') {
                // A bare IPv6 address has colons of its own: it needs brackets to take a port.
                Some((h, _)) if h.contains(':') => {
                    return Err("an IPv6 address takes a port as [ADDRESS]:PORT".into())
                }
                Some((h, p)) => (h, Some(p)),
                None => (text, None),
            }
        };
        let port = match port {
            None => default_port,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("`{p}` is not a port (1 to 65535)"))?,
        };
        Ok(Address {
            host: (!host.is_empty()).then(|| host.to_string()),
            port,
            ..Address::default()
        })
    }

    /// What shard 0 binds: `--barrier-bind` when given; else the named host when it is a
    /// loopback address (a run on one machine, as the tests run), otherwise every interface,
    /// since the name the others use (a headless Service's pod name) is how they reach this
    /// pod, not an address it has.
    pub fn bind(&self) -> String {
        if let Some(l) = &self.listen {
            return l.clone();
        }
        match self.host.as_deref() {
            Some(h @ ("127.0.0.1" | "localhost")) => format!("{h}:{}", self.port),
            Some("::1") => format!("[::1]:{}", self.port),
            _ => format!("0.0.0.0:{}", self.port),
        }
    }

    /// What the other shards connect to; `None` without a host.
    pub fn connect(&self) -> Option<String> {
        self.host.as_ref().map(|h| {
            if h.contains(':') {
                format!("[{h}]:{}", self.port)
            } else {
                format!("{h}:{}", self.port)
            }
        })
    }
}

impl std::fmt::Display for Address {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.connect() {
            Some(a) => f.write_str(&a),
            None => write!(f, "port {}", self.port),
        }
    }
}

/// `120s`, `2m`, `500ms`, `1h`, or a plain number of seconds; more than zero.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "`{text}`: `{other}` is not a unit of time (ms, s, m, h)"
            ))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a time: write 120s, 2m or 500ms"))?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 || secs > 7.0 * 86_400.0 {
        return Err(format!(
            "`{text}`: a barrier timeout is more than zero and at most a week"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::test_env as env;

    #[test]
    fn a_shard_is_i_of_n_counted_from_zero() {
        assert_eq!(Spec::parse("2/4"), Ok(Spec { index: 2, count: 4 }));
        assert_eq!(Spec::parse(" 0 / 1 "), Ok(Spec { index: 0, count: 1 }));
        let e = Spec::parse("4/4").unwrap_err();
        assert!(e.contains("shard 4 does not exist in a run of 4"), "{e}");
        assert!(Spec::parse("1/0").unwrap_err().contains("at least one"));
        assert!(Spec::parse("3").unwrap_err().contains("write I/N"));
        assert!(Spec::parse("a/2").unwrap_err().contains("index `a`"));
        assert!(Spec::parse("1/-2").unwrap_err().contains("count `-2`"));
        assert!(Spec::parse("0/20000").unwrap_err().contains("more than"));
    }

    #[test]
    fn the_environment_needs_both_variables_and_the_flag_wins() {
        let both = [(INDEX_VAR, "1"), (COUNT_VAR, "3")];
        assert_eq!(
            Spec::resolve(None, env(&both)),
            Ok((Some(Spec { index: 1, count: 3 }), None))
        );
        assert_eq!(Spec::resolve(None, env(&[])), Ok((None, None)));
        let e = Spec::resolve(None, env(&[(INDEX_VAR, "1")])).unwrap_err();
        assert!(e.contains("WLRUN_SHARDS is not"), "{e}");
        let e = Spec::resolve(None, env(&[(COUNT_VAR, "3")])).unwrap_err();
        assert!(e.contains("JOB_COMPLETION_INDEX is not"), "{e}");
        let e = Spec::resolve(None, env(&[(INDEX_VAR, "3"), (COUNT_VAR, "3")])).unwrap_err();
        assert!(e.contains("shard 3 does not exist"), "{e}");
        let e = Spec::resolve(None, env(&[(INDEX_VAR, "x"), (COUNT_VAR, "3")])).unwrap_err();
        assert!(
            e.contains("JOB_COMPLETION_INDEX=x is not a whole number"),
            "{e}"
        );
        let (spec, note) = Spec::resolve(Some("0/2"), env(&both)).unwrap();
        assert_eq!(spec, Some(Spec { index: 0, count: 2 }));
        assert!(note.unwrap().contains("wins over the environment"));
        // The flag alone, or the flag saying what the environment says: no note.
        assert_eq!(Spec::resolve(Some("1/3"), env(&both)).unwrap().1, None);
        assert_eq!(Spec::resolve(Some("1/3"), env(&[])).unwrap().1, None);
        let e = Spec::resolve(Some("5/3"), env(&[])).unwrap_err();
        assert!(e.starts_with("--shard"), "{e}");
    }

    #[test]
    fn addresses_take_a_default_port_and_shard_0_binds_loopback_only_when_named() {
        let a = Address::resolve(Some("wl-0.wl:9000"), env(&[])).unwrap();
        assert_eq!(a.connect().as_deref(), Some("wl-0.wl:9000"));
        assert_eq!(a.bind(), "0.0.0.0:9000");
        let a = Address::resolve(None, env(&[(BARRIER_VAR, "127.0.0.1")])).unwrap();
        assert_eq!(a.port, DEFAULT_PORT);
        assert_eq!(a.bind(), "127.0.0.1:7471");
        let a = Address::resolve(Some("[::1]:80"), env(&[(BARRIER_VAR, "x:1")])).unwrap();
        assert_eq!(a.bind(), "[::1]:80");
        assert_eq!(a.connect().as_deref(), Some("[::1]:80"));
        let none = Address::resolve(None, env(&[])).unwrap();
        assert_eq!((none.host, none.port), (None, DEFAULT_PORT));
        let e = Address::resolve(Some("h:0"), env(&[])).unwrap_err();
        assert!(
            e.starts_with("--barrier `h:0`") && e.contains("not a port"),
            "{e}"
        );
        let e = Address::resolve(None, env(&[(BARRIER_VAR, "::1:80")])).unwrap_err();
        assert!(
            e.starts_with("WLRUN_BARRIER") && e.contains("[ADDRESS]:PORT"),
            "{e}"
        );
    }

    #[test]
    fn timeouts_take_units() {
        assert_eq!(parse_timeout("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_timeout("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_timeout("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_timeout("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("3 days")
            .unwrap_err()
            .contains("unit of time"));
        assert!(parse_timeout("s").is_err());
    }
}
