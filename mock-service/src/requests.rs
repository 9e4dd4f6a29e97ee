//! The journal of public-API requests that tests read back through
//! `GET /admin/requests`: what the agent sent, how it authenticated (never the
//! credential itself) and what it got.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde::Serialize;

use crate::model::ser_time;

#[derive(Clone, Debug, Serialize)]
pub struct RequestRecord {
    pub seq: u64,
    #[serde(serialize_with = "ser_time")]
    pub at: SystemTime,
    pub method: String,
    pub path: String,
    /// Query string with any `api_key` value redacted.
    pub query: String,
    /// `agent`, `user`, `none` or `invalid`.
    pub auth: &'static str,
    /// 0 when no response was sent (connection dropped by a fault or the client).
    pub status: u16,
    pub fault: bool,
    pub duration_ms: u64,
    pub body_bytes: u64,
}

#[derive(Debug, Default)]
pub struct Journal {
    seq: AtomicU64,
    entries: Mutex<Vec<RequestRecord>>,
}

impl Journal {
    pub fn list(&self) -> Vec<RequestRecord> {
        self.entries.lock().unwrap().clone()
    }

    pub fn clear(&self) {
        self.entries.lock().unwrap().clear();
    }

    pub fn begin(
        self: &Arc<Self>,
        method: &str,
        path: &str,
        query: &str,
        auth: &'static str,
        body_bytes: Arc<AtomicU64>,
    ) -> RecordGuard {
        RecordGuard {
            journal: Arc::clone(self),
            started: Instant::now(),
            at: SystemTime::now(),
            method: method.to_owned(),
            path: path.to_owned(),
            query: redact(query),
            auth,
            status: 0,
            fault: false,
            body_bytes,
        }
    }
}

/// Writes the record when dropped, so requests whose handler is cancelled
/// (dropped connection) are journaled too, with status 0.
pub struct RecordGuard {
    journal: Arc<Journal>,
    started: Instant,
    at: SystemTime,
    method: String,
    path: String,
    query: String,
    auth: &'static str,
    pub status: u16,
    pub fault: bool,
    body_bytes: Arc<AtomicU64>,
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        let record = RequestRecord {
            seq: self.journal.seq.fetch_add(1, Ordering::SeqCst) + 1,
            at: self.at,
            method: std::mem::take(&mut self.method),
            path: std::mem::take(&mut self.path),
            query: std::mem::take(&mut self.query),
            auth: self.auth,
            status: self.status,
            fault: self.fault,
            duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            body_bytes: self.body_bytes.load(Ordering::SeqCst),
        };
        if let Ok(mut entries) = self.journal.entries.lock() {
            entries.push(record);
        }
    }
}

fn redact(query: &str) -> String {
    query
        .split('&')
        .map(|kv| {
            if kv.starts_with("api_key=") {
                "api_key=REDACTED"
            } else {
                kv
            }
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_is_redacted() {
        assert_eq!(
            redact("logs_type=host&api_key=secret&host_id=1"),
            "logs_type=host&api_key=REDACTED&host_id=1"
        );
    }

    #[test]
    fn guard_records_on_drop() {
        let j = Arc::new(Journal::default());
        let bytes = Arc::new(AtomicU64::new(7));
        let mut g = j.begin("PUT", "/p", "", "agent", bytes);
        g.status = 200;
        drop(g);
        drop(j.begin("GET", "/q", "", "none", Arc::default()));
        let list = j.list();
        assert_eq!(list.len(), 2);
        assert_eq!(
            (list[0].seq, list[0].status, list[0].body_bytes),
            (1, 200, 7)
        );
        assert_eq!((list[1].seq, list[1].status), (2, 0));
    }
}
