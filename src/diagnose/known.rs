//! Known facts: lines of the anchors a healthy host logs over and over
//! ([`anchors::Repeating`]: a container's crash-loop back-off at every pod
//! sync, each DHCP renewal) are counted without being taken apart once a
//! line of the same key has been read.
//!
//! A line's key is found with a few precompiled byte searches: the
//! program that logged it and the bytes the rule's key is made of (the
//! container's name; the interface and its address). The first line of a
//! key is read as any other and its signal's hits remembered under the
//! key; a later line of that key only counts in those hits (count, times,
//! latest evidence), as reading it would, but for a fraction of the cost.
//! The scanner takes this path only where reading could not have said
//! anything else: a journal line (ISO stamp, `host tag: ` prefix) that
//! holds no other anchor and is not continued on the next line.

use std::sync::LazyLock;

use memchr::memmem;

use super::anchors::Repeating;

/// Keys a member remembers (a ring: the oldest goes first).
const KEYS_KEPT: usize = 64;

/// What a line's key is made of: the syslog identifier, and the bytes the
/// rule's own key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FactKey<'a> {
    pub(super) ident: &'a [u8],
    pub(super) key: &'a [u8],
}

/// The keys seen lately, with the hits (their index in the scanner's) the
/// line that taught each was counted in.
#[derive(Debug, Clone, Default)]
pub(super) struct Known {
    entries: Vec<Entry>,
    next: usize,
}

#[derive(Debug, Clone)]
struct Entry {
    kind: Repeating,
    /// `ident`, a NUL, `key`.
    bytes: Vec<u8>,
    hits: usize,
}

impl Known {
    /// The hits a line of this key counts in, if one was read.
    pub(super) fn hits_of(&self, kind: Repeating, key: FactKey<'_>) -> Option<usize> {
        let len = key.ident.len() + 1 + key.key.len();
        self.entries
            .iter()
            .find(|e| {
                e.kind == kind
                    && e.bytes.len() == len
                    && e.bytes[..key.ident.len()] == *key.ident
                    && e.bytes[key.ident.len() + 1..] == *key.key
            })
            .map(|e| e.hits)
    }

    /// Remembers that a line of this key was read and counted in `hits`.
    pub(super) fn learn(&mut self, kind: Repeating, bytes: Vec<u8>, hits: usize) {
        let entry = Entry { kind, bytes, hits };
        if self.entries.len() < KEYS_KEPT {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % KEYS_KEPT;
        }
    }
}

/// `ident`, a NUL, `key`: how [`Known::learn`] keeps a key.
pub(super) fn key_bytes(key: FactKey<'_>) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(key.ident.len() + 1 + key.key.len());
    bytes.extend_from_slice(key.ident);
    bytes.push(0);
    bytes.extend_from_slice(key.key);
    bytes
}

/// A journal line's prefix, `2026-11-22T10:00:00.001365+0000 host tag: `:
/// where its stamp ends, and its syslog identifier (the tag without its
/// pid), as `normalise::parse` would take them.
pub(super) struct JournalPrefix<'a> {
    pub(super) stamp: &'a [u8],
    pub(super) ident: &'a [u8],
    /// Where the message starts.
    pub(super) message: usize,
}

pub(super) fn journal_prefix(line: &[u8]) -> Option<JournalPrefix<'_>> {
    // An ISO stamp with its `T` (a space there is a capnslog or pod-log
    // shape, which `parse` reads otherwise).
    if !super::normalise::starts_with_iso_stamp(line) || line[10] != b'T' {
        return None;
    }
    let stamp_end = memchr::memchr(b' ', line)?;
    let host_start = stamp_end + 1;
    let host_end = host_start + memchr::memchr(b' ', &line[host_start..])?;
    let tag_start = host_end + 1;
    let tag_end = tag_start + memchr::memchr(b' ', &line[tag_start..])?;
    // `tag: `, the tag without a quote or `=` (normalise's host_and_ident).
    if tag_end < tag_start + 2 || line[tag_end - 1] != b':' || host_end == host_start {
        return None;
    }
    let tag = &line[tag_start..tag_end - 1];
    if tag.iter().any(|&b| b == b'"' || b == b'=') {
        return None;
    }
    let ident = memchr::memchr(b'[', tag).map_or(tag, |i| &tag[..i]);
    Some(JournalPrefix {
        stamp: &line[..stamp_end],
        ident,
        message: tag_end + 1,
    })
}

