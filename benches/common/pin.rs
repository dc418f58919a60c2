//! The client on one core and the server on another, as the peers' numbers are taken: a
//! client and a server sharing cores measure each other's scheduling as much as either's work.
//! The bench process pins itself (the peers it spawns inherit the core); the server's tree is
//! pinned with `taskset -a` (every thread), so a backend forked later inherits its core too.

/// Pins this process to `client` and the process tree under `server_root` to `server`, when
/// the machine has both cores. Says what it did, or why not.
pub fn pin(client: usize, server_root: u32, server: usize) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores <= client.max(server) {
        return format!("not pinned: {cores} core(s)");
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(client);
    if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
        return format!("not pinned: sched_setaffinity: {e}");
    }
    for pid in tree(server_root) {
        let ok = std::process::Command::new("taskset")
            .args(["-a", "-p", "-c", &server.to_string(), &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return format!(
                "client pinned to core {client}; the server's process {pid} could not be (taskset)"
            );
        }
    }
    format!("client pinned to core {client}, the server's processes to core {server}")
}

/// `root` and its descendants, read as `observe process` reads a server's tree.
fn tree(root: u32) -> Vec<u32> {
    use wlrun::exec::observe::proc;
    let all = proc::all();
    proc::tree(&all, root).iter().map(|s| s.pid).collect()
}
