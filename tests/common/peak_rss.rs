//! The peak resident memory (VmHWM) of one `wlrun` command, run by `wlrun::run` in a child
//! process of the calling test or bench binary: a process of its own, so that nothing else the
//! caller does counts, and the high-water mark is read by the child itself before it exits
//! (polling a child from outside misses its last moments; getrusage needs `unsafe`).

use std::ffi::OsString;
use std::process::Command;

/// The command's arguments, one per line, for the child.
pub const ARGS_VAR: &str = "WLRUN_PEAK_RSS_ARGS";

/// In the child (`ARGS_VAR` set): runs the command, prints `peak_rss_kb=N` on stdout, and
/// gives the command's exit status; `None` in any other process.
pub fn child_main() -> Option<i32> {
    let args = std::env::var(ARGS_VAR).ok()?;
    let argv = std::iter::once(OsString::from("wlrun")).chain(args.lines().map(OsString::from));
    let code = wlrun::run(argv);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!("peak_rss_kb={kb}");
    Some(code)
}

/// Runs `child` (this binary, told how to reach `child_main`) with `args` and gives the
/// command's peak resident memory in bytes.
pub fn peak_rss(mut child: Command, args: &[&str]) -> Result<u64, String> {
    let out = child
        .env(ARGS_VAR, args.join("\n"))
        .output()
        .map_err(|e| format!("cannot start the child: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let kb = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("peak_rss_kb="))
        .and_then(|v| v.parse::<u64>().ok());
    match kb {
        Some(kb) if out.status.success() && kb > 0 => Ok(kb * 1024),
        _ => Err(format!(
            "wlrun {} in a child: {}\n{stdout}\n{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// The peak resident memory, in bytes, of `wlrun gen` of `file`'s `tsbs.cpu` schema at `hosts`
/// hosts and 10 s of readings, in `format`, to /dev/null: what the gen bench reports and the
/// large-cardinality test bounds.
pub fn gen_peak_rss(child: Command, file: &str, format: &str, hosts: u64) -> u64 {
    let hosts = format!("hosts={hosts}");
    let args = [
        "gen",
        file,
        "--schema",
        "tsbs.cpu",
        "--param",
        &hosts,
        "--param",
        "seconds=10s",
        "--format",
        format,
        "-o",
        "/dev/null",
    ];
    peak_rss(child, &args).unwrap_or_else(|e| panic!("{e}"))
}
