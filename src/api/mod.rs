//! The assisted-service client: endpoints the reporter uses, agent
//! authentication, TLS settings and the retry policy, all taken from
//! configuration.
//!
//! Only agent-auth endpoints are called. In particular the single-host GET
//! (`/v2/infra-envs/{id}/hosts/{host_id}`) is user-auth only on the real
//! service, so the host is found in its infra-env's list instead.

pub mod host_list;
mod types;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};
use tokio::time::Instant;
use uuid::Uuid;

pub(crate) use crate::retry::RetryPolicy;
use crate::retry::Retryable;
pub use types::{Cluster, ErrorBody, Host, HostProgress, HostProgressInfo};

use crate::proxy::{ProxySettings, ProxyUrl};
use crate::secret::Secret;

/// Base path of the v2 API under the service URL.
pub(crate) const API_PREFIX: &str = "api/assisted-install/v2/";
const AGENT_AUTH_HEADER: &str = "X-Secret-Key";
/// Error bodies are read only to quote their reason.
const MAX_ERROR_BYTES: usize = 64 << 10;
const MAX_REASON_CHARS: usize = 300;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("{operation}: cannot reach the service: {detail}")]
    Transport {
        operation: String,
        detail: String,
        #[source]
        source: reqwest::Error,
    },
    #[error(
        "{operation}: the service's TLS certificate is not trusted ({detail}); \
         give the CA that signed it with --cacert or in the discovery contract's ca.crt"
    )]
    Tls {
        operation: String,
        detail: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{operation}: the service answered {status}: {reason}")]
    Status {
        operation: String,
        /// The request answered: what a status means depends on it.
        endpoint: Endpoint,
        status: StatusCode,
        reason: String,
        retry_after: Option<Duration>,
    },
    /// The host list was read whole and our host is not in it.
    #[error("{operation}: host {host_id} is not among the {listed} hosts of {scope}")]
    HostNotListed {
        operation: String,
        host_id: Uuid,
        scope: HostScope,
        listed: usize,
    },
    #[error("{operation}: unexpected answer from the service: {detail}")]
    Decode { operation: String, detail: String },
    /// The configured proxy failed or refused; `auth_required` when it asked
    /// for credentials (407), which asking again will not supply.
    #[error(
        "{operation}: cannot reach the service through proxy {proxy}: {detail}; \
         check HTTP(S)_PROXY and NO_PROXY (discovery contract proxy.env)"
    )]
    Proxy {
        operation: String,
        proxy: String,
        detail: String,
        auth_required: bool,
        #[source]
        source: Option<reqwest::Error>,
    },
    /// A 3xx answer. No redirect is followed, same origin included: the token
    /// and the request body go to the configured origin only, and a 302 would
    /// turn the progress PUT into a GET whose 200 looks like success.
    #[error(
        "{operation}: the service answered {status} redirecting to {target}; redirects are \
         not followed, the agent token goes to {origin} only: if the service moved, put its \
         final URL in the discovery contract's service-url"
    )]
    Redirect {
        operation: String,
        status: StatusCode,
        /// Scheme, host and port of the requested URL.
        origin: String,
        /// Scheme, host and port of `Location` (never its path or query,
        /// which may carry a signed token), or why it is unusable.
        target: String,
    },
}

