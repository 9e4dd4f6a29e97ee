//! A secret value (the agent token, a registry auth) that never prints: its
//! `Debug` hides it, so a stray `{:?}` cannot leak it into the journal. The
//! value is reached only through [`Secret::expose`], which a reader can grep.

use std::fmt;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}
