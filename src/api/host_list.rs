//! The host list (`GET /v2/infra-envs/{id}/hosts`, `GET /v2/clusters/{id}/hosts`)
//! read as a stream: only the reporter's own host is kept, so memory does not
//! grow with the list.
//!
//! A real host carries its whole hardware inventory (tens of KiB), and a
//! late-binding infra-env or a large cluster lists thousands of them: a list
//! of tens of MiB is plausible, and parsing it into a `Vec<Host>` would cost a
//! multiple of that under the unit's `MemoryMax=256M`. Here the body flows
//! through a small channel into `serde_json`'s streaming reader, each element
//! is looked at and dropped, and two caps bound a broken or hostile answer:
//! [`MAX_LIST_BYTES`] transferred and [`MAX_LIST_HOSTS`] elements looked at
//! before the host is found. Peak memory is one element plus the channel.

use std::fmt;
use std::io::Read;

use serde::de::{DeserializeSeed, IgnoredAny, SeqAccess, Visitor};
use serde::Deserializer as _;
use uuid::Uuid;

use super::types::Host;

/// Bytes of one host list the reporter reads at most.
pub(crate) const MAX_LIST_BYTES: u64 = 64 << 20;
/// Hosts looked at before giving up on finding ours. OpenShift supports 2000
/// nodes per cluster; an infra-env with more hosts than this is broken or not
/// the one the reporter belongs to.
pub(crate) const MAX_LIST_HOSTS: usize = 10_000;

/// Why a host list could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostListError {
    /// More elements than the cap came before our host.
    TooManyHosts { looked_at: usize },
    /// Not a JSON array of hosts.
    Invalid(String),
}

impl fmt::Display for HostListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostListError::TooManyHosts { looked_at } => write!(
                f,
                "the host list holds more than {looked_at} hosts before this one; \
                 refusing to read further (cap {MAX_LIST_HOSTS})"
            ),
            HostListError::Invalid(detail) => write!(f, "not a list of hosts: {detail}"),
        }
    }
}

/// What a scan of a host list found.
#[derive(Debug)]
pub struct Scan {
    pub host: Option<Host>,
    /// Elements of the list (all of them: the rest is skipped, not parsed,
    /// once the host is found).
    pub elements: usize,
}

/// Scans a JSON array of hosts from `reader` for host `host_id`. Elements
/// before it are parsed as hosts one at a time and dropped; after it, only
/// skipped. More than `max_hosts` elements before it is an error.
pub fn find_in_host_list<R: Read>(
    reader: R,
    host_id: Uuid,
    max_hosts: usize,
) -> Result<Scan, HostListError> {
    let mut de = serde_json::Deserializer::from_reader(reader);
    let scan = de
        .deserialize_seq(ListVisitor { host_id, max_hosts })
        .map_err(|err| match too_many(&err) {
            Some(n) => HostListError::TooManyHosts { looked_at: n },
            None => HostListError::Invalid(err.to_string()),
        })?;
    de.end()
        .map_err(|err| HostListError::Invalid(err.to_string()))?;
    Ok(scan)
}

const TOO_MANY_TAG: &str = "abr-too-many-hosts:";

fn too_many(err: &serde_json::Error) -> Option<usize> {
    let text = err.to_string();
    let rest = text.strip_prefix(TOO_MANY_TAG)?;
    rest.split_whitespace().next()?.parse().ok()
}

struct ListVisitor {
    host_id: Uuid,
    max_hosts: usize,
}

