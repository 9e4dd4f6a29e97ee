//! The page at `/`: clusters, hosts with their stage progress and history,
//! uploaded bundles and a browser for their contents. A static HTML shell
//! with its script and style compiled in (no CDN, works offline); the script
//! polls `/admin/state` and the bundle views in `browse`.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::state::Shared;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

pub fn router() -> Router<Shared> {
    Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
}

/// Assets change with every build of the mock; `no-cache` makes a browser
/// left open across a rebuild pick up the new ones.
fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_references_only_embedded_assets() {
        // No CDN and no full-page refresh (that would close an open bundle).
        for asset in [INDEX_HTML, APP_JS, APP_CSS] {
            assert!(!asset.contains("http://") && !asset.contains("https://"));
        }
        assert!(!INDEX_HTML.contains("http-equiv"));
        assert!(INDEX_HTML.contains("/assets/app.js") && INDEX_HTML.contains("/assets/app.css"));
        assert!(APP_JS.contains("/admin/state"));
    }
}
