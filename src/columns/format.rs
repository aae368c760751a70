//! Small value formats the table cells share.

/// A duration in the compact form the tables use: `42s`, `7m05s`, `5h07m`, `3d04h`.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d{h:02}h")
    } else if h > 0 {
        format!("{h}h{m:02}m")
    } else if m > 0 {
        format!("{m}m{s:02}s")
    } else {
        format!("{s}s")
    }
}

/// Mebibytes as `0`, `3.5G` (below 10 GiB) or `512G`.
pub fn gib(mb: u64) -> String {
    match mb {
        0 => "0".into(),
        m if m >= 10 * 1024 => format!("{}G", m / 1024),
        m => format!("{:.1}G", m as f64 / 1024.0),
    }
}

/// Dollars per hour as both front ends write them: `2.49`, `0.35`, `1204` (no cents past
/// $1,000/h, where they are noise).
pub fn cost(per_hour: f64) -> String {
    if !per_hour.is_finite() || per_hour < 0.0 {
        return "?".into();
    }
    if per_hour >= 1000.0 { format!("{per_hour:.0}") } else { format!("{per_hour:.2}") }
}