impl<'de> Visitor<'de> for ListVisitor {
    type Value = Scan;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of hosts")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scan, A::Error> {
        let mut elements = 0usize;
        let mut found = None;
        while found.is_none() {
            if elements >= self.max_hosts {
                return Err(serde::de::Error::custom(format!(
                    "{TOO_MANY_TAG}{elements}"
                )));
            }
            match seq.next_element_seed(HostSeed)? {
                Some(host) => {
                    elements += 1;
                    if host.id == self.host_id {
                        found = Some(host);
                    }
                }
                None => {
                    return Ok(Scan {
                        host: None,
                        elements,
                    })
                }
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {
            elements += 1;
        }
        Ok(Scan {
            host: found,
            elements,
        })
    }
}

struct HostSeed;

impl<'de> DeserializeSeed<'de> for HostSeed {
    type Value = Host;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Host, D::Error> {
        serde::Deserialize::deserialize(d)
    }
}

/// A `std::io::Read` over chunks sent from the async side; used from a
/// blocking task so the parser can pull while the response streams in.
pub struct ChunkReader {
    rx: tokio::sync::mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
}

impl ChunkReader {
    pub fn new(rx: tokio::sync::mpsc::Receiver<Vec<u8>>) -> Self {
        Self {
            rx,
            current: Vec::new(),
            pos: 0,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pos >= self.current.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.current = chunk;
                    self.pos = 0;
                }
                // Sender gone: end of body (or the caller gave up; it then
                // reports its own error, not the parser's).
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "2c7d4e0a-8f9b-4d4e-9a55-0f1e2d3c4b5a";

    fn host(id: &str, pad: usize) -> String {
        format!(
            r#"{{"id":"{id}","status":"installing-in-progress","inventory":"{}"}}"#,
            "x".repeat(pad)
        )
    }

    fn other(i: usize) -> String {
        format!("00000000-0000-4000-8000-{i:012}")
    }

    #[test]
    fn finds_the_host_anywhere_and_counts_the_rest() {
        let me = Uuid::parse_str(ME).unwrap();
        let list = format!(
            "[{},{},{}]",
            host(&other(1), 10),
            host(ME, 10),
            host(&other(2), 10)
        );
        let scan = find_in_host_list(list.as_bytes(), me, 10).unwrap();
        assert_eq!(scan.host.unwrap().id, me);
        assert_eq!(scan.elements, 3);
        let scan = find_in_host_list(b"[]".as_slice(), me, 10).unwrap();
        assert!(scan.host.is_none());
    }

    #[test]
    fn too_many_hosts_before_ours_is_a_clear_error() {
        let me = Uuid::parse_str(ME).unwrap();
        let list: Vec<String> = (0..5)
            .map(|i| host(&other(i), 1))
            .chain([host(ME, 1)])
            .collect();
        let list = format!("[{}]", list.join(","));
        let err = find_in_host_list(list.as_bytes(), me, 3).unwrap_err();
        assert_eq!(err, HostListError::TooManyHosts { looked_at: 3 });
        assert!(err.to_string().contains("more than 3 hosts"));
        // Found within the cap: fine however long the list is.
        assert!(find_in_host_list(list.as_bytes(), me, 6)
            .unwrap()
            .host
            .is_some());
    }

    #[test]
    fn garbage_is_invalid_not_a_panic() {
        let me = Uuid::parse_str(ME).unwrap();
        for bad in [
            &b"{}"[..],
            b"[1]",
            b"[",
            b"[{\"id\":\"x\"}]",
            b"[] trailing",
            b"",
        ] {
            assert!(matches!(
                find_in_host_list(bad, me, 10),
                Err(HostListError::Invalid(_))
            ));
        }
    }

    #[test]
    fn a_33_mib_list_is_read_in_one_pass_through_the_channel() {
        let me = Uuid::parse_str(ME).unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let producer = std::thread::spawn(move || {
            tx.blocking_send(b"[".to_vec()).unwrap();
            for i in 0..5000 {
                let h = format!("{},", host(&other(i), 6900));
                tx.blocking_send(h.into_bytes()).unwrap();
            }
            tx.blocking_send(format!("{}]", host(ME, 0)).into_bytes())
                .unwrap();
        });
        let scan = find_in_host_list(ChunkReader::new(rx), me, MAX_LIST_HOSTS).unwrap();
        producer.join().unwrap();
        assert_eq!(scan.elements, 5001);
        assert!(scan.host.is_some());
    }
}
