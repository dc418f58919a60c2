//! One reading of a process tree from /proc: the CPU, memory, IO and threads of a root and all
//! its descendants at one moment.
//!
//! CPU is counted so that nothing is lost or counted twice as processes come and go: a tree's
//! CPU is the sum, over its live processes (zombies included), of `utime + stime` and of
//! `cutime + cstime`. A child that exits keeps its own time in its stat until it is reaped;
//! reaping moves its `utime + stime + cutime + cstime` into its parent's `cutime + cstime` in
//! one step, so the sum stays the same, and a child born and reaped between two readings shows
//! only through its parent's `cutime`. The kernel moves a reaped child's IO counters into its
//! parent's the same way (`/proc/PID/io` of a process includes its reaped children's), so the
//! IO sums hold too. Two things still move the sum without the server working, a reading
//! racing a reaping and a process leaving the tree alive: `ledger` keeps them out.

use std::collections::HashMap;
use std::fs;

/// What /proc/PID/stat says of one process.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    pub pid: u32,
    pub comm: String,
    pub ppid: u32,
    /// Own user and system time, and the reaped children's, in clock ticks.
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
    pub threads: u64,
    /// Ticks after boot when the process started: tells a reused pid from its first owner.
    pub start: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// Parses a stat line; `None` when it is not one (a process that ended while being read).
pub fn parse_stat(text: &str) -> Option<Stat> {
    // comm is in parentheses and may hold spaces and parentheses: the last `)` ends it.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state): field N is rest[N - 3].
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    Some(Stat {
        pid,
        comm,
        ppid: field(4)? as u32,
        utime: field(14)?,
        stime: field(15)?,
        // Signed in the kernel's format; never negative in practice.
        cutime: rest.get(16 - 3)?.parse::<i64>().ok()?.max(0) as u64,
        cstime: rest.get(17 - 3)?.parse::<i64>().ok()?.max(0) as u64,
        threads: field(20)?,
        start: field(22)?,
        rss_pages: rest.get(24 - 3)?.parse::<i64>().ok()?.max(0) as u64,
    })
}

pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process's stat, now.
pub fn all() -> Vec<Stat> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// `read_bytes` and `write_bytes` of /proc/PID/io: what the process made the storage layer
/// fetch and send. `None` when unreadable (another user's process, without root).
pub fn io(pid: u32) -> Option<(u64, u64)> {
    let text = fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    let mut read = None;
    let mut write = None;
    for line in text.lines() {
        let (k, v) = line.split_once(':')?;
        match k {
            "read_bytes" => read = v.trim().parse().ok(),
            "write_bytes" => write = v.trim().parse().ok(),
            _ => {}
        }
    }
    Some((read?, write?))
}

/// The tree under `root` (itself included) out of `all`; empty when the root is not there.
pub fn tree(all: &[Stat], root: u32) -> Vec<&Stat> {
    let mut children: HashMap<u32, Vec<&Stat>> = HashMap::new();
    for s in all {
        children.entry(s.ppid).or_default().push(s);
    }
    let Some(r) = all.iter().find(|s| s.pid == root) else {
        return Vec::new();
    };
    let mut out = vec![r];
    let mut i = 0;
    while i < out.len() {
        if let Some(c) = children.get(&out[i].pid) {
            out.extend(c.iter().filter(|c| c.pid != root));
        }
        i += 1;
    }
    out
}

/// A tree's figures at one moment, CPU in ticks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub user_ticks: u64,
    pub system_ticks: u64,
    pub rss_bytes: u64,
    /// `None` when one of the tree's processes had unreadable IO counters.
    pub io: Option<(u64, u64)>,
    pub threads: u64,
    pub processes: u64,
}

