//! Where a member's content waits between its source and the archive,
//! already compressed: tar needs a member's size before its first byte, and
//! a journal's size is only known once journalctl is done.
//!
//! [`Chunks`] keeps the newest `cap` bytes of whatever is written to it as a
//! row of independent gzip members ("chunks"), each about [`CHUNK_BYTES`] of
//! content cut at a line end. A tar.gz may be several concatenated gzip
//! members (RFC 1952; gzip, GNU tar, Python's tarfile and Go's
//! compress/gzip read them as one stream), so the archive writer copies the
//! chunks as they are, between a header and a padding it compresses itself
//! (`bundle.rs`). Nothing touches the disk, and every byte is compressed
//! once: the chunks of a cached journal are shipped again by later bundles
//! without being read again (`collect::journal`).
//!
//! The cap keeps the newest part by dropping the oldest chunks; when the
//! cap falls inside a chunk, that one chunk (at most [`CHUNK_BYTES`] and a
//! line) is decompressed and its kept end handed over uncompressed, so a
//! member holds exactly what the cap allows. The newest, still open chunk
//! waits uncompressed: small members never get compressed on their own and
//! join the archive writer's shared gzip member with their header.
//!
//! Memory per member: the open chunk (about one [`CHUNK_BYTES`]) and the
//! compressed chunks, at most [`COMPRESSED_CAP`] of them; incompressible
//! content reaches that bound first and then keeps its newest
//! [`COMPRESSED_CAP`], with a note in the manifest.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::Arc;

use crate::gzip::Gzip;

/// Content per chunk: big enough that a gzip member's header, trailer and
/// fresh dictionary cost nothing measurable, small enough that the open
/// chunk and a cut are cheap.
pub const CHUNK_BYTES: usize = 1 << 20;
/// The bundle's deflate level (libdeflate's scale), chosen by figures:
/// docs/benchmarks.md, section 2.
pub const GZIP_LEVEL: i32 = crate::gzip::BUNDLE_LEVEL;
/// A line longer than this past [`CHUNK_BYTES`] is cut without its end.
const LONG_LINE: usize = 256 << 10;
/// Most compressed bytes one member holds in memory: 64 MiB of journal
/// compresses to 5–10 MiB, so only incompressible content ever reaches it.
pub(crate) const COMPRESSED_CAP: u64 = 12 << 20;

/// One sealed chunk: a complete gzip member and what it holds.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// The gzip member, shared with the journal cache across bundles.
    pub gz: Arc<Vec<u8>>,
    /// Content bytes.
    pub(crate) raw: u64,
    pub(crate) newlines: u64,
    /// The content's last byte.
    pub(crate) last: u8,
}

impl Chunk {
    /// The content again (for a cut inside the chunk, and for readers that
    /// want plain bytes).
    pub(crate) fn inflate(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(usize::try_from(self.raw).unwrap_or(0));
        flate2::read::GzDecoder::new(self.gz.as_slice()).read_to_end(&mut out)?;
        Ok(out)
    }
}

/// Compresses chunks with one compressor and one output buffer for a whole
/// member: a fresh compressor per chunk would churn a few hundred KiB of
/// allocations per MiB, which the allocator keeps as resident memory.
#[derive(Debug)]
pub struct Sealer {
    gzip: Gzip,
}

impl Sealer {
    pub fn new() -> Self {
        Self {
            gzip: Gzip::new(GZIP_LEVEL),
        }
    }

    /// `data` as one complete gzip member.
    pub fn seal(&mut self, data: &[u8]) -> Chunk {
        Chunk {
            // An exact copy: held for the member's (or the cache's) life.
            gz: Arc::new(self.gzip.member(data).to_vec()),
            raw: data.len() as u64,
            newlines: crate::newlines::count(data),
            last: data.last().copied().unwrap_or(b'\n'),
        }
    }
}

impl Default for Sealer {
    fn default() -> Self {
        Self::new()
    }
}

/// A member's content being gathered.
#[derive(Debug)]
pub(crate) struct Chunks {
    cap: u64,
    sealed: VecDeque<Chunk>,
    sealed_raw: u64,
    sealed_gz: u64,
    open: Vec<u8>,
    /// Bytes written in all.
    seen: u64,
    /// Chunks dropped to stay within [`COMPRESSED_CAP`].
    compressed_cut: bool,
    /// Made at the first chunk: small members never need one.
    sealer: Option<Sealer>,
}

