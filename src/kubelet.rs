//! Kubelet health: on the second boot a healthy kubelet means the node runs
//! the control plane's configuration and the in-cluster controller takes over
//! reporting, so the reporter can leave.

use std::time::Duration;

use reqwest::Url;

const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
pub struct HealthProbe {
    http: reqwest::Client,
    url: Url,
}

impl HealthProbe {
    pub fn new(url: Url) -> anyhow::Result<Self> {
        // kubelet's healthz is on loopback: a configured proxy must not see it.
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(PROBE_TIMEOUT)
            .build()?;
        Ok(Self { http, url })
    }

    /// True when kubelet answers 200 with body `ok`. Any failure is simply
    /// "not healthy yet": kubelet restarts in a loop until it is configured.
    pub async fn is_healthy(&self) -> bool {
        let Ok(response) = self.http.get(self.url.clone()).send().await else {
            return false;
        };
        if !response.status().is_success() {
            return false;
        }
        matches!(response.bytes().await, Ok(body) if body.len() < 64 && body.trim_ascii() == b"ok")
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
}
