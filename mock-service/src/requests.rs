//! The journal of public-API requests that tests read back through
//! `GET /admin/requests`: what the agent sent (path, query, small JSON bodies,
//! multipart field names), how it authenticated (never the credential itself)
//! and what it got. The contract tests validate these records against the
//! swagger definition, so they keep enough of each request to do that.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use serde::Serialize;
use serde_json::Value;

use crate::rfc3339::ser_time;

/// JSON bodies up to this size are kept whole; larger ones (or bodies that
/// are not JSON) are only counted. Progress bodies are a few hundred bytes.
pub const MAX_CAPTURED_BODY: usize = 64 * 1024;

/// What the gate and the handlers learn about a request body while it
/// streams through, shared with the record that is written at the end.
#[derive(Debug, Default)]
pub struct BodyCapture {
    pub bytes: AtomicU64,
    /// `Some` while capturing; set to `None` once the body outgrows the cap.
    pub json: Mutex<Option<Vec<u8>>>,
    /// Names of multipart fields, in order, as the upload handler met them.
    pub form_fields: Mutex<Vec<String>>,
}

impl BodyCapture {
    /// A capture that keeps the body's bytes (up to the cap) when `keep` is set.
    pub fn new(keep: bool) -> Self {
        BodyCapture {
            bytes: AtomicU64::new(0),
            json: Mutex::new(keep.then(Vec::new)),
            form_fields: Mutex::default(),
        }
    }

    pub fn chunk(&self, data: &[u8]) {
        self.bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
        let mut json = self.json.lock().unwrap();
        if let Some(buf) = json.as_mut() {
            if buf.len() + data.len() > MAX_CAPTURED_BODY {
                *json = None;
            } else {
                buf.extend_from_slice(data);
            }
        }
    }

    pub fn form_field(&self, name: &str) {
        let mut fields = self.form_fields.lock().unwrap();
        if fields.len() < 64 {
            fields.push(name.to_owned());
        }
    }

    fn body(&self) -> Option<Value> {
        let json = self.json.lock().unwrap();
        json.as_deref()
            .filter(|b| !b.is_empty())
            .and_then(|b| serde_json::from_slice(b).ok())
    }
}

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
    /// The request's `Content-Type`, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The body, when it was JSON within [`MAX_CAPTURED_BODY`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Multipart field names, for uploads.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub form_fields: Vec<String>,
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
        content_type: Option<String>,
        capture: Arc<BodyCapture>,
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
            content_type,
            capture,
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
    content_type: Option<String>,
    capture: Arc<BodyCapture>,
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
            body_bytes: self.capture.bytes.load(Ordering::SeqCst),
            content_type: self.content_type.take(),
            body: self.capture.body(),
            form_fields: std::mem::take(&mut *self.capture.form_fields.lock().unwrap()),
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
    fn capture_gives_up_past_the_cap_and_skips_non_json() {
        let big = BodyCapture::new(true);
        big.chunk(&vec![b' '; MAX_CAPTURED_BODY]);
        big.chunk(b"{}");
        assert_eq!(big.body(), None);
        assert_eq!(
            big.bytes.load(Ordering::SeqCst),
            MAX_CAPTURED_BODY as u64 + 2
        );
        let off = BodyCapture::new(false);
        off.chunk(b"{}");
        assert_eq!(off.body(), None);
        let torn = BodyCapture::new(true);
        torn.chunk(b"{\"current_stage\":");
        assert_eq!(torn.body(), None);
    }

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
        let capture = Arc::new(BodyCapture::new(true));
        capture.chunk(br#"{"current_stage":"#);
        capture.chunk(br#""Rebooting"}"#);
        let mut g = j.begin(
            "PUT",
            "/p",
            "",
            "agent",
            Some("application/json".into()),
            capture,
        );
        g.status = 200;
        drop(g);
        drop(j.begin("GET", "/q", "", "none", None, Arc::default()));
        let list = j.list();
        assert_eq!(list.len(), 2);
        assert_eq!(
            (list[0].seq, list[0].status, list[0].body_bytes),
            (1, 200, 29)
        );
        assert_eq!(
            list[0].body,
            Some(serde_json::json!({"current_stage": "Rebooting"}))
        );
        assert_eq!(
            (list[1].seq, list[1].status, list[1].body.as_ref()),
            (2, 0, None)
        );
    }
}
