//! What a host file holds, checked before any of it becomes a member.
//! Redaction reads text: a secret inside compressed or binary bytes is
//! invisible to it, so such bytes are never shipped as they are
//! (docs/security.md, "Compressed and binary host files").
//!
//! - [`TextCheck`] counts, as the bytes stream by, those that are not text:
//!   NUL bytes and bytes of invalid UTF-8. Over the tolerance
//!   ([`TextCheck::is_text`]: [`NOT_TEXT_PERCENT`] of the bytes, plus
//!   [`NOT_TEXT_FLOOR`]) the file is left out.
//! - [`gunzip`] inflates a gzip file (kubelet's rotated `0.log.<ts>.gz`)
//!   within [`Bounds`]: at most [`MAX_INFLATED`] bytes, at most
//!   [`MAX_RATIO`] inflated bytes per compressed byte (past
//!   [`RATIO_SLACK`]); the time it may take is its input's (a host file's
//!   reads end at the file's deadline). What it inflates is checked as text
//!   too, and a gzip inside a gzip is left out.
//! - [`read_text`] is the same check over a plain file.
//!
//! Host file capture (`file.rs`) runs them on every host file it ships; the
//! fuzz target `host_text` runs them on arbitrary bytes.

use std::io::{self, Read};

/// The first two bytes of every gzip member (RFC 1952).
pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Most bytes a gzip host file is inflated to: the member cap. kubelet
/// rotates container logs at 50 MiB (OpenShift's `containerLogMaxSize`),
/// so a real rotated log always fits.
pub(crate) const MAX_INFLATED: u64 = 64 * 1024 * 1024;
/// Inflated bytes per compressed byte past which a gzip file is a bomb.
/// Logs compress 5–20x (a line repeated with a new timestamp about 20x);
/// deflate can reach 1032x only on runs of one byte.
pub(crate) const MAX_RATIO: u64 = 100;
/// Inflated bytes allowed before the ratio counts: a small file's header
/// and first block must not trip it.
pub(crate) const RATIO_SLACK: u64 = 1024 * 1024;
/// Bytes that are not text allowed whatever the size: a tail read that
/// starts inside a multi-byte character, a stray byte in a short file.
pub(crate) const NOT_TEXT_FLOOR: u64 = 8;
/// Share of the bytes that may be NUL or invalid UTF-8, in percent: a
/// mostly-ASCII log with some Latin-1 passes, compressed or binary data
/// (half its bytes or more) does not.
pub(crate) const NOT_TEXT_PERCENT: u64 = 1;
/// Bytes read or inflated at a time.
const CHUNK: usize = 64 * 1024;

/// Counts the bytes of a stream that are not text: NUL bytes and the bytes
/// of invalid UTF-8 sequences, the same however the stream is cut into
/// chunks (a sequence split between two chunks is joined).
#[derive(Debug, Clone, Default)]
pub struct TextCheck {
    seen: u64,
    bad: u64,
    /// A UTF-8 sequence the last chunk left incomplete.
    carry: [u8; 4],
    carry_len: usize,
}

impl TextCheck {
    pub fn feed(&mut self, data: &[u8]) {
        self.seen += data.len() as u64;
        self.bad += memchr::memchr_iter(0, data).count() as u64;
        let rest = self.join_carried(data);
        self.scan(rest);
    }

    /// The end of the stream: a sequence still incomplete is invalid.
    pub fn finish(&mut self) {
        self.bad += self.carry_len as u64;
        self.carry_len = 0;
    }

    /// Bytes fed.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// NUL bytes and invalid UTF-8 bytes among them.
    pub fn bad(&self) -> u64 {
        self.bad
    }

    /// Whether the bytes so far are within the tolerance.
    pub fn is_text(&self) -> bool {
        self.bad <= NOT_TEXT_FLOOR + self.seen * NOT_TEXT_PERCENT / 100
    }

