//! The agent's log lines, in tracing-subscriber's `fmt` format (`TIME LEVEL
//! message key=value`, no target, no colours), written through the
//! redacting [`crate::redact::log_writer`].
//!
//! A subscriber of its own instead of tracing-subscriber: the agent has no
//! spans and one output, so the registry, span storage and layering it
//! would carry are dead weight in a binary with a size budget
//! (docs/packaging.md).

use std::fmt::{self, Write as _};
use std::io::Write as _;
use std::time::SystemTime;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Sets the process's subscriber: events at `max` and more severe, each
/// one line; `time` prefixes an RFC 3339 timestamp (journald adds its own).
pub(crate) fn init(max: Level, time: bool) {
    // Only fails when a subscriber is already set (tests): that one stays.
    let _ = tracing::subscriber::set_global_default(LineLogger { max, time });
}

struct LineLogger {
    max: Level,
    time: bool,
}

impl Subscriber for LineLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        // tracing orders levels by verbosity: ERROR is the least.
        *metadata.level() <= self.max
    }

    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::from_level(self.max))
    }

    // No spans: every one gets the same id and nothing is kept.
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut line = String::with_capacity(160);
        if self.time {
            let _ = write!(
                line,
                "{} ",
                humantime::format_rfc3339_micros(SystemTime::now())
            );
        }
        let _ = write!(line, "{:>5} ", event.metadata().level().as_str());
        event.record(&mut Fields {
            line: &mut line,
            first: true,
        });
        line.push('\n');
        let _ = crate::redact::log_writer().write_all(line.as_bytes());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// tracing-subscriber's default field format: the message as it is, the
/// other fields as `name=value` (Debug), separated by spaces.
struct Fields<'a> {
    line: &'a mut String,
    first: bool,
}

impl Fields<'_> {
    fn pad(&mut self) {
        if !std::mem::take(&mut self.first) {
            self.line.push(' ');
        }
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        // `error message name.sources=[cause, its cause]`, as tracing-subscriber has it.
        let mut text = format!("{}", Escaped(&format_args!("{value}")));
        let mut next = value.source();
        if next.is_some() {
            let _ = write!(text, " {}.sources=[", field.name());
            let mut sep = "";
            while let Some(err) = next {
                let _ = write!(text, "{sep}{}", Escaped(&format_args!("{err}")));
                sep = ", ";
                next = err.source();
            }
            text.push(']');
        }
        self.record_debug(field, &format_args!("{text}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.pad();
        let _ = match field.name() {
            "message" => write!(self.line, "{:?}", Escaped(value)),
            name => write!(
                self.line,
                "{}={value:?}",
                name.strip_prefix("r#").unwrap_or(name)
            ),
        };
    }
}

/// A value with the control characters that steer terminals spelled out,
/// as tracing-subscriber sanitises messages: a log line cannot rewrite the
/// terminal of whoever reads it.
struct Escaped<'a, T: ?Sized>(&'a T);

impl<T: fmt::Debug + ?Sized> fmt::Debug for Escaped<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(EscapingWriter(f), "{:?}", self.0)
    }
}

impl<T: fmt::Display + ?Sized> fmt::Display for Escaped<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(EscapingWriter(f), "{}", self.0)
    }
}

struct EscapingWriter<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for EscapingWriter<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for ch in s.chars() {
            match ch {
                '\x1b' | '\x07' | '\x08' | '\x0c' | '\x7f' => {
                    write!(self.0, "\\x{:02x}", u32::from(ch))?;
                }
                '\u{80}'..='\u{9f}' => write!(self.0, "\\u{{{:x}}}", u32::from(ch))?,
                _ => self.0.write_char(ch)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(event: impl FnOnce()) -> String {
        struct Capture(std::sync::Arc<std::sync::Mutex<String>>);
        // The same formatting, into a buffer instead of stderr.
        impl Subscriber for Capture {
            fn enabled(&self, _: &Metadata<'_>) -> bool {
                true
            }
            fn new_span(&self, _: &Attributes<'_>) -> Id {
                Id::from_u64(1)
            }
            fn record(&self, _: &Id, _: &Record<'_>) {}
            fn record_follows_from(&self, _: &Id, _: &Id) {}
            fn event(&self, event: &Event<'_>) {
                let mut out = self.0.lock().unwrap();
                let _ = write!(out, "{:>5} ", event.metadata().level().as_str());
                event.record(&mut Fields {
                    line: &mut out,
                    first: true,
                });
            }
            fn enter(&self, _: &Id) {}
            fn exit(&self, _: &Id) {}
        }
        let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        tracing::subscriber::with_default(Capture(out.clone()), event);
        let text = out.lock().unwrap().clone();
        text
    }

    #[test]
    fn formats_like_tracing_subscriber_fmt() {
        assert_eq!(
            line(|| tracing::info!(member = "a/b", n = 3, "shipped {}", 2)),
            " INFO shipped 2 member=\"a/b\" n=3"
        );
        assert_eq!(
            line(|| tracing::error!("bad \x1b[2J terminal")),
            "ERROR bad \\x1b[2J terminal"
        );
        let err = std::io::Error::other("disk gone");
        assert_eq!(
            line(|| tracing::warn!(error = &err as &dyn std::error::Error, "write")),
            " WARN write error=disk gone"
        );
    }
}