impl Retryable for ApiError {
    /// Transport failures, 408, 429 and 5xx may heal; every other 4xx is an
    /// answer that asking again will not change.
    fn is_retryable(&self) -> bool {
        match self {
            ApiError::Transport { .. } => true,
            ApiError::Status { status, .. } => {
                *status == StatusCode::REQUEST_TIMEOUT
                    || *status == StatusCode::TOO_MANY_REQUESTS
                    || status.is_server_error()
            }
            ApiError::Proxy { auth_required, .. } => !auth_required,
            ApiError::Decode { .. }
            | ApiError::Tls { .. }
            | ApiError::Redirect { .. }
            | ApiError::HostNotListed { .. } => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// The requests whose answers the reporter tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    HostList,
    Cluster,
    Progress,
    Logs,
}

/// What a refusal means in the service's terms, for the reporter's
/// decisions (zincati's `error_kind()`): HTTP details stay in this module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401 or 403: the agent token was refused; nothing sent with it passes.
    TokenRefused,
    /// The host list holds no host of ours.
    HostNotListed,
    /// 400 to a progress update: the service's stage enum lacks the stage
    /// (today's upstream and the two new stages).
    StageUnknownToService,
    /// 409 to a progress update: a lower stage than the host's, or a host
    /// status that takes no stages; either way the stage is not ours to set.
    StageNotAccepted,
    /// 400 to an upload naming `logs_type`: this service takes no logs of
    /// this type.
    LogsTypeRefused,
}

impl ApiError {
    /// What the failure means, when it is the service's answer rather than
    /// weather (transport, 5xx) or configuration (TLS, proxy, redirect).
    pub(crate) fn refusal(&self) -> Option<Refusal> {
        let ApiError::Status {
            endpoint,
            status,
            reason,
            ..
        } = self
        else {
            return matches!(self, ApiError::HostNotListed { .. })
                .then_some(Refusal::HostNotListed);
        };
        match (*status, endpoint) {
            (StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN, _) => Some(Refusal::TokenRefused),
            (StatusCode::BAD_REQUEST, Endpoint::Progress) => Some(Refusal::StageUnknownToService),
            (StatusCode::CONFLICT, Endpoint::Progress) => Some(Refusal::StageNotAccepted),
            // Upstream's swagger validation names the parameter it refused.
            (StatusCode::BAD_REQUEST, Endpoint::Logs) if reason.contains("logs_type") => {
                Some(Refusal::LogsTypeRefused)
            }
            _ => None,
        }
    }