impl Chunks {
    pub(crate) fn new(cap: u64) -> Self {
        Self {
            cap,
            sealed: VecDeque::new(),
            sealed_raw: 0,
            sealed_gz: 0,
            open: Vec::new(),
            seen: 0,
            compressed_cut: false,
            sealer: None,
        }
    }

    /// Carries on from `saved`, an earlier state of the same stream (the
    /// journal cache), as if its bytes had just been written here.
    pub(crate) fn resume(cap: u64, saved: &Saved) -> Self {
        let mut this = Self::new(cap);
        for chunk in &saved.sealed {
            this.push_sealed(chunk.clone());
        }
        this.open.clone_from(&saved.open);
        this.seen = saved.seen;
        this
    }

    /// Bytes held now (a little above the cap until [`Chunks::finish`]).
    fn held(&self) -> u64 {
        self.sealed_raw + self.open.len() as u64
    }

    pub(crate) fn write(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.seen += data.len() as u64;
        if self.cap <= CHUNK_BYTES as u64 {
            // A small cap is a plain ring: never worth compressing twice.
            let cap = usize::try_from(self.cap).unwrap_or(usize::MAX);
            let skip = data.len().saturating_sub(cap);
            self.open.extend_from_slice(&data[skip..]);
            if self.open.len() > cap.saturating_mul(2).max(4096) {
                let excess = self.open.len() - cap;
                self.open.drain(..excess);
            }
            return;
        }
        if self.open.len() + data.len() > self.open.capacity() && self.open.len() >= 64 << 10 {
            // Once a member is big, the open chunk gets its whole room at
            // once: doubling would leave it twice the size it needs.
            let room = (CHUNK_BYTES + LONG_LINE).max(self.open.len() + data.len());
            self.open.reserve_exact(room - self.open.len());
        }
        self.open.extend_from_slice(data);
        while self.open.len() >= CHUNK_BYTES {
            let cut = match memchr::memrchr(b'\n', &self.open) {
                Some(nl) if nl + 1 >= CHUNK_BYTES / 2 => nl + 1,
                _ if self.open.len() >= CHUNK_BYTES + LONG_LINE => self.open.len(),
                _ => break,
            };
            let chunk = self
                .sealer
                .get_or_insert_with(Sealer::new)
                .seal(&self.open[..cut]);
            self.open.drain(..cut);
            self.push_sealed(chunk);
        }
    }

    /// The stream as it stands, for a later bundle to resume from: the
    /// compressed chunks are shared, an open chunk past [`SAVED_OPEN_BYTES`]
    /// is sealed first so that a cache stays mostly compressed.
    pub(crate) fn save(&mut self) -> Saved {
        if self.open.len() > SAVED_OPEN_BYTES && self.cap > CHUNK_BYTES as u64 {
            let chunk = self.sealer.get_or_insert_with(Sealer::new).seal(&self.open);
            self.open.clear();
            self.push_sealed(chunk);
        }
        Saved {
            sealed: self.sealed.iter().cloned().collect(),
            open: self.open.clone(),
            seen: self.seen,
        }
    }

    /// Like [`Chunks::finish`], keeping at most `budget` bytes (a bundle's
    /// share may be below what the stream keeps for later bundles).
    pub(crate) fn finish_within(mut self, budget: u64) -> Content {
        self.cap = self.cap.min(budget);
        self.finish()
    }

    fn push_sealed(&mut self, chunk: Chunk) {
        self.sealed_raw += chunk.raw;
        self.sealed_gz += chunk.gz.len() as u64;
        self.sealed.push_back(chunk);
        // Drop whole chunks the cap no longer needs...
        while let Some(front) = self.sealed.front() {
            if self.held() - front.raw < self.cap {
                break;
            }
            self.pop_front();
        }
        // ...and the oldest ones past the memory bound, whatever the cap.
        while self.sealed_gz > COMPRESSED_CAP && self.sealed.len() > 1 {
            self.pop_front();
            self.compressed_cut = true;
        }
    }

    fn pop_front(&mut self) {
        if let Some(front) = self.sealed.pop_front() {
            self.sealed_raw -= front.raw;
            self.sealed_gz -= front.gz.len() as u64;
        }
    }

