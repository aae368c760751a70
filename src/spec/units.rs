//! The spec's two unit-bearing fields, read and written in one place: memory (`64G`, `500M`)
//! and time limits (`2h`, `1h30m`, Slurm's `1-00:00:00`). Every kind that reads a native form
//! back into a spec writes these fields with [`memory_text`] and [`duration_text`], so the
//! same request reads the same whatever it came from; what a kind's own API wants (sbatch's
//! `--time=D-HH:MM:SS`, a Kubernetes `Mi` quantity, dstack's `GB..`, SkyPilot's decimal GB)
//! stays in that kind's renderer.

/// Memory as written in a spec, in MiB (rounded up).
///
/// A whole number with an optional binary unit: `K`, `M`, `G`, `T` (also `KB`/`KiB`/`Ki` …,
/// any case); no unit means MiB, as in Slurm. Zero is refused.
pub fn parse_memory_mb(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "cannot read {text:?} as memory: write a whole number with an optional unit K, M, G or T (\"32G\", \"500M\")"
        )
    };
    let trimmed = text.trim();
    let digits_end = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(digits_end);
    if number.is_empty() {
        return Err(bad());
    }
    let number: u64 = number.parse().map_err(|_| bad())?;
    let unit = unit.trim().to_ascii_uppercase();
    let unit =
        unit.strip_suffix("IB").or_else(|| unit.strip_suffix('I')).or_else(|| unit.strip_suffix('B')).unwrap_or(&unit);
    let mib = match unit {
        "K" => number.div_ceil(1024),
        "" | "M" => number,
        "G" => number.checked_mul(1024).ok_or_else(bad)?,
        "T" => number.checked_mul(1024 * 1024).ok_or_else(bad)?,
        _ => return Err(bad()),
    };
    if mib == 0 {
        return Err(format!("memory {text:?} is zero"));
    }
    Ok(mib)
}

/// A time limit as written in a spec, in seconds.
///
/// Unit form: one or more `<number><unit>` with units `d`, `h`, `m`, `s` (`2h`, `90m`, `30s`,
/// `1h30m`). Slurm form: `MIN`, `MIN:SS`, `H:MM:SS`, `D-H`, `D-H:MM`, `D-H:MM:SS`, where only
/// the leading field may exceed its usual range. Zero and `UNLIMITED` are refused.
pub fn parse_time_limit_secs(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "cannot read {text:?} as a time limit: write \"2h\", \"90m\", \"30s\", \"1-00:00:00\", \"HH:MM:SS\", \"MM:SS\" or minutes"
        )
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(bad());
    }
    let secs = if t.chars().last().is_some_and(|c| c.is_ascii_alphabetic()) {
        parse_unit_time(t).ok_or_else(bad)?
    } else {
        parse_slurm_time(t).ok_or_else(bad)?
    };
    if secs == 0 {
        return Err(format!("time limit {text:?} is zero"));
    }
    Ok(secs)
}

fn parse_unit_time(t: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut rest = t;
    let mut last_rank = usize::MAX;
    while !rest.is_empty() {
        let digits_end = rest.find(|c: char| !c.is_ascii_digit())?;
        if digits_end == 0 {
            return None;
        }
        let number: u64 = rest[..digits_end].parse().ok()?;
        let unit = rest[digits_end..].chars().next()?;
        let (rank, scale) = match unit.to_ascii_lowercase() {
            'd' => (3, 86_400),
            'h' => (2, 3_600),
            'm' => (1, 60),
            's' => (0, 1),
            _ => return None,
        };
        // Units in falling order, each at most once (`1h30m`, not `30m1h` or `1h1h`).
        if rank >= last_rank {
            return None;
        }
        last_rank = rank;
        total = total.checked_add(number.checked_mul(scale)?)?;
        rest = &rest[digits_end + unit.len_utf8()..];
    }
    Some(total)
}