    /// Completes the sequence the last chunk left open with the first bytes
    /// of `data`; returns the rest of `data` to scan.
    fn join_carried<'a>(&mut self, data: &'a [u8]) -> &'a [u8] {
        if self.carry_len == 0 {
            return data;
        }
        let carried = self.carry_len;
        // Only a valid start of a 2-, 3- or 4-byte sequence is ever carried.
        let want = match self.carry[0] {
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        let take = (want - carried).min(data.len());
        let mut seq = self.carry;
        seq[carried..carried + take].copy_from_slice(&data[..take]);
        let len = carried + take;
        self.carry_len = 0;
        match std::str::from_utf8(&seq[..len]) {
            Ok(_) => &data[take..],
            Err(err) => match err.error_len() {
                // `data` ended first: still open.
                None => {
                    self.carry = seq;
                    self.carry_len = len;
                    &[]
                }
                // The bytes before the offending one are the invalid
                // sequence; scanning goes on at the offending byte.
                Some(n) => {
                    self.bad += n as u64;
                    &data[n - carried..]
                }
            },
        }
    }

    fn scan(&mut self, mut data: &[u8]) {
        loop {
            let Err(err) = std::str::from_utf8(data) else {
                return;
            };
            let rest = &data[err.valid_up_to()..];
            if let Some(n) = err.error_len() {
                self.bad += n as u64;
                data = &rest[n..];
            } else {
                self.carry[..rest.len()].copy_from_slice(rest);
                self.carry_len = rest.len();
                return;
            }
        }
    }
}

/// The limits of [`gunzip`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub max_inflated: u64,
    pub max_ratio: u64,
    pub ratio_slack: u64,
}

impl Bounds {
    /// What host files are inflated within (docs/security.md).
    pub(crate) const HOST: Bounds = Bounds {
        max_inflated: MAX_INFLATED,
        max_ratio: MAX_RATIO,
        ratio_slack: RATIO_SLACK,
    };
}

/// Why a host file is left out rather than shipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    /// More than `max_inflated` once inflated.
    TooBig { max: u64 },
    /// Inflated faster than `max_ratio` to one.
    Bomb {
        inflated: u64,
        compressed: u64,
        ratio: u64,
    },
    /// Inflated, it is gzip again.
    Nested,
    /// Too many bytes that are not text (`inflated`: once inflated).
    NotText { bad: u64, seen: u64, inflated: bool },
}

impl LeftOut {
    /// The manifest's reason for host file `host`.
    pub(crate) fn reason(&self, host: &str) -> String {
        match self {
            LeftOut::TooBig { max } => format!(
                "{host} is gzip-compressed and inflates to more than {} MiB (the bound on what is decompressed): left out",
                max >> 20
            ),
            LeftOut::Bomb {
                inflated,
                compressed,
                ratio,
            } => format!(
                "{host} is gzip-compressed at more than {ratio}:1 (a gzip bomb: {inflated} bytes from {compressed}): left out"
            ),
            LeftOut::Nested => format!(
                "{host} is gzip-compressed and, inflated, gzip again (not text): left out, redaction cannot read it"
            ),
            LeftOut::NotText {
                bad,
                seen,
                inflated,
            } => format!(
                "{host}{} is not text ({bad} of {seen} bytes read are NUL or invalid UTF-8, over the {NOT_TEXT_PERCENT} % tolerance): left out, redaction cannot read it",
                if *inflated { ", inflated from gzip," } else { "" }
            ),
        }
    }
}

/// How a read of a host file ended.
#[derive(Debug)]
pub enum End {
    /// To its end (or, for a plain file, to the read limit), all text.
    Complete,
    /// A read error or a corrupt or cut gzip stream (a rotation still
    /// being written): what was handed on before it is good text.
    Broken(io::Error),
    /// Nothing of it may be shipped.
    LeftOut(LeftOut),
}

/// What [`gunzip`] went through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Inflated {
    /// Bytes inflated, the skipped ones included.
    pub inflated: u64,
    /// Compressed bytes read from the input.
    pub compressed: u64,
    /// Inflated bytes passed over without being checked or handed on.
    pub skipped: u64,
}

/// Counts the bytes read through it.
struct Counting<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