    /// The newest `cap` bytes, ready for the archive.
    pub(crate) fn finish(mut self) -> Content {
        let mut excess = self.held().saturating_sub(self.cap);
        while let Some(front) = self.sealed.front() {
            if front.raw > excess {
                break;
            }
            excess -= front.raw;
            self.pop_front();
        }
        let mut head = Vec::new();
        let mut problem = None;
        if excess > 0 {
            let skip = usize::try_from(excess).unwrap_or(usize::MAX);
            match self.sealed.pop_front() {
                Some(front) => {
                    self.sealed_raw -= front.raw;
                    self.sealed_gz -= front.gz.len() as u64;
                    match front.inflate() {
                        Ok(mut content) => {
                            content.drain(..skip.min(content.len()));
                            head = content;
                        }
                        // Cannot happen to bytes compressed in memory; if
                        // it did, the chunk is left out and said so.
                        Err(err) => {
                            problem = Some(format!("a compressed chunk is unreadable: {err}"));
                        }
                    }
                }
                None => {
                    self.open.drain(..skip.min(self.open.len()));
                }
            }
        }
        if self.compressed_cut {
            problem = Some(format!(
                "compressed size cap ({} MiB of compressed content held per member): \
                 content that compresses badly keeps less than the member cap",
                COMPRESSED_CAP >> 20
            ));
        }
        let len = head.len() as u64 + self.sealed_raw + self.open.len() as u64;
        Content {
            head,
            sealed: self.sealed.into_iter().collect(),
            tail: self.open,
            len,
            seen: self.seen,
            problem,
        }
    }
}

/// Uncompressed bytes a saved stream may keep (more is sealed first).
pub(crate) const SAVED_OPEN_BYTES: usize = 64 << 10;

/// A stream's state kept between bundles (`collect::journal::Cache`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Saved {
    pub(crate) sealed: Vec<Chunk>,
    pub(crate) open: Vec<u8>,
    /// Bytes of the stream in all, dropped ones included.
    pub(crate) seen: u64,
}

impl Saved {
    /// Memory it holds.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.sealed.iter().map(|c| c.gz.len() as u64).sum::<u64>() + self.open.len() as u64
    }
}

/// A finished member: `head` (plain), the sealed chunks (gzip members),
/// then `tail` (plain), `len` bytes in all.
#[derive(Debug, Default)]
pub(crate) struct Content {
    pub(crate) head: Vec<u8>,
    pub(crate) sealed: Vec<Chunk>,
    pub(crate) tail: Vec<u8>,
    len: u64,
    seen: u64,
    problem: Option<String>,
}

impl Content {
    /// Bytes in the member.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the stream had before the cap.
    pub(crate) fn seen(&self) -> u64 {
        self.seen
    }

    /// Whether older bytes were dropped.
    pub(crate) fn truncated(&self) -> bool {
        self.seen > self.len
    }

    /// Why less than the cap was kept, if memory bounded it.
    pub(crate) fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Compressed bytes held.
    #[cfg(test)]
    pub(crate) fn compressed_bytes(&self) -> u64 {
        self.sealed.iter().map(|c| c.gz.len() as u64).sum()
    }

    /// Lines of the member, a partial last one included.
    pub(crate) fn lines(&self) -> u64 {
        let count = |b: &[u8]| memchr::memchr_iter(b'\n', b).count() as u64;
        let newlines = count(&self.head)
            + self.sealed.iter().map(|c| c.newlines).sum::<u64>()
            + count(&self.tail);
        let last = self
            .tail
            .last()
            .copied()
            .or_else(|| self.sealed.last().map(|c| c.last))
            .or_else(|| self.head.last().copied());
        newlines + u64::from(last.is_some_and(|b| b != b'\n'))
    }

    /// The content as plain bytes, in order (decompressing the chunks).
    pub(crate) fn reader(&self) -> ContentReader<'_> {
        ContentReader {
            content: self,
            part: 0,
            buf: Vec::new(),
            pos: 0,
        }
    }
}

