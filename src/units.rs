//! Durations as users write them ("250ms", "30s", "2m", "1h", "1m30s") and back.

use std::time::Duration;

/// A duration that could not be read; its text says what to write instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration")]
    Empty,
    #[error("invalid duration '{0}' (use e.g. 30s, 2m, 500ms)")]
    Malformed(String),
    #[error("invalid duration unit '{unit}' in '{text}' (use ms, s, m or h)")]
    Unit { unit: String, text: String },
    #[error("invalid duration '{0}'")]
    Invalid(String),
    #[error("duration '{0}' is longer than a year")]
    TooLong(String),
}

/// Parses "250ms", "30s", "2m", "1h", "1m30s" or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    if let Ok(secs) = t.parse::<f64>() {
        return secs_to_duration(secs, text);
    }
    let mut total = 0f64;
    let mut num = String::new();
    let mut chars = t.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphabetic() {
                unit.push(n);
                chars.next();
            } else {
                break;
            }
        }
        let v: f64 = num
            .parse()
            .map_err(|_| DurationError::Malformed(text.into()))?;
        num.clear();
        let scale = match unit.as_str() {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "us" => 0.000_001,
            _ => {
                return Err(DurationError::Unit {
                    unit,
                    text: text.into(),
                });
            }
        };
        total += v * scale;
        any = true;
    }
    if !num.is_empty() || !any {
        return Err(DurationError::Malformed(text.into()));
    }
    secs_to_duration(total, text)
}

fn secs_to_duration(secs: f64, text: &str) -> Result<Duration, DurationError> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(DurationError::Invalid(text.into()));
    }
    if secs > 366.0 * 86_400.0 {
        return Err(DurationError::TooLong(text.into()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Renders a duration the way users write it.
pub fn show_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) || ms == 0 {
        format!("{ms}ms")
    } else if ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else {
        format!("{}s", ms / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        for bad in ["", "abc", "10x", "-5", "5s3", "nan"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(show_duration(Duration::from_secs(30)), "30s");
        assert_eq!(show_duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(show_duration(Duration::from_secs(120)), "2m");
    }
}
