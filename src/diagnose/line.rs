//! The small text helpers the rules and the normaliser share.
//! Everything here works on any text: the fuzz target `diagnose` drives
//! the rules with arbitrary input.

/// Whether `text` holds the literal `pattern`. The searcher (memchr's
/// `memmem`) is built once per call site: `str::contains` builds one at
/// every call, most of what a rule's check costs on a short line.
macro_rules! has {
    ($text:expr, $pattern:literal) => {{
        static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new($pattern));
        let text: &str = $text;
        FINDER.find(text.as_bytes()).is_some()
    }};
}
pub(crate) use has;

/// [`after`] for a literal `pattern`, its searcher built once per call site.
macro_rules! after_lit {
    ($text:expr, $pattern:literal) => {{
        static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new($pattern));
        let text: &str = $text;
        FINDER
            .find(text.as_bytes())
            .map(|i| &text[i + $pattern.len()..])
    }};
}
pub(crate) use after_lit;

/// The text right after the first `pattern`.
pub(crate) fn after<'a>(text: &'a str, pattern: &str) -> Option<&'a str> {
    text.find(pattern).map(|i| &text[i + pattern.len()..])
}

/// The leading run of `text` up to (not including) any of `stops`.
pub(crate) fn token_until<'a>(text: &'a str, stops: &[char]) -> &'a str {
    // ASCII stops (all the rules use): a byte loop, each stop a character
    // boundary, instead of decoding every character.
    let end = if stops.iter().all(char::is_ascii) {
        text.bytes()
            .position(|b| b.is_ascii() && stops.contains(&char::from(b)))
    } else {
        text.find(|c: char| stops.contains(&c))
    };
    &text[..end.unwrap_or(text.len())]
}

/// The host of the first `https://` or `http://` URL in `text`.
pub(crate) fn url_host(text: &str) -> Option<&str> {
    let rest = after(text, "https://").or_else(|| after(text, "http://"))?;
    let host = token_until(rest, &['/', '"', ' ', '\'', '\\', ')', ',']);
    let host = host.rsplit('@').next().unwrap_or(host);
    (!host.is_empty()).then_some(host)
}

/// The registry of an image reference in a containers/image message:
/// `docker://REG/…`, `registry REG`, `in REG/repo`, or a URL.
pub(crate) fn registry_host(text: &str) -> Option<&str> {
    let candidates = [
        after(text, "docker://"),
        after(text, "container registry "),
        after(text, " in ").filter(|r| {
            let t = token_until(r, &['/', ' ', ':']);
            t.contains('.') && !t.ends_with('.')
        }),
    ];
    for rest in candidates.into_iter().flatten() {
        let host = token_until(rest, &['/', ' ', '"', ':', '@', ',']);
        if host.contains('.') || host == "localhost" {
            return Some(host);
        }
    }
    url_host(text)
        .map(|h| token_until(h, &[':']))
        .or_else(|| image_registry(text))
}

/// The registry of the first bare image reference in `text`
/// (`quay.io/openshift-release-dev/ocp-release@sha256:…`).
pub(crate) fn image_registry(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | ')' | ',' | '`'))
        .filter_map(|t| t.split_once('/'))
        .map(|(host, _)| host)
        .find(|host| {
            let name = host.split(':').next().unwrap_or(host);
            name.contains('.')
                && !name.starts_with('.')
                && name.split('.').all(|p| {
                    !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                })
                && name.chars().any(|c| c.is_ascii_alphabetic())
        })
        .map(|host| token_until(host, &[':']))
}

/// The words of `text` where `needle` is found, widened to whole words:
/// anchors often leave out a first letter to match either case
/// (`alidating runtime config`), and a summary quoting the anchor would
/// show a clipped word.
pub(crate) fn words_at<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    let at = text.find(needle)?;
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|(_, c)| word(*c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = at + needle.len();
    let end = end
        + text[end..]
            .char_indices()
            .find(|(_, c)| !word(*c))
            .map_or(text.len() - end, |(i, _)| i);
    Some(&text[start..end])
}

/// At most `max` characters of `text`, with `…` when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let mut out = String::new();
    shorten_into(text, max, &mut out);
    out
}

/// [`shorten`] into a reused buffer: no allocation once it has room.
pub(crate) fn shorten_into(text: &str, max: usize, out: &mut String) {
    out.clear();
    // As many bytes as characters at most: no need to count them.
    if text.len() <= max {
        out.push_str(text);
        return;
    }
    if max == 0 {
        return;
    }
    // ASCII up to the cut: bytes are characters.
    if text.as_bytes()[..max].is_ascii() {
        out.push_str(&text[..max - 1]);
        out.push('…');
        return;
    }
    let mut keep = 0;
    for (count, (i, _)) in text.char_indices().enumerate() {
        if count == max - 1 {
            keep = i;
        }
        if count == max {
            out.push_str(&text[..keep]);
            out.push('…');
            return;
        }
    }
    out.push_str(text);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_urls_and_images() {
        assert_eq!(url_host(r#"Get "https://quay.io/v2/": x"#), Some("quay.io"));
        assert_eq!(
            registry_host("initializing source docker://quay.io/openshift/x@sha256:1"),
            Some("quay.io")
        );
        assert_eq!(
            registry_host(
                "reading manifest sha256:1 in registry.example.com:5000/ocp4/x: unauthorized"
            ),
            Some("registry.example.com")
        );
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
