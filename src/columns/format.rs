//! Small value formats the table cells share.

/// A duration in the compact form the tables use: `42s`, `7m05s`, `5h07m`, `3d04h`.
pub fn duration(secs: u64) -> String {
    Duration(secs).to_string()
}

/// [`duration`] as a value to format, so that a cell is written without a string of its own.
pub struct Duration(pub u64);

impl std::fmt::Display for Duration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.0;
        let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
        if d > 0 {
            write!(f, "{d}d{h:02}h")
        } else if h > 0 {
            write!(f, "{h}h{m:02}m")
        } else if m > 0 {
            write!(f, "{m}m{s:02}s")
        } else {
            write!(f, "{s}s")
        }
    }
}

/// A running time as the tables show it, no finer than the eye needs: seconds only in the
/// first minute (`42s`), then whole minutes (`7m`), hours and minutes (`5h07m`), days and
/// hours (`3d04h`). A cell showing it changes at most once a minute after the first, so an
/// idle cockpit sends a frame over the link only when a minute turns (squeue's `4:39`
/// ticking every second would be a frame per refresh); JSON keeps the exact seconds.
pub fn elapsed(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3_600 => format!("{}m", s / 60),
        s => duration(s - s % 60),
    }
}

/// Mebibytes as `0`, `3.5G` (below 10 GiB) or `512G`: a value to format, so that a cell is
/// written without a string per figure.
pub struct Gib(pub u64);

impl std::fmt::Display for Gib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => f.write_str("0"),
            m if m >= 10 * 1024 => write!(f, "{}G", m / 1024),
            m => write!(f, "{:.1}G", m as f64 / 1024.0),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_times_are_coarse_past_the_first_minute() {
        assert_eq!(elapsed(0), "0s");
        assert_eq!(elapsed(59), "59s");
        assert_eq!(elapsed(60), "1m");
        assert_eq!(elapsed(4 * 60 + 39), "4m");
        assert_eq!(elapsed(3_599), "59m");
        assert_eq!(elapsed(3_600), "1h00m");
        assert_eq!(elapsed(5 * 3_600 + 7 * 60 + 59), "5h07m");
        assert_eq!(elapsed(3 * 86_400 + 4 * 3_600 + 59), "3d04h");
        // Within a minute past the first, every second reads the same.
        assert!((0..60).all(|s| elapsed(7 * 60 + s) == "7m"));
    }
}
