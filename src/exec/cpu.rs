//! The CPU time this process has used, from /proc: the report shows how many cores the
//! loader itself burned, so a client-bound figure is visible as such.

/// User + system CPU seconds of the whole process (every thread), or `None` off Linux.
pub fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields are counted from
    // the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name, in clock
    // ticks; USER_HZ is 100 on every Linux architecture's user ABI.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn grows_with_work() {
        let Some(a) = super::process_cpu_seconds() else {
            return;
        };
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 150 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let b = super::process_cpu_seconds().unwrap();
        assert!(b >= a + 0.05, "{a} -> {b} ({x})");
    }
}