/// The key of a line of a repeating anchor at `anchor_at` (its message
/// from `message`), or `None` when the line is not of the shape whose
/// rule's key these bytes make (it is then read).
pub(super) fn fact_key(
    kind: Repeating,
    line: &[u8],
    message: usize,
    anchor_at: usize,
) -> Option<&[u8]> {
    static CONTAINER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new("restarting failed container="));
    static DHCP: LazyLock<memmem::FinderRev<'static>> =
        LazyLock::new(|| memmem::FinderRev::new("dhcp"));
    if anchor_at < message {
        return None;
    }
    match kind {
        // node::crash_loop: `… for \"NAME\" with CrashLoopBackOff: \"back-off
        // 20s restarting failed container=NAME pod=…`: the key is the name
        // after `container=`, up to a blank, a quote or a backslash.
        Repeating::CrashLoop => {
            if !line[..anchor_at].ends_with(b" with ") {
                return None;
            }
            let at = message + CONTAINER.find(&line[message..])?;
            let name = &line[at + CONTAINER.needle().len()..];
            let len = name
                .iter()
                .position(|&b| matches!(b, b' ' | b'"' | b'\\'))
                .unwrap_or(name.len());
            (len > 0).then(|| &name[..len])
        }
        // host::lease: `dhcp4 (ens3): state changed new lease,
        // address=192.168.122.10`: from the last `dhcp` before the anchor to
        // the address's end (a comma, blank, quote or backslash).
        Repeating::Lease => {
            let head_end = anchor_at.checked_sub("state changed ".len())?;
            if &line[head_end..anchor_at] != b"state changed " {
                return None;
            }
            let dhcp = message + DHCP.rfind(&line[message..head_end])?;
            let address_at = anchor_at + "new lease, address=".len();
            let address = line.get(address_at..)?;
            let len = address
                .iter()
                .position(|&b| matches!(b, b',' | b' ' | b'"' | b'\\'))
                .unwrap_or(address.len());
            (len > 0).then(|| &line[dhcp..address_at + len])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_crash_loops_and_leases() {
        let line = br#"2026-11-22T10:00:00.001365+0000 master-0 kubenswrapper[2345]: E1122 10:00:00.001365 2345 pod_workers.go:1301] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"ovn-controller\" with CrashLoopBackOff: \"back-off 20s restarting failed container=ovn-controller pod=x_y(8e)\"" pod="y/x""#;
        let prefix = journal_prefix(line).unwrap();
        assert_eq!(prefix.ident, b"kubenswrapper");
        let at = memmem::find(line, b"CrashLoopBackOff").unwrap();
        let key = fact_key(Repeating::CrashLoop, line, prefix.message, at).unwrap();
        assert_eq!(key, b"ovn-controller");

        let line = b"2026-11-22T10:00:00.011474+0000 master-0 NetworkManager[1203]: <info>  [1795341600.0114] dhcp4 (br-ex): state changed new lease, address=192.168.111.29";
        let prefix = journal_prefix(line).unwrap();
        assert_eq!(prefix.ident, b"NetworkManager");
        let at = memmem::find(line, b"new lease, address=").unwrap();
        let key = fact_key(Repeating::Lease, line, prefix.message, at).unwrap();
        assert_eq!(
            key,
            b"dhcp4 (br-ex): state changed new lease, address=192.168.111.29"
        );

        // Not a journal line, or not the rule's shape: read instead.
        assert!(journal_prefix(b"E1122 10:00:00.001365 2345 x.go:1] m").is_none());
        let odd =
            b"2026-11-22T10:00:00.011474+0000 m NetworkManager[1]: new lease, address=1.2.3.4";
        let prefix = journal_prefix(odd).unwrap();
        let at = memmem::find(odd, b"new lease").unwrap();
        assert!(fact_key(Repeating::Lease, odd, prefix.message, at).is_none());
    }

    #[test]
    fn known_keys_are_told_apart() {
        let mut known = Known::default();
        let a = FactKey {
            ident: b"kubenswrapper",
            key: b"etcd",
        };
        known.learn(Repeating::CrashLoop, key_bytes(a), 3);
        assert_eq!(known.hits_of(Repeating::CrashLoop, a), Some(3));
        assert_eq!(known.hits_of(Repeating::Lease, a), None);
        let b = FactKey {
            ident: b"kubenswrappe",
            key: b"retcd",
        };
        assert_eq!(known.hits_of(Repeating::CrashLoop, b), None);
    }
}
