//! The wall clock: now, a point in time read from the command line, and
//! one written for people.
//!
//! Every wall-clock time pgbolt records is microseconds since the Unix
//! epoch from `CLOCK_REALTIME` ([`CLOCK`] names it in result files), so
//! the results of generators on different machines line up when their
//! clocks are kept in sync. Durations inside a run come from the engine's
//! monotonic clock instead; this module is for the times people read and
//! give. It uses nothing of the crate.

/// The clock every wall-clock time of a result comes from.
pub const CLOCK: &str =
    "CLOCK_REALTIME (system wall clock; keep the generators' clocks in sync with NTP or PTP)";

/// Now, µs since the Unix epoch.
pub fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Reads a point in time (`--start-at`): RFC 3339 (`2026-11-27T14:00:00Z`, an offset such
/// as `+01:00`, fractions of a second) or Unix seconds (`1795788000`,
/// `1795788000.5`); µs since the Unix epoch.
pub fn parse(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(seconds) = t.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1e6).round() as i64);
    }
    let (date, rest) = t.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-');
    let (year, month, day): (i64, i64, i64) = (
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
        d.next()?.parse().ok()?,
    );
    let (clock, offset_s) = if let Some(c) = rest.strip_suffix(['Z', 'z']) {
        (c, 0)
    } else {
        let at = rest.rfind(['+', '-'])?;
        let (c, zone) = rest.split_at(at);
        let (h, m) = zone[1..].split_once(':')?;
        let minutes = h.parse::<i64>().ok()? * 60 + m.parse::<i64>().ok()?;
        (
            c,
            if zone.starts_with('-') {
                -minutes
            } else {
                minutes
            } * 60,
        )
    };
    let mut c = clock.splitn(3, ':');
    let (hour, minute): (i64, i64) = (c.next()?.parse().ok()?, c.next()?.parse().ok()?);
    let second: f64 = c.next()?.parse().ok()?;
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0.0..61.0).contains(&second);
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let whole = days * 86_400 + hour * 3600 + minute * 60 - offset_s;
    Some(whole * 1_000_000 + (second * 1e6).round() as i64)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD HH:MM:SS UTC` of µs since the Unix epoch.
pub fn utc(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_795_780_800_000_000), "2026-11-27 12:00:00 UTC");
        assert_eq!(utc(951_825_600_000_000), "2000-02-29 12:00:00 UTC");
    }

    #[test]
    fn start_times_in_rfc_3339_or_unix_seconds() {
        let cases: &[(&str, Option<i64>)] = &[
            ("1795788000", Some(1_795_788_000_000_000)),
            ("1795788000.25", Some(1_795_788_000_250_000)),
            ("2026-11-27T12:00:00Z", Some(1_795_780_800_000_000)),
            ("2026-11-27T13:00:00+01:00", Some(1_795_780_800_000_000)),
            ("2026-11-27T11:30:00.5-00:30", Some(1_795_780_800_500_000)),
            ("2000-02-29 00:00:00Z", Some(951_782_400_000_000)),
            ("2026-13-01T00:00:00Z", None),
            ("2026-11-27T12:00:00", None),
            ("tomorrow", None),
            ("-5", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), *want, "{text}");
        }
    }
}