    /// The service's reason, for the log (decisions read [`Self::refusal`]).
    pub(crate) fn reason(&self) -> Option<&str> {
        match self {
            ApiError::Status { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// A certificate the agent does not trust will not become trusted by
    /// asking again, so it gets its own, non-retryable kind and a hint.
    fn transport(operation: &str, source: reqwest::Error) -> Self {
        if let Some(tls) = certificate_error(&source) {
            return ApiError::Tls {
                operation: operation.to_owned(),
                detail: tls,
                source,
            };
        }
        ApiError::Transport {
            operation: operation.to_owned(),
            detail: error_chain(&source),
            source,
        }
    }
}

/// Client settings, all from configuration.
#[derive(Debug, Clone)]
pub(crate) struct ClientSettings {
    pub(crate) service_url: Url,
    pub(crate) token: Option<Secret>,
    pub(crate) ca_cert: Option<PathBuf>,
    pub(crate) insecure: bool,
    pub(crate) request_timeout: Duration,
    pub(crate) retry: RetryPolicy,
    pub(crate) proxy: ProxySettings,
}

#[derive(Debug, Clone)]
pub(crate) struct Client {
    http: reqwest::Client,
    api_base: Url,
    token: Option<Secret>,
    retry: RetryPolicy,
    /// The proxy every request goes through (they all go to one origin).
    via: Option<ProxyUrl>,
}

impl Client {
    pub(crate) fn new(settings: &ClientSettings) -> anyhow::Result<Self> {
        let mut builder = crate::dns::client_builder()
            .use_rustls_tls()
            .user_agent(concat!(
                "assisted-boot-reporter/",
                env!("CARGO_PKG_VERSION")
            ))
            .connect_timeout(Duration::from_secs(30).min(settings.request_timeout))
            .timeout(settings.request_timeout)
            .https_only(false)
            // The token must not follow a redirect to another origin, and a
            // followed 302 turns a PUT into a GET: see ApiError::Redirect.
            .redirect(reqwest::redirect::Policy::none())
            // reqwest's own NO_PROXY follows curl, not Go: the configured
            // settings replace it (crate::proxy).
            .no_proxy();
        if let Some(proxy) = settings.proxy.to_reqwest() {
            builder = builder.proxy(proxy);
        }
        if let Some(path) = &settings.ca_cert {
            let pem = crate::bounded_read::read(path, crate::bounded_read::Kind::CaBundle)?
                .with_context(|| format!("CA bundle {} does not exist", path.display()))?
                .bytes;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .with_context(|| format!("parsing CA bundle {}", path.display()))?;
            anyhow::ensure!(
                !certs.is_empty(),
                "CA bundle {} holds no certificate",
                path.display()
            );
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        if settings.insecure {
            builder = builder.danger_accept_invalid_certs(true);
        }
        let http = builder.build().context("setting up the HTTP client")?;
        let mut base = settings.service_url.clone();
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let api_base = base.join(API_PREFIX).context("building the API base URL")?;
        let via = settings.proxy.proxy_for(&api_base).cloned();
        if !settings.proxy.is_empty() {
            let origin = api_base.origin().ascii_serialization();
            if let Some(proxy) = &via {
                tracing::info!("requests to {origin} go through proxy {proxy}");
            } else {
                tracing::info!(
                    "requests to {origin} go direct (NO_PROXY, or no proxy for its scheme)"
                );
            }
        }
        Ok(Self {
            http,
            api_base,
            token: settings.token.clone(),
            retry: settings.retry,
            via,
        })
    }

    /// Sends a request; failures of a proxied request name the proxy.
    async fn send(&self, operation: &str, request: RequestBuilder) -> Result<Response, ApiError> {
        let Some(proxy) = &self.via else {
            return request
                .send()
                .await
                .map_err(|e| ApiError::transport(operation, e));
        };
        match request.send().await {
            // Over plain http the proxy answers in the service's place.
            Ok(response) if response.status() == StatusCode::PROXY_AUTHENTICATION_REQUIRED => {
                Err(ApiError::Proxy {
                    operation: operation.to_owned(),
                    proxy: proxy.to_string(),
                    detail: "the proxy requires credentials (407); give them in the proxy URL"
                        .into(),
                    auth_required: true,
                    source: None,
                })
            }
            Ok(response) => Ok(response),
            Err(err) if certificate_error(&err).is_some() => {
                Err(ApiError::transport(operation, err))
            }
            Err(err) => {
                let detail = error_chain(&err);
                // hyper-util's CONNECT error for a 407 answer.
                let auth_required = detail.contains("proxy authorization required");
                Err(ApiError::Proxy {
                    operation: operation.to_owned(),
                    proxy: proxy.to_string(),
                    detail,
                    auth_required,
                    source: Some(err),
                })
            }
        }
    }

    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    fn url(&self, path: &str) -> Url {
        // Paths are built from UUIDs and fixed words only, so join cannot fail.
        self.api_base
            .join(path)
            .expect("API path is a valid relative URL")
    }

    fn request(&self, method: Method, url: Url) -> RequestBuilder {
        let builder = self.http.request(method, url);
        match &self.token {
            Some(token) => {
                let mut value = HeaderValue::from_str(token.expose())
                    .unwrap_or_else(|_| HeaderValue::from_static(""));
                value.set_sensitive(true);
                builder.header(AGENT_AUTH_HEADER, value)
            }
            None => builder,
        }
    }

    /// Our host from the infra-env's or the cluster's host list (both agent
    /// auth; the cluster's names each host's infra-env, which the upstream
    /// unit's environment lacks). The list is streamed, see [`host_list`].
    pub(crate) async fn find_host_in(
        &self,
        scope: HostScope,
        host_id: Uuid,
        deadline: Option<Instant>,
    ) -> Result<Host, ApiError> {
        let (operation, path) = match scope {
            HostScope::InfraEnv(id) => (
                "listing the infra-env's hosts",
                format!("infra-envs/{id}/hosts"),
            ),
            HostScope::Cluster(id) => (
                "listing the cluster's hosts",
                format!("clusters/{id}/hosts"),
            ),
        };
        let scan = self
            .retry
            .run(deadline, |_| async {
                let request = self.request(Method::GET, self.url(&path));
                let response = self.send(operation, request).await?;
                if !response.status().is_success() {
                    return success_body(Endpoint::HostList, operation, response, MAX_ERROR_BYTES)
                        .await
                        .and_then(|_| unreachable_success(operation));
                }
                scan_host_list(operation, response, host_id).await
            })
            .await?;
        scan.host.ok_or_else(|| ApiError::HostNotListed {
            operation: operation.to_owned(),
            host_id,
            scope,
            listed: scan.elements,
        })
    }

    /// `GET /v2/clusters/{cluster_id}` (agent auth upstream): what kind of
    /// cluster the host is installed into.
    pub(crate) async fn get_cluster(
        &self,
        cluster_id: Uuid,
        deadline: Option<Instant>,
    ) -> Result<Cluster, ApiError> {
        // Hosts excluded, the cluster object is a few KiB; a larger
        // answer is a decode error, and the host's files decide as before.
        const MAX_CLUSTER_BYTES: usize = 4 << 20;
        let operation = "reading the cluster";
        let body = self
            .retry
            .run(deadline, |_| async {
                // Without its hosts: the topology is all the reporter reads.
                let mut url = self.url(&format!("clusters/{cluster_id}"));
                url.query_pairs_mut().append_pair("exclude-hosts", "true");
                let request = self.request(Method::GET, url);
                let response = self.send(operation, request).await?;
                success_body(Endpoint::Cluster, operation, response, MAX_CLUSTER_BYTES).await
            })
            .await?;
        serde_json::from_slice(&body).map_err(|e| ApiError::Decode {
            operation: operation.to_owned(),
            detail: e.to_string(),
        })
    }

    /// `PUT /v2/infra-envs/{infra_env_id}/hosts/{host_id}/progress`.
    pub(crate) async fn update_progress(
        &self,
        infra_env_id: Uuid,
        host_id: Uuid,
        progress: &HostProgress<'_>,
        deadline: Option<Instant>,
    ) -> Result<(), ApiError> {
        let operation = format!("setting stage {:?}", progress.current_stage);
        let body = serde_json::to_vec(progress).expect("a struct of strings serializes");
        self.retry
            .run(deadline, |_| async {
                let request = self
                    .request(
                        Method::PUT,
                        self.url(&format!(
                            "infra-envs/{infra_env_id}/hosts/{host_id}/progress"
                        )),
                    )
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
                let response = self.send(&operation, request).await?;
                success_body(Endpoint::Progress, &operation, response, MAX_ERROR_BYTES)
                    .await
                    .map(drop)
            })
            .await
    }

    /// One `POST /v2/clusters/{cluster_id}/logs` attempt. The form holds a
    /// streamed body that cannot be replayed, so retrying (with a fresh bundle)
    /// is the caller's job.
    pub(crate) async fn upload_logs_once(
        &self,
        target: &UploadTarget,
        form: reqwest::multipart::Form,
    ) -> Result<(), ApiError> {
        let operation = format!("uploading {} logs", target.logs_type);
        let mut url = self.url(&format!("clusters/{}/logs", target.cluster_id));
        url.query_pairs_mut()
            .append_pair("logs_type", &target.logs_type)
            .append_pair("host_id", &target.host_id.to_string());
        if let Some(infra_env_id) = target.infra_env_id {
            url.query_pairs_mut()
                .append_pair("infra_env_id", &infra_env_id.to_string());
        }
        let response = self
            .send(&operation, self.request(Method::POST, url).multipart(form))
            .await?;
        success_body(Endpoint::Logs, &operation, response, MAX_ERROR_BYTES)
            .await
            .map(drop)
    }
}

/// Which host list to look in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostScope {
    InfraEnv(Uuid),
    Cluster(Uuid),
}

impl std::fmt::Display for HostScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostScope::InfraEnv(id) => write!(f, "infra-env {id}"),
            HostScope::Cluster(id) => write!(f, "cluster {id}"),
        }
    }
}

fn unreachable_success<T>(operation: &str) -> Result<T, ApiError> {
    Err(ApiError::Decode {
        operation: operation.to_owned(),
        detail: "unexpected answer".into(),
    })
}

/// Streams a 2xx host list into the parser on a blocking thread, at most
/// [`host_list::MAX_LIST_BYTES`].
async fn scan_host_list(
    operation: &str,
    mut response: Response,
    host_id: Uuid,
) -> Result<host_list::Scan, ApiError> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(4);
    let parser = tokio::task::spawn_blocking(move || {
        host_list::find_in_host_list(
            host_list::ChunkReader::new(rx),
            host_id,
            host_list::MAX_LIST_HOSTS,
        )
    });
    let mut total: u64 = 0;
    let mut over = false;
    let mut transport = None;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                total += chunk.len() as u64;
                if total > host_list::MAX_LIST_BYTES {
                    over = true;
                    break;
                }
                // The parser stopped early (an error): no need to read on.
                if tx.send(chunk.to_vec()).await.is_err() {
                    break;
                }
            }
            Ok(None) => break,
            Err(err) => {
                transport = Some(ApiError::transport(operation, err));
                break;
            }
        }
    }
    drop(tx);
    let parsed = parser.await;
    if over {
        return Err(ApiError::Decode {
            operation: operation.to_owned(),
            detail: format!(
                "host list larger than {} MiB; refusing to read further",
                host_list::MAX_LIST_BYTES >> 20
            ),
        });
    }
    if let Some(err) = transport {
        return Err(err);
    }
    match parsed {
        Ok(Ok(scan)) => Ok(scan),
        Ok(Err(err)) => Err(ApiError::Decode {
            operation: operation.to_owned(),
            detail: err.to_string(),
        }),
        Err(join) => Err(ApiError::Decode {
            operation: operation.to_owned(),
            detail: format!("host list parser failed: {join}"),
        }),
    }
}

