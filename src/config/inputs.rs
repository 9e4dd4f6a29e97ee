//! The raw inputs of the configuration: the values the command line gave, as
//! plain data (`cli` fills [`Flags`] from its arguments, so nothing below it
//! knows clap), and the provenance every value carries into error messages.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::settings::Key;

/// What the command line of `run` set; `None` = not given there. Help texts
/// and value syntax are `cli`'s (built from [`super::settings::SETTINGS`]).
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub config_dir: Option<PathBuf>,
    pub state_dir: Option<PathBuf>,
    pub root: Option<PathBuf>,
    pub pull_secret_file: Option<PathBuf>,
    pub cacert: Option<PathBuf>,
    pub insecure: bool,
    /// The settings table's flags, as written.
    pub settings: BTreeMap<Key, String>,
}

impl Flags {
    /// Sets `key` as its flag would.
    #[cfg(test)]
    pub(crate) fn set(&mut self, key: Key, value: impl Into<String>) -> &mut Self {
        self.settings.insert(key, value.into());
        self
    }
}

/// A value and where it came from (a flag, a variable, a file's path).
pub(super) struct Found {
    pub(crate) value: String,
    pub(crate) from: String,
}

pub(super) fn found(value: &str, from: &str) -> Found {
    Found {
        value: value.trim().to_owned(),
        from: from.to_owned(),
    }
}
