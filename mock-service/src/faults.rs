//! Injected faults for the public API: a FIFO queue of misbehaviours
//! (error statuses, delays, dropped connections) that tests and demos queue
//! through the admin API to exercise the agent's retry paths.

use std::collections::VecDeque;
use std::sync::Mutex;

use axum::http::Method;
use serde::{Deserialize, Serialize};

/// Public endpoints a fault can target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    ListHosts,
    /// `GET /v2/clusters/{id}`, which agents may read.
    GetCluster,
    UpdateProgress,
    UploadLogs,
    DownloadLogs,
    /// Any public request, including endpoints not listed above.
    Any,
}

impl Endpoint {
    /// Classifies a public request by method and path (relative to the API
    /// base). `None` for requests no named endpoint covers.
    pub fn classify(method: &Method, path: &str) -> Option<Endpoint> {
        let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (method.as_str(), segs.as_slice()) {
            ("GET", ["v2", "infra-envs" | "clusters", _, "hosts"]) => Some(Endpoint::ListHosts),
            ("GET", ["v2", "clusters", _]) => Some(Endpoint::GetCluster),
            ("PUT", ["v2", "infra-envs", _, "hosts", _, "progress"]) => {
                Some(Endpoint::UpdateProgress)
            }
            ("POST", ["v2", "clusters", _, "logs"]) => Some(Endpoint::UploadLogs),
            ("GET", ["v2", "clusters", _, "logs"]) => Some(Endpoint::DownloadLogs),
            _ => None,
        }
    }
}

fn one() -> u32 {
    1
}

/// A fault as queued through `POST /admin/faults`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub endpoint: Endpoint,
    /// Status to answer with; absent means the request proceeds after the delay.
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default = "one")]
    pub times: u32,
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(default)]
    pub drop_connection: bool,
    #[serde(default)]
    pub retry_after: Option<String>,
    /// Raw body to send instead of the standard `error` JSON.
    #[serde(default)]
    pub body: Option<String>,
    /// `Location` of a 3xx answer: a redirect to anywhere, e.g. another
    /// listener that records whether the agent's token follows.
    #[serde(default)]
    pub location: Option<String>,
}

impl Fault {
    pub fn validate(&self) -> Result<(), String> {
        if self.times == 0 {
            return Err("times must be at least 1".into());
        }
        if let Some(s) = self.status {
            if !(100..=599).contains(&s) {
                return Err(format!("status {s} is not an HTTP status"));
            }
        }
        if self.location.is_some() && !self.status.is_some_and(|s| (300..=399).contains(&s)) {
            return Err("location needs a 3xx status".into());
        }
        if self.status.is_none() && self.delay_ms == 0 && !self.drop_connection {
            return Err("a fault needs a status, a delay_ms or drop_connection".into());
        }
        Ok(())
    }

    fn matches(&self, endpoint: Option<Endpoint>) -> bool {
        self.endpoint == Endpoint::Any || Some(self.endpoint) == endpoint
    }
}

#[derive(Debug, Default)]
pub struct FaultQueue {
    queue: Mutex<VecDeque<Fault>>,
}

impl FaultQueue {
    pub fn push(&self, fault: Fault) {
        self.queue.lock().unwrap().push_back(fault);
    }

    pub fn clear(&self) {
        self.queue.lock().unwrap().clear();
    }

    pub fn pending(&self) -> Vec<Fault> {
        self.queue.lock().unwrap().iter().cloned().collect()
    }

    /// Consumes one use of the oldest fault matching the request.
    pub fn take(&self, endpoint: Option<Endpoint>) -> Option<Fault> {
        let mut q = self.queue.lock().unwrap();
        let idx = q.iter().position(|f| f.matches(endpoint))?;
        let f = &mut q[idx];
        f.times -= 1;
        let taken = f.clone();
        if f.times == 0 {
            q.remove(idx);
        }
        Some(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(endpoint: Endpoint, status: u16, times: u32) -> Fault {
        Fault {
            endpoint,
            status: Some(status),
            times,
            delay_ms: 0,
            drop_connection: false,
            retry_after: None,
            body: None,
            location: None,
        }
    }

    #[test]
    fn classify_paths() {
        let c = |m: Method, p: &str| Endpoint::classify(&m, p);
        assert_eq!(
            c(Method::GET, "/v2/infra-envs/x/hosts"),
            Some(Endpoint::ListHosts)
        );
        assert_eq!(
            c(Method::GET, "/v2/clusters/x/hosts"),
            Some(Endpoint::ListHosts)
        );
        assert_eq!(
            c(Method::PUT, "/v2/infra-envs/x/hosts/y/progress"),
            Some(Endpoint::UpdateProgress)
        );
        assert_eq!(
            c(Method::POST, "/v2/clusters/x/logs"),
            Some(Endpoint::UploadLogs)
        );
        assert_eq!(
            c(Method::GET, "/v2/clusters/x/logs"),
            Some(Endpoint::DownloadLogs)
        );
        assert_eq!(c(Method::GET, "/v2/clusters/x"), Some(Endpoint::GetCluster));
        assert_eq!(c(Method::GET, "/v2/infra-envs/x/hosts/y"), None);
    }

    #[test]
    fn fifo_per_matching_endpoint() {
        let q = FaultQueue::default();
        q.push(fault(Endpoint::UploadLogs, 500, 1));
        q.push(fault(Endpoint::Any, 503, 2));
        assert_eq!(q.take(Some(Endpoint::ListHosts)).unwrap().status, Some(503));
        assert_eq!(
            q.take(Some(Endpoint::UploadLogs)).unwrap().status,
            Some(500)
        );
        assert_eq!(
            q.take(Some(Endpoint::UploadLogs)).unwrap().status,
            Some(503)
        );
        assert!(q.take(Some(Endpoint::UploadLogs)).is_none());
        assert!(q.pending().is_empty());
    }

    #[test]
    fn validation() {
        let mut f = fault(Endpoint::Any, 503, 0);
        assert!(f.validate().is_err());
        f.times = 1;
        assert!(f.validate().is_ok());
        f.status = None;
        assert!(f.validate().is_err());
        f.delay_ms = 10;
        assert!(f.validate().is_ok());
        f.location = Some("http://127.0.0.1:9/elsewhere".into());
        assert!(f.validate().is_err());
        f.status = Some(307);
        assert!(f.validate().is_ok());
    }
}