/// Where a bundle goes.
#[derive(Debug, Clone)]
pub(crate) struct UploadTarget {
    pub(crate) cluster_id: Uuid,
    pub(crate) host_id: Uuid,
    /// Sent for the record only (upstream ignores it); unknown until the
    /// host list named it when only the cluster was configured.
    pub(crate) infra_env_id: Option<Uuid>,
    pub(crate) logs_type: String,
}

/// Reads a 2xx body (bounded) or turns any other answer into [`ApiError::Status`].
async fn success_body(
    endpoint: Endpoint,
    operation: &str,
    response: Response,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let status = response.status();
    if status.is_redirection() {
        if let Some(location) = response.headers().get(LOCATION) {
            return Err(redirect_error(operation, status, response.url(), location));
        }
    }
    let retry_after = parse_retry_after(response.headers());
    let body = read_capped(
        operation,
        response,
        if status.is_success() {
            limit
        } else {
            MAX_ERROR_BYTES
        },
    )
    .await;
    if status.is_success() {
        let (body, truncated) = body?;
        if truncated {
            return Err(ApiError::Decode {
                operation: operation.to_owned(),
                detail: format!("answer larger than {limit} bytes"),
            });
        }
        return Ok(body);
    }
    let reason = match body {
        Ok((bytes, _)) => describe_error_body(&bytes),
        Err(err) => format!("(body unreadable: {err})"),
    };
    Err(ApiError::Status {
        operation: operation.to_owned(),
        endpoint,
        status,
        reason,
        retry_after,
    })
}

