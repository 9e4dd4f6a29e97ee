//! The journal cache: between the bundles of one run, each journal member
//! as it was shipped (redacted, compressed chunks), journalctl's cursor
//! after its last entry and the diagnosis observer's state, so that the next
//! bundle reads only the entries after the cursor (`Members::journal`).
//! Bounded by [`CACHE_BYTES`].

use std::collections::BTreeMap;

use super::chunks::Saved;
use super::observe::LineObserver;

/// Most memory the cache may hold: with the default caps a journal member
/// compresses to a few MiB, so this keeps this boot's journal and the
/// noisy units of a busy host; a member that does not fit is read afresh
/// by each bundle, as without a cache.
pub(crate) const CACHE_BYTES: u64 = 12 << 20;

/// The journal members of earlier bundles, by member path.
#[derive(Debug)]
pub(crate) struct Cache {
    entries: BTreeMap<String, CacheEntry>,
    /// Bytes a member keeps for later bundles (the member cap).
    keep: u64,
}

/// One member's stream as the last bundle left it.
#[derive(Debug)]
pub(crate) struct CacheEntry {
    /// The command line (without the cursor options): another one starts afresh.
    pub(crate) source: String,
    /// journalctl's cursor of the last entry read.
    pub(crate) cursor: String,
    pub(crate) saved: Saved,
    /// Source bytes read so far, for the manifest's `original_bytes`.
    pub(crate) original_bytes: u64,
    /// Secrets replaced so far.
    pub(crate) redactions: usize,
    /// The diagnosis observer's state after the last entry read.
    pub(crate) observer: Option<Box<dyn LineObserver>>,
}

impl Cache {
    pub(crate) fn new(keep: u64) -> Self {
        Self {
            entries: BTreeMap::new(),
            keep,
        }
    }

    /// Takes member `path`'s entry out if it was read by the same command;
    /// also says how much a member keeps.
    pub(crate) fn take(&mut self, path: &str, source: &str) -> (Option<CacheEntry>, u64) {
        let entry = self.entries.remove(path).filter(|e| e.source == source);
        (entry, self.keep)
    }

    /// Keeps `entry` for the next bundle, unless the cache is full.
    pub(crate) fn put(&mut self, path: &str, entry: CacheEntry) {
        let others: u64 = self
            .entries
            .iter()
            .filter(|(p, _)| p.as_str() != path)
            .map(|(_, e)| e.saved.held_bytes())
            .sum();
        if others + entry.saved.held_bytes() > CACHE_BYTES {
            tracing::debug!(
                member = path,
                "the journal cache is full: this member is read afresh by the next bundle"
            );
            self.entries.remove(path);
            return;
        }
        self.entries.insert(path.to_owned(), entry);
    }

    /// Memory the cache holds.
    #[cfg(test)]
    pub(crate) fn held_bytes(&self) -> u64 {
        self.entries.values().map(|e| e.saved.held_bytes()).sum()
    }

    /// Members cached.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
