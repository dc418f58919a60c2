//! The root of an observed tree found from what the file names: a pid file, the process
//! listening on an endpoint's port, or a process name.

use std::fs;

use super::proc::{self, Stat};
use crate::plan::ProcessRoot;

/// The root's pid and name, or why it was not found.
pub fn find(root: &ProcessRoot) -> Result<Stat, String> {
    match root {
        ProcessRoot::Pidfile { path } => {
            let path = path.resolve_env()?;
            let text = fs::read_to_string(&path)
                .map_err(|e| format!("cannot read the pid file {path}: {e}"))?;
            let pid: u32 = text
                .lines()
                .next()
                .and_then(|l| l.trim().parse().ok())
                .ok_or_else(|| format!("the pid file {path} does not start with a pid"))?;
            proc::stat(pid).ok_or_else(|| format!("no process {pid} (from the pid file {path})"))
        }
        ProcessRoot::Named { name } => {
            let name = name.resolve_env()?;
            let all = proc::all();
            let matches: Vec<&Stat> = all.iter().filter(|s| named(s, &name)).collect();
            oldest_root(&matches).ok_or_else(|| format!("no process named {name:?}"))
        }
        ProcessRoot::Listening { endpoint, url } => {
            let url = url.resolve_env()?;
            let port = port_of(&url).ok_or_else(|| format!("no TCP port in {endpoint}'s URL"))?;
            let inodes = listening_inodes(port);
            if inodes.is_empty() {
                return Err(format!("nothing listens on TCP port {port} ({endpoint})"));
            }
            let all = proc::all();
            let holders: Vec<&Stat> = all.iter().filter(|s| holds_any(s.pid, &inodes)).collect();
            oldest_root(&holders).ok_or_else(|| {
                format!(
                    "the socket listening on TCP port {port} ({endpoint}) belongs to no process \
                     this user can see (reading another user's /proc/PID/fd needs root)"
                )
            })
        }
    }
}

/// comm (the kernel's 15 characters) or argv[0]'s file name.
fn named(s: &Stat, name: &str) -> bool {
    if s.comm == name || (name.len() > 15 && s.comm == name[..15]) {
        return true;
    }
    fs::read(format!("/proc/{}/cmdline", s.pid)).is_ok_and(|c| {
        let argv0 = c.split(|b| *b == 0).next().unwrap_or_default();
        let argv0 = String::from_utf8_lossy(argv0);
        // PostgreSQL's backends rewrite argv into `postgres: user db ...`: the first word.
        let file = argv0.rsplit('/').next().unwrap_or_default();
        file == name || file.split(':').next() == Some(name)
    })
}

/// Of a set of processes, the ones whose parent is not in the set (the trees' roots), the
/// oldest of them.
fn oldest_root(set: &[&Stat]) -> Option<Stat> {
    set.iter()
        .filter(|s| !set.iter().any(|p| p.pid == s.ppid))
        .min_by_key(|s| (s.start, s.pid))
        .map(|s| (*s).clone())
}

/// The port of `scheme://[user@]host[:port]/...`, or the scheme's usual one.
pub fn port_of(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let hostport = authority.rsplit('@').next()?;
    let explicit = match hostport.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(':') => port.parse().ok(),
        _ => None,
    };
    explicit.or(match scheme {
        "postgres" | "postgresql" => Some(5432),
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    })
}

/// Inodes of the sockets in LISTEN state on `port`, IPv4 and IPv6.
fn listening_inodes(port: u16) -> Vec<u64> {
    let mut out = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        out.extend(text.lines().skip(1).filter_map(|l| listen_inode(l, port)));
    }
    out
}

/// `sl local rem st tx:rx tr:tm retr uid timeout inode ...`; LISTEN is state 0A.
pub fn listen_inode(line: &str, port: u16) -> Option<u64> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let local_port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
    (local_port == port && *f.get(3)? == "0A")
        .then(|| f.get(9)?.parse().ok())
        .flatten()
}

fn holds_any(pid: u32, inodes: &[u64]) -> bool {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    dir.flatten().any(|fd| {
        fs::read_link(fd.path()).is_ok_and(|l| {
            l.to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
                .and_then(|n| n.parse::<u64>().ok())
                .is_some_and(|n| inodes.contains(&n))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_of_urls() {
        assert_eq!(port_of("postgres://u:p@127.0.0.1:5433/db"), Some(5433));
        assert_eq!(port_of("postgres://u@localhost/db"), Some(5432));
        assert_eq!(port_of("http://[::1]:9000/exec"), Some(9000));
        assert_eq!(port_of("wss://h"), Some(443));
        assert_eq!(port_of("tcp://h"), None);
    }

    #[test]
    fn a_listening_line_of_proc_net_tcp() {
        let l = "   1: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   \
                 105        0 31337 1 0000000000000000 100 0 0 10 0";
        assert_eq!(listen_inode(l, 5432), Some(31337));
        assert_eq!(listen_inode(l, 5433), None);
        let established = l.replace(" 0A ", " 01 ");
        assert_eq!(listen_inode(&established, 5432), None);
    }
}