/// Names where a redirect pointed, origin only.
fn redirect_error(
    operation: &str,
    status: StatusCode,
    requested: &Url,
    location: &HeaderValue,
) -> ApiError {
    let target = location
        .to_str()
        .ok()
        .and_then(|l| requested.join(l).ok())
        .map_or_else(
            || "a Location that is not a URL".to_owned(),
            |target| {
                let same = if target.origin() == requested.origin() {
                    "the same origin"
                } else {
                    "another origin"
                };
                format!("{} ({same})", target.origin().ascii_serialization())
            },
        );
    ApiError::Redirect {
        operation: operation.to_owned(),
        status,
        origin: requested.origin().ascii_serialization(),
        target,
    }
}

async fn read_capped(
    operation: &str,
    mut response: Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), ApiError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| ApiError::transport(operation, e))?
    {
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The human part of an error body: `reason` or `message` when it is the
/// service's JSON, else the start of whatever a proxy sent, printable only.
/// Public for the fuzz target.
pub fn describe_error_body(bytes: &[u8]) -> String {
    // Quoted in logs and errors: through the redactor first, whole, before
    // any of it is cut.
    let scrubbed = crate::redact::scrub_for_logs(bytes);
    let bytes = scrubbed.as_slice();
    // A JSON reason may be empty or span lines (found by fuzz/service_json):
    // it gets the same one-line, printable treatment as any other body.
    if let Ok(body) = serde_json::from_slice::<ErrorBody>(bytes) {
        if let Some(text) = body.text().map(one_printable_line) {
            if !text.is_empty() {
                return clip(&text);
            }
        }
    }
    let text = one_printable_line(&String::from_utf8_lossy(bytes));
    if text.is_empty() {
        "(empty body)".to_owned()
    } else {
        clip(&text)
    }
}

fn one_printable_line(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_REASON_CHARS) {
        Some((idx, _)) => format!("{}…", &text[..idx]),
        None => text.to_owned(),
    }
}

