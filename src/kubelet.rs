//! Kubelet health: on the second boot a healthy kubelet means the node runs
//! the control plane's configuration and the in-cluster controller takes over
//! reporting, so the reporter can leave.
//!
//! Whatever listens on the port is only trusted to say `ok`: its answer is
//! read a few bytes at most (any local process can bind 10248 before
//! kubelet does, and an endless body must not grow the agent into its
//! unit's `MemoryMax=`).

use std::time::Duration;

use reqwest::Url;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// Most of the body ever read: `ok` with room for a newline or two.
const MAX_BODY: usize = 16;

#[derive(Debug, Clone)]
pub(crate) struct HealthProbe {
    http: reqwest::Client,
    url: Url,
}

impl HealthProbe {
    pub(crate) fn new(url: Url) -> anyhow::Result<Self> {
        // kubelet's healthz is on loopback: a configured proxy must not see it.
        let http = crate::dns::client_builder()
            .no_proxy()
            .timeout(PROBE_TIMEOUT)
            .build()?;
        Ok(Self { http, url })
    }

    /// True when kubelet answers 200 with body `ok`. Any failure is simply
    /// "not healthy yet": kubelet restarts in a loop until it is configured.
    /// A longer body is not `ok`: reading stops past [`MAX_BODY`] bytes.
    pub(crate) async fn is_healthy(&self) -> bool {
        let Ok(mut response) = self.http.get(self.url.clone()).send().await else {
            return false;
        };
        if !response.status().is_success()
            || response
                .content_length()
                .is_some_and(|n| n > MAX_BODY as u64)
        {
            return false;
        }
        let mut body = Vec::with_capacity(MAX_BODY);
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() + chunk.len() <= MAX_BODY => {
                    body.extend_from_slice(&chunk);
                }
                // Dropping the response closes the connection unread.
                Ok(Some(_)) | Err(_) => return false,
                Ok(None) => return body.trim_ascii() == b"ok",
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn serve_once(status: &'static str, body: &'static str) -> Url {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf).await;
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(reply.as_bytes()).await;
        });
        Url::parse(&format!("http://{addr}/healthz")).unwrap()
    }

    #[tokio::test]
    async fn ok_is_healthy_anything_else_is_not() {
        assert!(
            HealthProbe::new(serve_once("200 OK", "ok").await)
                .unwrap()
                .is_healthy()
                .await
        );
        assert!(
            !HealthProbe::new(serve_once("200 OK", "not ready").await)
                .unwrap()
                .is_healthy()
                .await
        );
        assert!(
            !HealthProbe::new(serve_once("500 Internal Server Error", "ok").await)
                .unwrap()
                .is_healthy()
                .await
        );
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        let url = Url::parse(&format!("http://{closed}/healthz")).unwrap();
        assert!(!HealthProbe::new(url).unwrap().is_healthy().await);
    }

    #[tokio::test]
    async fn a_long_body_is_not_ok_and_not_read() {
        let padded = format!("ok{}", " ".repeat(MAX_BODY));
        let padded: &'static str = Box::leak(padded.into_boxed_str());
        assert!(
            !HealthProbe::new(serve_once("200 OK", padded).await)
                .unwrap()
                .is_healthy()
                .await
        );
        assert!(
            HealthProbe::new(serve_once("200 OK", "ok\n").await)
                .unwrap()
                .is_healthy()
                .await
        );
    }
}
