//! `reporter.conf`: optional settings with the same names as the upstream
//! unit's environment, `KEY=VALUE` per line, so a unit's `EnvironmentFile=`
//! and this file are interchangeable. The token never belongs here.

use super::layout::{env, files};

/// The `KEY=VALUE` lines of `reporter.conf`, in order. Which keys mean
/// something is `config`'s (its settings table): an unknown key is a
/// warning for the agent and an error for `config check`.
#[derive(Debug, Default)]
pub struct Tunables {
    pub(crate) entries: Vec<Entry>,
    /// Lines that are no `KEY=VALUE`, skipped; they quote no value.
    pub(crate) problems: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) value: String,
    /// 1-based, for messages.
    pub(crate) line: usize,
}

impl Tunables {
    /// The value of `key`; the last line that sets it wins, as in a unit's
    /// `EnvironmentFile=`.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().rev().find(|e| e.key == key)
    }
}

/// Checks a `reporter.conf` text as the reporter would read it (the fuzz
/// target's way in).
pub fn check_tunables(text: &str) -> Result<(), String> {
    match parse(text)?.problems.into_iter().next() {
        Some(problem) => Err(problem),
        None => Ok(()),
    }
}

pub(crate) fn parse(text: &str) -> Result<Tunables, String> {
    let mut tunables = Tunables::default();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            tunables
                .problems
                .push(format!("line {}: expected KEY=VALUE", number + 1));
            continue;
        };
        let key = key.trim();
        if key == env::TOKEN {
            return Err(format!(
                "line {}: {} does not belong here; put the secret in the 0600 file {}",
                number + 1,
                env::TOKEN,
                files::PULL_SECRET
            ));
        }
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            tunables.problems.push(format!(
                "line {}: a key is letters, digits and _",
                number + 1
            ));
            continue;
        }
        tunables.entries.push(Entry {
            key: key.to_owned(),
            value: value.trim().trim_matches('"').to_owned(),
            line: number + 1,
        });
    }
    Ok(tunables)
}