/// `Retry-After` as delta-seconds or an HTTP date.
fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn certificate_error(err: &reqwest::Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(mut cause) = source {
        // hyper-rustls wraps rustls' error in io::Errors (two deep), whose
        // source() skips the wrapped error itself: unwrap them explicitly.
        while let Some(inner) = cause
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            cause = inner;
        }
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return matches!(
                tls,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            )
            .then(|| tls.to_string());
        }
        source = cause.source();
    }
    None
}

/// reqwest's top-level message is generic ("error sending request"); the
/// cause ("connection refused", "invalid peer certificate") is what helps.
fn error_chain(err: &reqwest::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transport_408_429_and_5xx_are_retried() {
        let status = |code: u16| ApiError::Status {
            operation: "test".into(),
            endpoint: Endpoint::Progress,
            status: StatusCode::from_u16(code).unwrap(),
            reason: "x".into(),
            retry_after: Some(Duration::from_secs(2)),
        };
        for code in [408, 429, 500, 502, 503, 504] {
            assert!(status(code).is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 409, 413] {
            assert!(!status(code).is_retryable(), "{code}");
        }
        assert_eq!(status(503).retry_after(), Some(Duration::from_secs(2)));
    }
    #[test]
    fn refusals_are_named_by_what_the_answer_means_for_its_request() {
        use Endpoint::{Cluster, HostList, Logs, Progress};
        let answer = |endpoint, code: u16, reason: &str| ApiError::Status {
            operation: "test".into(),
            endpoint,
            status: StatusCode::from_u16(code).unwrap(),
            reason: reason.into(),
            retry_after: None,
        };
        for endpoint in [HostList, Cluster, Progress, Logs] {
            for code in [401, 403] {
                assert_eq!(
                    answer(endpoint, code, "x").refusal(),
                    Some(Refusal::TokenRefused)
                );
            }
            for code in [404, 408, 429, 500, 503] {
                assert_eq!(answer(endpoint, code, "x").refusal(), None, "{code}");
            }
        }
        // The real service's answers (docs/upstream-integration.md).
        let unknown_stage =
            "current_stage in body should be one of [Starting installation … Failed]";
        assert_eq!(
            answer(Progress, 400, unknown_stage).refusal(),
            Some(Refusal::StageUnknownToService)
        );
        assert_eq!(
            answer(Progress, 409, "Can't assign lower stage").refusal(),
            Some(Refusal::StageNotAccepted)
        );
        assert_eq!(
            answer(
                Logs,
                400,
                "logs_type in query should be one of [host controller]"
            )
            .refusal(),
            Some(Refusal::LogsTypeRefused)
        );
        // A 400 or 409 elsewhere means nothing the reporter acts on.
        assert_eq!(answer(Logs, 400, "cluster_id is invalid").refusal(), None);
        assert_eq!(answer(Logs, 409, "x").refusal(), None);
        assert_eq!(answer(HostList, 400, "logs_type").refusal(), None);
        let missing = ApiError::HostNotListed {
            operation: "listing".into(),
            host_id: Uuid::nil(),
            scope: HostScope::InfraEnv(Uuid::nil()),
            listed: 3,
        };
        assert_eq!(missing.refusal(), Some(Refusal::HostNotListed));
        assert!(!missing.is_retryable());
        assert_eq!(
            missing.to_string(),
            "listing: host 00000000-0000-0000-0000-000000000000 is not among the 3 hosts of \
             infra-env 00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn error_bodies_are_described_briefly_and_safely() {
        assert_eq!(
            describe_error_body(br#"{"code":"409","href":"","id":409,"kind":"Error","reason":"Can't assign lower stage"}"#),
            "Can't assign lower stage"
        );
        assert_eq!(
            describe_error_body(b"<html>\n<b>Bad\x07 gateway</b></html>"),
            "<html> <b>Bad gateway</b></html>"
        );
        assert_eq!(describe_error_body(b""), "(empty body)");
        // Found by fuzz/service_json: an empty or multi-line JSON reason.
        assert_eq!(describe_error_body(br#"[""]"#), r#"[""]"#);
        assert_eq!(
            describe_error_body(br#"{"reason":"line one\nline\u0007 two"}"#),
            "line one line two"
        );
        let long = "x".repeat(5000);
        assert!(describe_error_body(long.as_bytes()).chars().count() <= MAX_REASON_CHARS + 1);
    }

    #[test]
    fn redirects_name_only_the_origin_and_are_never_retried() {
        let requested =
            Url::parse("https://svc.example/api/assisted-install/v2/infra-envs/x/hosts").unwrap();
        let error = |location: &str| {
            redirect_error(
                "listing",
                StatusCode::FOUND,
                &requested,
                &HeaderValue::from_str(location).unwrap(),
            )
        };
        // https -> http on the same host is another origin.
        let err = error("http://svc.example/api/assisted-install/v2/x?token=sekrit");
        assert!(!err.is_retryable());
        let text = err.to_string();
        assert!(
            text.contains("redirecting to http://svc.example (another origin)"),
            "{text}"
        );
        assert!(text.contains("goes to https://svc.example only"), "{text}");
        assert!(
            !text.contains("sekrit") && !text.contains("/api/"),
            "{text}"
        );
        // The default port spelled out is still the same origin; a relative
        // Location resolves against the request.
        for same in ["https://svc.example:443/elsewhere", "/api/other"] {
            assert!(
                error(same)
                    .to_string()
                    .contains("https://svc.example (the same origin)"),
                "{same}"
            );
        }
        assert!(error("https://svc.example:8443/")
            .to_string()
            .contains("https://svc.example:8443 (another origin)"));
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&headers), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&headers), None);
    }

    #[test]
    fn api_base_accepts_urls_with_and_without_a_path() {
        for (service, expected) in [
            (
                "https://svc.example",
                "https://svc.example/api/assisted-install/v2/infra-envs",
            ),
            (
                "https://svc.example/prefix",
                "https://svc.example/prefix/api/assisted-install/v2/infra-envs",
            ),
        ] {
            let client = Client::new(&ClientSettings {
                service_url: Url::parse(service).unwrap(),
                token: None,
                ca_cert: None,
                insecure: false,
                request_timeout: Duration::from_secs(5),
                retry: RetryPolicy::default(),
                proxy: ProxySettings::default(),
            })
            .unwrap();
            assert_eq!(client.url("infra-envs").as_str(), expected);
        }
    }
}
