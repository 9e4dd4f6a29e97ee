//! Times as the service prints them: RFC 3339 with milliseconds, UTC (the
//! swagger's `date-time`), for the JSON bodies and the admin views.

use std::time::SystemTime;

pub fn fmt_time(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's serialize_with signature
pub fn ser_time<S: serde::Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&fmt_time(*t))
}