/// Inflates the gzip stream `input` (one or more members) from its start,
/// within `bounds`: the first `skip` inflated bytes are passed over (the
/// caller keeps only the newest part), the rest are checked as text and
/// handed to `out`. Never hands on more than `bounds.max_inflated` bytes,
/// nor any byte of a chunk that crossed a bound.
pub fn gunzip<R: Read>(
    input: R,
    skip: u64,
    bounds: Bounds,
    out: &mut dyn FnMut(&[u8]),
) -> (Inflated, End) {
    let mut decoder = flate2::read::MultiGzDecoder::new(Counting {
        inner: input,
        count: 0,
    });
    let mut got = Inflated::default();
    let mut check = TextCheck::default();
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match decoder.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => {
                got.compressed = decoder.get_ref().count;
                return (got, End::Broken(err));
            }
        };
        got.compressed = decoder.get_ref().count;
        let inflated = got.inflated + n as u64;
        if inflated > bounds.max_inflated {
            return (
                got,
                End::LeftOut(LeftOut::TooBig {
                    max: bounds.max_inflated,
                }),
            );
        }
        let allowed = bounds
            .max_ratio
            .saturating_mul(got.compressed)
            .saturating_add(bounds.ratio_slack);
        if inflated > allowed {
            return (
                got,
                End::LeftOut(LeftOut::Bomb {
                    inflated,
                    compressed: got.compressed,
                    ratio: bounds.max_ratio,
                }),
            );
        }
        if got.inflated == 0 && buf[..n].starts_with(&GZIP_MAGIC) {
            return (got, End::LeftOut(LeftOut::Nested));
        }
        got.inflated = inflated;
        let mut data = &buf[..n];
        if got.skipped < skip {
            let pass = usize::try_from(skip - got.skipped).map_or(n, |left| left.min(n));
            got.skipped += pass as u64;
            data = &data[pass..];
        }
        if data.is_empty() {
            continue;
        }
        check.feed(data);
        if !check.is_text() {
            return (got, not_text(&check, true));
        }
        out(data);
    }
    check.finish();
    if !check.is_text() {
        return (got, not_text(&check, true));
    }
    (got, End::Complete)
}

/// A plain file's bytes from where `input` stands: checked as text and
/// handed to `out`, at most `limit` bytes. Returns the bytes read.
pub fn read_text<R: Read>(mut input: R, limit: u64, out: &mut dyn FnMut(&[u8])) -> (u64, End) {
    let mut check = TextCheck::default();
    let mut buf = vec![0u8; CHUNK];
    let mut read = 0u64;
    while read < limit {
        let want = usize::try_from(limit - read).map_or(CHUNK, |left| left.min(CHUNK));
        let n = match input.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return (read, End::Broken(err)),
        };
        read += n as u64;
        check.feed(&buf[..n]);
        if !check.is_text() {
            return (read, not_text(&check, false));
        }
        out(&buf[..n]);
    }
    check.finish();
    if !check.is_text() {
        return (read, not_text(&check, false));
    }
    (read, End::Complete)
}

fn not_text(check: &TextCheck, inflated: bool) -> End {
    End::LeftOut(LeftOut::NotText {
        bad: check.bad(),
        seen: check.seen(),
        inflated,
    })
}

