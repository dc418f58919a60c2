//! Formatting for messages: short human durations (timeouts, grace periods).

use std::time::Duration;

/// `1.5s`, `250ms`, `2.0m`: short human durations for messages.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1_000 {
        format!("{ms}ms")
    } else if ms < 120_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{:.1}m", d.as_secs_f64() / 60.0)
    }
}
