//! What `collect` and `inspect` share: their flags' value parsers and their
//! exit code on a runtime failure.

pub(crate) use crate::config::settings::parse_duration;

/// `200MiB`, `64M`, `1GiB`, `4096`, `10k`: binary units, case-insensitive.
pub(crate) fn parse_size(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{value:?} is not a size (expected e.g. 200MiB, 64M, 4096)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("unknown size unit {unit:?} (use KiB, MiB or GiB)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{value:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("200MiB"), Ok(200 << 20));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10 KiB"), Ok(10 << 10));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5TB").unwrap_err().contains("unknown size unit"));
    }
}