/// Bytes of `data` that are not text, counted over the whole buffer at
/// once: what [`TextCheck`] must find however the bytes are chunked.
pub fn count_not_text(data: &[u8]) -> u64 {
    let mut check = TextCheck::default();
    check.feed(data);
    check.finish();
    check.bad()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip_at(data: &[u8], level: flate2::Compression) -> Vec<u8> {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), level);
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        gzip_at(data, flate2::Compression::fast())
    }

    fn inflate(input: &[u8], skip: u64, bounds: Bounds) -> (Vec<u8>, Inflated, End) {
        let mut out = Vec::new();
        let (got, end) = gunzip(input, skip, bounds, &mut |b| out.extend_from_slice(b));
        (out, got, end)
    }

    #[test]
    fn text_check_counts_the_same_at_every_split() {
        let text = "plain ascii, café, 日本語, emoji 🦀, a NUL \0, bad \u{fffd}"
            .as_bytes()
            .iter()
            .copied()
            .chain([0xff, 0xc3, b'x', 0xe6, 0x97, 0xf0, 0x9f, 0xa6])
            .collect::<Vec<u8>>();
        let whole = count_not_text(&text);
        // The NUL, 0xff, the cut 0xc3, the cut 0xe6 0x97, the cut 4-byte start.
        assert_eq!(whole, 1 + 1 + 1 + 2 + 3);
        for size in 1..text.len() {
            let mut check = TextCheck::default();
            for chunk in text.chunks(size) {
                check.feed(chunk);
            }
            check.finish();
            assert_eq!(check.bad(), whole, "chunks of {size}");
        }
    }

    #[test]
    fn text_within_the_tolerance_binary_beyond_it() {
        let mut check = TextCheck::default();
        check.feed(b"{\"broken\": \xff");
        assert!(check.is_text());
        let mut latin1 = b"caf\xe9 ".repeat(10);
        latin1.extend(std::iter::repeat_n(b'a', 10_000));
        let mut check = TextCheck::default();
        check.feed(&latin1);
        assert!(check.is_text(), "{}", check.bad());
        let compressed = gzip(&b"some log line\n".repeat(1000));
        let mut check = TextCheck::default();
        check.feed(&compressed);
        assert!(!check.is_text());
        let utf16: Vec<u8> = "a wide log line\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let mut check = TextCheck::default();
        check.feed(&utf16);
        assert!(!check.is_text());
    }

    #[test]
    fn gzip_is_inflated_checked_and_its_newest_part_handed_on() {
        let text = b"line one\nline two\n".repeat(100);
        let (out, got, end) = inflate(&gzip(&text), 0, Bounds::HOST);
        assert!(matches!(end, End::Complete), "{end:?}");
        assert_eq!(out, text);
        assert_eq!(got.inflated, text.len() as u64);
        let (out, got, _) = inflate(&gzip(&text), 1000, Bounds::HOST);
        assert_eq!(out, &text[1000..]);
        assert_eq!(got.skipped, 1000);
        // Two members, as `cat a.gz b.gz` makes.
        let mut two = gzip(b"first\n");
        two.extend(gzip(b"second\n"));
        assert_eq!(inflate(&two, 0, Bounds::HOST).0, b"first\nsecond\n");
    }

    #[test]
    fn bombs_big_files_nested_gzip_and_broken_streams() {
        // 16 MiB from about 16 KiB.
        let bomb = gzip_at(&b"y\n".repeat(8 << 20), flate2::Compression::best());
        let (out, got, end) = inflate(&bomb, 0, Bounds::HOST);
        assert!(matches!(end, End::LeftOut(LeftOut::Bomb { .. })), "{end:?}");
        assert!(got.inflated <= RATIO_SLACK + MAX_RATIO * got.compressed);
        // What came before the bound is handed on: the caller drops it.
        assert!(out.len() as u64 <= got.inflated);
        // A bomb of NUL bytes is not text from its first chunk.
        let zeros = gzip(&vec![0u8; 4 << 20]);
        let (out, _, end) = inflate(&zeros, 0, Bounds::HOST);
        assert!(
            matches!(end, End::LeftOut(LeftOut::NotText { inflated: true, .. })),
            "{end:?}"
        );
        assert!(out.is_empty());
        let small = Bounds {
            max_inflated: 1000,
            ..Bounds::HOST
        };
        let (out, _, end) = inflate(&gzip(&b"x".repeat(5000)), 0, small);
        assert!(matches!(end, End::LeftOut(LeftOut::TooBig { max: 1000 })));
        assert!(out.len() <= 1000);
        // A gzip inside a gzip: compressed bytes, however few, are not
        // shipped; a big one is not text anyway.
        for inner in [gzip(b"a log line\n"), gzip(&b"a log line\n".repeat(500))] {
            let (out, _, end) = inflate(&gzip(&inner), 0, Bounds::HOST);
            assert!(matches!(end, End::LeftOut(LeftOut::Nested)), "{end:?}");
            assert!(out.is_empty());
        }
        let random: Vec<u8> = (0..100_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
            .collect();
        let (_, _, end) = inflate(&gzip(&random), 0, Bounds::HOST);
        assert!(
            matches!(end, End::LeftOut(LeftOut::NotText { inflated: true, .. })),
            "{end:?}"
        );
        let whole = gzip(&b"a log line\n".repeat(10_000));
        let (out, _, end) = inflate(&whole[..whole.len() / 2], 0, Bounds::HOST);
        assert!(matches!(end, End::Broken(_)), "{end:?}");
        assert!(!out.is_empty());
        let reason = LeftOut::Bomb {
            inflated: 2 << 20,
            compressed: 2048,
            ratio: 100,
        }
        .reason("/var/log/pods/p/c/0.log.1.gz");
        assert!(reason.contains("gzip bomb"), "{reason}");
    }

    #[test]
    fn plain_files_stop_at_their_limit_or_at_binary() {
        let mut out = Vec::new();
        let (read, end) = read_text(&b"0123456789"[..], 4, &mut |b| out.extend_from_slice(b));
        assert!(matches!(end, End::Complete));
        assert_eq!((read, out.as_slice()), (4, &b"0123"[..]));
        let binary: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
        let (_, end) = read_text(binary.as_slice(), u64::MAX, &mut |_| {});
        assert!(matches!(end, End::LeftOut(LeftOut::NotText { .. })));
    }
}
