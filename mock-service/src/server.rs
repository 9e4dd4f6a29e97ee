//! The accept loop. axum::serve cannot drop one connection without
//! answering, which the `drop_connection` fault needs, so connections are
//! served with hyper directly and each request carries a kill switch for its
//! own connection.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

/// Request extension: notifying it closes the request's connection at once,
/// without a response.
#[derive(Clone, Debug)]
pub struct ConnKill(pub Arc<Notify>);

impl ConnKill {
    pub fn kill(&self) {
        self.0.notify_one();
    }
}

pub async fn serve(listener: TcpListener, app: Router, mut shutdown: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            res = listener.accept() => res,
            _ = shutdown.changed() => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // Usually fd exhaustion; back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let mut shutdown = shutdown.clone();
        tokio::spawn(async move {
            let kill = Arc::new(Notify::new());
            let switch = ConnKill(Arc::clone(&kill));
            let svc = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                req.extensions_mut().insert(switch.clone());
                tower::ServiceExt::oneshot(app.clone(), req)
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                res = conn => {
                    if let Err(e) = res {
                        tracing::debug!("connection ended with error: {e}");
                    }
                }
                () = kill.notified() => tracing::info!("dropped a connection (injected fault)"),
                _ = shutdown.changed() => {}
            }
        });
    }
}
