//! The per-member line hook: whoever runs the collectors may watch each
//! member's bytes as they go in (redacted, exactly as archived) and learn
//! where the member ended up. The agent connects the diagnosis engine here
//! (`assemble`); collect knows nothing of what watches.

use std::any::Any;

/// Where a watched member ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// The member is in the archive (a skipped or empty failed one is not).
    pub(crate) archived: bool,
    /// Oldest bytes a size cap cut away: the archive keeps the newest.
    pub(crate) dropped_bytes: u64,
    /// Lines of the member as archived, for renumbering what was seen.
    pub member_lines: u64,
}

/// Watches one member's bytes, in the same pass that stores them.
pub(crate) trait LineObserver: Send + std::fmt::Debug {
    /// The member's next bytes, in order.
    fn feed(&mut self, data: &[u8]);
    /// Complete lines fed so far.
    fn lines(&self) -> u64;
    /// A copy that carries on with the same stream in a later bundle (a
    /// followed journal resumes after its cursor).
    fn resumed(&self) -> Box<dyn LineObserver>;
    /// The observer as its own type again, for the hook that made it.
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// The hook: an observer for each member worth watching, handed back once
/// the member is placed.
pub(crate) trait Observers {
    /// An observer for member `path`; `None` = not watched.
    fn observer(&mut self, path: &str) -> Option<Box<dyn LineObserver>>;
    /// Takes back a member's observer with where the member ended up.
    fn observed(&mut self, observer: Box<dyn LineObserver>, placement: Placement);
}

/// Watches nothing: collectors run for their members alone.
#[cfg(test)]
pub(crate) struct Unobserved;

#[cfg(test)]
impl Observers for Unobserved {
    fn observer(&mut self, _path: &str) -> Option<Box<dyn LineObserver>> {
        None
    }

    fn observed(&mut self, _observer: Box<dyn LineObserver>, _placement: Placement) {}
}
