//! What a web page on another site cannot make the mock do through a
//! user's browser: the admin API has no auth, so its routes refuse
//! requests a browser would send for another site (cross-site state
//! changes, and any request whose `Host` is a DNS name that may have been
//! rebound to the mock's address).

use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The names an admin request may be addressed to: an IP literal (a
/// rebinding attack needs a DNS name, which the browser sends as `Host`)
/// or `localhost`.
fn host_is_local(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[::1]:8090`
        return rest
            .split_once(']')
            .is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
    } else {
        host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        })
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

/// Every admin request, reads included (`/admin/state` holds the agent
/// tokens the mock minted): its `Host` must be local (`host_is_local`).
pub(crate) async fn refuse_rebound_host(req: Request, next: Next) -> Response {
    match rebound_host(&req) {
        Some(refused) => refused,
        None => next.run(req).await,
    }
}

/// The refusal of a request whose `Host` is not local, if it is one.
fn rebound_host(req: &Request) -> Option<Response> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    (!host.is_empty() && !host_is_local(host)).then(|| {
        forbidden(&format!(
            "admin request for host {host:?} refused: the admin API answers only requests \
             addressed to an IP address or localhost (DNS rebinding)"
        ))
    })
}

/// A state change needs a same-site request (`Sec-Fetch-Site`, `Origin`)
/// and, with a body, a JSON content type, which a cross-site form or
/// `text/plain` fetch cannot send without a CORS preflight the mock never
/// answers. Reads pass (their `Host` is checked by
/// [`refuse_rebound_host`]).
pub(crate) async fn refuse_cross_site(req: Request, next: Next) -> Response {
    if let Some(refused) = rebound_host(&req) {
        return refused;
    }
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return next.run(req).await;
    }
    let headers = req.headers();
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST).unwrap_or("");
    if let Some(site) = text(header::HeaderName::from_static("sec-fetch-site")) {
        if !matches!(site, "same-origin" | "none") {
            return forbidden(&format!(
                "cross-site admin request refused (Sec-Fetch-Site: {site})"
            ));
        }
    }
    if let Some(origin) = text(header::ORIGIN) {
        let same = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|o| !host.is_empty() && o == host);
        if !same {
            return forbidden(&format!(
                "cross-site admin request refused (Origin: {origin})"
            ));
        }
    }
    if *req.method() != Method::DELETE {
        let json = text(header::CONTENT_TYPE).is_some_and(|c| {
            c.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        });
        if !json {
            return ApiError::Error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "admin requests that change state need Content-Type: application/json".into(),
            )
            .into_response();
        }
    }
    next.run(req).await
}

fn forbidden(reason: &str) -> Response {
    tracing::warn!("{reason}");
    ApiError::Error(StatusCode::FORBIDDEN, reason.to_owned()).into_response()
}

#[cfg(test)]
mod tests {
    use super::host_is_local;

    #[test]
    fn only_ip_literals_and_localhost_are_local() {
        for ok in [
            "127.0.0.1:8090",
            "127.0.0.1",
            "10.0.2.2:8090",
            "localhost:8090",
            "LOCALHOST",
            "[::1]:8090",
            "[::1]",
        ] {
            assert!(host_is_local(ok), "{ok}");
        }
        for bad in [
            "evil.example:8090",
            "evil.example",
            "127.0.0.1.nip.io:8090",
            "localhost.evil.example",
            "[evil]:80",
        ] {
            assert!(!host_is_local(bad), "{bad}");
        }
    }
}
