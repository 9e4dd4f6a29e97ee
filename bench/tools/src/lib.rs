//! What more than one bench tool needs: the process's own CPU time, read
//! from the kernel's accounting so a busy machine does not inflate it.

use anyhow::Context as _;

/// User + system CPU seconds of this process so far.
pub fn cpu_seconds() -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name in parentheses: utime is the 14th field.
    let rest = stat.rsplit_once(") ").context("odd /proc/self/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>()? + fields[12].parse::<f64>()?;
    // USER_HZ is 100 on every Linux the bench runs on.
    Ok(ticks / 100.0)
}
