//! How assisted-service's Go stack writes bytes, so the mock's bodies match
//! the real ones where a client reads them: go-openapi's JSON producer
//! (`vendor/github.com/go-openapi/runtime/json.go`: `json.Encoder`, HTML
//! escaping off, one newline after the value), `json.Marshal` (HTML escaping
//! on, no newline: `errors.ServeError` and `swag.WriteJSON`, which the
//! octet-stream producer uses for error models), and the two time types of
//! the models (`strfmt.DateTime` and `time.Time`).

use std::fmt::Write as _;
use std::time::SystemTime;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A zero `strfmt.DateTime`: a struct, so `omitempty` never drops it
/// (`vendor/github.com/go-openapi/strfmt/time.go`, `RFC3339Millis`).
pub const ZERO_DATE_TIME: &str = "0001-01-01T00:00:00.000Z";

/// A zero `time.Time` as `encoding/json` writes it (RFC 3339, no fraction).
pub const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// `strfmt.DateTime`: milliseconds, UTC; unset is Go's zero time.
pub fn date_time(t: Option<SystemTime>) -> String {
    t.map_or_else(
        || ZERO_DATE_TIME.to_owned(),
        |t| humantime::format_rfc3339_millis(t).to_string(),
    )
}

/// `time.Time` (`created_at`, `updated_at`): RFC 3339 with the fraction
/// PostgreSQL kept (microseconds), trailing zeros trimmed as Go's
/// `RFC3339Nano` does.
pub fn go_time(t: SystemTime) -> String {
    let text = humantime::format_rfc3339_micros(t).to_string();
    let Some(body) = text.strip_suffix('Z') else {
        return text;
    };
    match body.split_once('.') {
        Some((whole, fraction)) => {
            let fraction = fraction.trim_end_matches('0');
            if fraction.is_empty() {
                format!("{whole}Z")
            } else {
                format!("{whole}.{fraction}Z")
            }
        }
        None => text,
    }
}

/// `value` as Go's encoder writes it: serde_json's escapes are Go's except
/// that Go always escapes U+2028/U+2029 and, with HTML escaping on, `<`,
/// `>` and `&`. These characters only occur inside strings, so replacing
/// them in the text keeps it valid JSON.
pub fn go_encode(value: &Value, escape_html: bool) -> String {
    let text = value.to_string();
    let needs = |c: char| {
        matches!(c, '\u{2028}' | '\u{2029}') || (escape_html && matches!(c, '<' | '>' | '&'))
    };
    if !text.contains(needs) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if needs(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// A body as go-openapi's JSON producer writes it.
pub fn json_body(value: &Value) -> String {
    let mut text = go_encode(value, false);
    text.push('\n');
    text
}

/// A successful JSON answer (200), as a go-swagger responder writes it.
pub fn json_ok(value: &Value) -> Response {
    json_response(StatusCode::OK, value)
}

pub fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json_body(value),
    )
        .into_response()
}

/// What go-openapi's content negotiation (`Context.Respond`) picks among a
/// route's `produces` (the default, `application/json`, last): the offer
/// the `Accept` header weighs highest, the first on a tie or without one.
pub fn prefers_octet_stream(headers: &HeaderMap) -> bool {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.trim().is_empty())
    else {
        return true;
    };
    let weight = |offer: &str| -> f32 {
        let (kind, _) = offer.split_once('/').unwrap_or((offer, ""));
        let mut best: Option<(u8, f32)> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            let specificity = if media == offer {
                3
            } else if media == format!("{kind}/*") {
                2
            } else if media == "*/*" {
                1
            } else {
                continue;
            };
            if best.is_none_or(|(s, _)| specificity > s) {
                best = Some((specificity, q));
            }
        }
        best.map_or(0.0, |(_, q)| q)
    };
    weight("application/octet-stream") >= weight("application/json")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn times_follow_go() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_450_789);
        assert_eq!(date_time(Some(t)), "2023-11-14T22:13:20.123Z");
        assert_eq!(date_time(None), ZERO_DATE_TIME);
        assert_eq!(go_time(t), "2023-11-14T22:13:20.12345Z");
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(go_time(whole), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn html_escaping_only_where_go_does_it() {
        let v = json!({"reason": "Can't set progress <Joined> & more\u{2028}"});
        assert_eq!(
            go_encode(&v, true),
            r#"{"reason":"Can't set progress \u003cJoined\u003e \u0026 more\u2028"}"#
        );
        assert_eq!(
            json_body(&v),
            "{\"reason\":\"Can't set progress <Joined> & more\\u2028\"}\n"
        );
    }

    #[test]
    fn negotiation_prefers_the_first_offer() {
        let mut h = HeaderMap::new();
        assert!(prefers_octet_stream(&h));
        h.insert(header::ACCEPT, "*/*".parse().unwrap());
        assert!(prefers_octet_stream(&h));
        h.insert(
            header::ACCEPT,
            "text/html,application/xhtml+xml,*/*;q=0.8".parse().unwrap(),
        );
        assert!(prefers_octet_stream(&h));
        h.insert(header::ACCEPT, "application/json".parse().unwrap());
        assert!(!prefers_octet_stream(&h));
    }
}
