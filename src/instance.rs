//! One reporter per state directory: an exclusive `flock` on the directory
//! itself, held for the process's life and released by the kernel when it
//! ends, however it ends. A second instance (a manual run beside the unit)
//! says so and leaves: two would both set stages, both upload, race on the
//! ledger's temp file and both clean up.
//!
//! The directory, not a lock file in it: nothing to create on a full or
//! read-only disk, nothing for cleanup to remove (a lock file would have to
//! go while held, and keep the emptied directory alive if left behind).

use std::fs::File;
use std::path::Path;

use rustix::fs::{flock, FlockOperation};

/// The lock, held until dropped.
#[derive(Debug)]
pub(crate) struct InstanceLock {
    /// `None` when it could not be taken for another reason than another
    /// instance (logged): running unlocked beats not reporting.
    _dir: Option<File>,
}

#[derive(Debug)]
pub(crate) enum Lock {
    Held(InstanceLock),
    /// Another process holds it.
    Busy,
}

/// Takes the lock on `state_dir` (created if missing, as the ledger would),
/// never waiting for it.
pub(crate) fn take(state_dir: &Path) -> Lock {
    let unlocked = |why: String| {
        tracing::warn!(
            "{why}; running without the one-instance lock on {}",
            state_dir.display()
        );
        Lock::Held(InstanceLock { _dir: None })
    };
    if let Err(err) = std::fs::create_dir_all(state_dir) {
        return unlocked(format!("creating {}: {err}", state_dir.display()));
    }
    // std opens with O_CLOEXEC: a child the agent runs must not inherit the
    // lock and hold it after the agent is gone.
    let dir = match File::open(state_dir) {
        Ok(dir) => dir,
        Err(err) => return unlocked(format!("opening {}: {err}", state_dir.display())),
    };
    match flock(&dir, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Lock::Held(InstanceLock { _dir: Some(dir) }),
        Err(rustix::io::Errno::WOULDBLOCK) => Lock::Busy,
        Err(err) => unlocked(format!("locking {}: {err}", state_dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        let first = take(&state);
        assert!(matches!(&first, Lock::Held(InstanceLock { _dir: Some(_) })));
        // flock conflicts between open file descriptions, even in one process.
        assert!(matches!(take(&state), Lock::Busy));
        drop(first);
        assert!(matches!(
            take(&state),
            Lock::Held(InstanceLock { _dir: Some(_) })
        ));
        // Nothing is left in the directory.
        assert_eq!(std::fs::read_dir(&state).unwrap().count(), 0);
    }
}