/// Reads a [`Content`] in order.
pub(crate) struct ContentReader<'a> {
    content: &'a Content,
    /// 0 = head, 1..=n = sealed chunk n-1, n+1 = tail.
    part: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for ContentReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let sealed = self.content.sealed.len();
        loop {
            let current: &[u8] = match self.part {
                0 => &self.content.head,
                p if p <= sealed => &self.buf,
                p if p == sealed + 1 => &self.content.tail,
                _ => return Ok(0),
            };
            if self.pos < current.len() {
                let n = (current.len() - self.pos).min(out.len());
                out[..n].copy_from_slice(&current[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            self.part += 1;
            self.pos = 0;
            if (1..=sealed).contains(&self.part) {
                self.buf = self.content.sealed[self.part - 1].inflate()?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(content: &Content) -> Vec<u8> {
        let mut out = Vec::new();
        content.reader().read_to_end(&mut out).unwrap();
        out
    }

    /// Numbered lines of varying length, `n` of them.
    fn lines(from: usize, n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for i in from..from + n {
            out.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 97)).as_bytes());
        }
        out
    }

    #[test]
    fn small_content_stays_plain() {
        let mut chunks = Chunks::new(1 << 20);
        chunks.write(b"hello ");
        chunks.write(b"world");
        let content = chunks.finish();
        assert_eq!(contents(&content), b"hello world");
        assert!(content.sealed.is_empty());
        assert!(!content.truncated());
        assert_eq!(content.lines(), 1);
    }

    #[test]
    fn small_cap_keeps_the_newest_bytes() {
        let mut chunks = Chunks::new(5);
        for part in [&b"abc"[..], b"defg", b"0123456789", b"xy"] {
            chunks.write(part);
        }
        let content = chunks.finish();
        assert_eq!(contents(&content), b"789xy");
        assert_eq!(content.seen(), 19);
        assert!(content.truncated());
    }

    #[test]
    fn big_content_is_sealed_at_line_ends_and_cut_exactly() {
        let all = lines(0, 200_000);
        let cap = 3 * CHUNK_BYTES as u64 + 12_345;
        let mut chunks = Chunks::new(cap);
        // Odd write sizes, as pipes deliver.
        let mut rest = &all[..];
        let mut n = 0usize;
        while !rest.is_empty() {
            let take = (1000 + n * 7919 % 70_000).min(rest.len());
            chunks.write(&rest[..take]);
            rest = &rest[take..];
            n += 1;
        }
        let content = chunks.finish();
        let cap_usize = usize::try_from(cap).unwrap();
        assert_eq!(content.len(), cap);
        assert!(content.sealed.len() >= 2, "{}", content.sealed.len());
        for chunk in &content.sealed {
            assert_eq!(chunk.last, b'\n');
        }
        let kept = contents(&content);
        assert_eq!(kept, all[all.len() - cap_usize..]);
        let expected_lines = memchr::memchr_iter(b'\n', &kept).count() as u64;
        assert_eq!(content.lines(), expected_lines);
        // Held compressed: far below the content.
        assert!(content.compressed_bytes() < cap / 4);
    }

    #[test]
    fn incompressible_content_is_bounded_by_the_compressed_cap() {
        let mut chunks = Chunks::new(64 << 20);
        let mut rng = fastrand::Rng::with_seed(7);
        let mut block = vec![0u8; 64 << 10];
        let total = 40usize << 20;
        let mut written = 0;
        let mut last = Vec::new();
        while written < total {
            rng.fill(&mut block);
            chunks.write(&block);
            written += block.len();
            last.clone_from(&block);
        }
        let content = chunks.finish();
        assert!(
            content.compressed_bytes() <= COMPRESSED_CAP,
            "{}",
            content.compressed_bytes()
        );
        assert!(content.compressed_bytes() > COMPRESSED_CAP - 2 * CHUNK_BYTES as u64);
        assert!(content.truncated());
        assert!(content.problem().unwrap().contains("compressed size cap"));
        assert!(contents(&content).ends_with(&last));
    }

    #[test]
    fn a_saved_stream_resumes_as_the_same_stream() {
        let first = lines(0, 30_000);
        let second = lines(30_000, 30_000);
        let cap = 64 << 20;
        let mut chunks = Chunks::new(cap);
        chunks.write(&first);
        let saved = chunks.save();
        assert!(saved.open.len() <= SAVED_OPEN_BYTES);
        assert_eq!(saved.seen, first.len() as u64);
        let mut again = Chunks::resume(cap, &saved);
        again.write(&second);
        let content = again.finish();
        let mut all = first.clone();
        all.extend_from_slice(&second);
        assert_eq!(contents(&content), all);
        // The saved chunks are shared, not compressed again.
        assert!(Arc::ptr_eq(&content.sealed[0].gz, &saved.sealed[0].gz));

        // A bundle's smaller budget cuts its copy, not the saved stream.
        let mut again = Chunks::resume(cap, &saved);
        again.write(&second);
        let cut = again.finish_within(100_000);
        assert_eq!(cut.len(), 100_000);
        assert_eq!(contents(&cut), all[all.len() - 100_000..]);
    }
}