pub fn totals(tree: &[&Stat], page: u64, io_of: impl Fn(u32) -> Option<(u64, u64)>) -> Totals {
    let mut t = Totals {
        io: Some((0, 0)),
        ..Totals::default()
    };
    for s in tree {
        t.user_ticks += s.utime + s.cutime;
        t.system_ticks += s.stime + s.cstime;
        t.rss_bytes += s.rss_pages * page;
        t.threads += s.threads;
        t.processes += 1;
        t.io = match (t.io, io_of(s.pid)) {
            (Some((r, w)), Some((r2, w2))) => Some((r + r2, w + w2)),
            _ => None,
        };
    }
    t
}

/// Busy and total ticks of the whole machine so far (/proc/stat's `cpu` line; idle and iowait
/// are not busy).
pub fn machine_ticks() -> Option<(u64, u64)> {
    let v = machine_cpu()?;
    let total: u64 = v.iter().sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// Steal (the ticks a hypervisor ran something else on the machine's vCPUs) and total ticks
/// of the whole machine so far.
pub fn machine_steal() -> Option<(u64, u64)> {
    let v = machine_cpu()?;
    Some((v[7], v.iter().sum()))
}

/// /proc/stat's `cpu` line: user nice system idle iowait irq softirq steal, zero where a
/// kernel gives fewer (but at least up to idle) (guest time is inside user, so it is left out).
fn machine_cpu() -> Option<[u64; 8]> {
    let text = fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, x) in v.iter_mut().zip(
        line.split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok()),
    ) {
        *slot = x;
        n += 1;
    }
    // Up to idle at least, or the line is not one to read.
    (n >= 4).then_some(v)
}

pub fn ticks_per_second() -> f64 {
    rustix::param::clock_ticks_per_second() as f64
}

pub fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(pid: u32, ppid: u32, u: u64, s: u64, cu: u64, cs: u64) -> Stat {
        Stat {
            pid,
            comm: "x".into(),
            ppid,
            utime: u,
            stime: s,
            cutime: cu,
            cstime: cs,
            threads: 1,
            start: 0,
            rss_pages: 1,
        }
    }

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_its_name() {
        let line = "4242 (post (gres) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    17 5 3 2 20 0 4 0 98765 1000000 250 18446744073709551615";
        let s = parse_stat(line).expect("parses");
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "post (gres) x");
        assert_eq!(s.ppid, 1);
        assert_eq!((s.utime, s.stime, s.cutime, s.cstime), (17, 5, 3, 2));
        assert_eq!(s.threads, 4);
        assert_eq!(s.start, 98765);
        assert_eq!(s.rss_pages, 250);
    }

    /// A child that exits and is reaped between two readings moves its time into its parent's
    /// `cutime`: the tree's sum is the same before and after, so it counts once.
    #[test]
    fn a_reaped_child_is_counted_once() {
        let before = vec![st(10, 1, 100, 10, 0, 0), st(11, 10, 50, 5, 7, 1)];
        let after = vec![st(10, 1, 100, 10, 50 + 7, 5 + 1)];
        let a = totals(&tree(&before, 10), 4096, |_| Some((1, 2)));
        let b = totals(&tree(&after, 10), 4096, |_| Some((1, 2)));
        assert_eq!(a.user_ticks, 157);
        assert_eq!(a.user_ticks, b.user_ticks);
        assert_eq!(a.system_ticks, b.system_ticks);
        assert_eq!(a.processes, 2);
        assert_eq!(a.io, Some((2, 4)));
        assert_eq!(b.processes, 1);
    }

    #[test]
    fn the_tree_takes_grandchildren_and_leaves_strangers_out() {
        let all = vec![
            st(10, 1, 1, 0, 0, 0),
            st(11, 10, 1, 0, 0, 0),
            st(12, 11, 1, 0, 0, 0),
            st(13, 1, 1, 0, 0, 0),
        ];
        let pids: Vec<u32> = tree(&all, 10).iter().map(|s| s.pid).collect();
        assert_eq!(pids, vec![10, 11, 12]);
        assert!(tree(&all, 99).is_empty());
        let t = totals(&tree(&all, 10), 4096, |p| (p != 12).then_some((1, 1)));
        assert_eq!(
            t.io, None,
            "one unreadable process makes the tree's IO unknown"
        );
    }
}