fn parse_slurm_time(t: &str) -> Option<u64> {
    fn num(s: &str) -> Option<u64> {
        (!s.is_empty() && s.chars().all(|c| c.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    }
    fn below_60(s: &str) -> Option<u64> {
        num(s).filter(|v| *v < 60)
    }
    if let Some((days, rest)) = t.split_once('-') {
        let days = num(days)?;
        let parts: Vec<&str> = rest.split(':').collect();
        let hours = num(parts[0]).filter(|h| *h < 24)?;
        let (minutes, seconds) = match parts.as_slice() {
            [_] => (0, 0),
            [_, m] => (below_60(m)?, 0),
            [_, m, s] => (below_60(m)?, below_60(s)?),
            _ => return None,
        };
        return days.checked_mul(86_400)?.checked_add(hours * 3_600 + minutes * 60 + seconds);
    }
    let parts: Vec<&str> = t.split(':').collect();
    match parts.as_slice() {
        [minutes] => num(minutes)?.checked_mul(60),
        [minutes, seconds] => num(minutes)?.checked_mul(60)?.checked_add(below_60(seconds)?),
        [hours, minutes, seconds] => {
            num(hours)?.checked_mul(3_600)?.checked_add(below_60(minutes)? * 60 + below_60(seconds)?)
        }
        _ => None,
    }
}

/// MiB as the spec writes memory: the largest unit that holds it exactly (`1T`, `64G`,
/// `61036M`). [`parse_memory_mb`] reads every such text back to the same MiB.
pub fn memory_text(mib: u64) -> String {
    if mib.is_multiple_of(1024 * 1024) {
        format!("{}T", mib / (1024 * 1024))
    } else if mib.is_multiple_of(1024) {
        format!("{}G", mib / 1024)
    } else {
        format!("{mib}M")
    }
}

/// Seconds as the spec writes a time limit: each unit that is not zero, largest first, once
/// (`2h`, `1h30m`, `1d2h3m4s`, `45s`): exact for every whole second and the form
/// [`parse_time_limit_secs`] reads in units. Zero is `0s` (a spec refuses it as a limit).
pub fn duration_text(secs: u64) -> String {
    if secs == 0 {
        return "0s".to_string();
    }
    let mut out = String::new();
    let mut rest = secs;
    for (unit, size) in [('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)] {
        if rest >= size {
            out.push_str(&format!("{}{unit}", rest / size));
            rest %= size;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_forms() {
        for (text, mib) in [
            ("32G", 32 * 1024),
            ("32g", 32 * 1024),
            ("32GB", 32 * 1024),
            ("32GiB", 32 * 1024),
            ("32Gi", 32 * 1024),
            ("500M", 500),
            ("500", 500),
            ("1T", 1024 * 1024),
            ("1536K", 2),
            ("1K", 1),
            (" 8 G ", 8192),
        ] {
            assert_eq!(parse_memory_mb(text), Ok(mib), "{text}");
        }
        for text in ["", "G", "1.5G", "-1G", "32X", "0", "0G", "32 GBs", "99999999999999999999T", "18014398509481984T"]
        {
            assert!(parse_memory_mb(text).is_err(), "{text}");
        }
    }

    #[test]
    fn time_forms() {
        for (text, secs) in [
            ("2h", 7200),
            ("90m", 5400),
            ("30s", 30),
            ("1d", 86_400),
            ("1h30m", 5400),
            ("1d2h3m4s", 93_784),
            ("2H", 7200),
            ("1-00:00:00", 86_400),
            ("2-12", 2 * 86_400 + 12 * 3600),
            ("1-2:30", 86_400 + 2 * 3600 + 30 * 60),
            ("01:30:00", 5400),
            ("100:00:00", 360_000),
            ("90:30", 90 * 60 + 30),
            ("05:00", 300),
            ("60", 3600),
            ("1", 60),
        ] {
            assert_eq!(parse_time_limit_secs(text), Ok(secs), "{text}");
        }
        for text in [
            "",
            "0",
            "0s",
            "00:00:00",
            "2x",
            "h",
            "1h1h",
            "30m1h",
            "1:60",
            "1:2:3:4",
            "1-24:00:00",
            "1-1:60",
            "-1",
            "1.5h",
            "UNLIMITED",
            "infinite",
            "1 h",
            "a-1",
        ] {
            assert!(parse_time_limit_secs(text).is_err(), "{text}");
        }
    }

    #[test]
    fn texts_are_the_largest_exact_units() {
        for (mib, text) in
            [(1, "1M"), (1023, "1023M"), (1024, "1G"), (1536, "1536M"), (1 << 20, "1T"), (3 << 30, "3072T")]
        {
            assert_eq!(memory_text(mib), text);
        }
        for (secs, text) in [(1, "1s"), (60, "1m"), (5400, "1h30m"), (7200, "2h"), (86_400, "1d"), (93_784, "1d2h3m4s")]
        {
            assert_eq!(duration_text(secs), text);
        }
    }
}
