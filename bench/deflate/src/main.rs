//! CPU cost and output size of the agent's compression with one deflate
//! implementation (chosen by cargo feature): the input cut into pieces of
//! about 1 MiB at line ends, each sealed as an independent gzip member from
//! a whole buffer, as `collect::chunks::Sealer` does.
//!
//!   abr-deflate-bench FILE LEVEL...
//!
//! Prints one JSON object per level: backend, level, input and output bytes
//! (gzip members with their headers and trailers), CPU seconds of this
//! thread (from /proc/thread-self/schedstat, in nanoseconds) and wall
//! seconds. The input is read into memory first so that only compression is
//! measured.

use std::time::Instant;

#[cfg(feature = "libdeflate")]
const BACKEND: &str = "libdeflate";
#[cfg(all(feature = "zlib-ng", not(feature = "libdeflate")))]
const BACKEND: &str = "zlib-ng";
#[cfg(all(feature = "zlib-rs", not(any(feature = "zlib-ng", feature = "libdeflate"))))]
const BACKEND: &str = "zlib-rs";
#[cfg(not(any(feature = "zlib-rs", feature = "zlib-ng", feature = "libdeflate")))]
const BACKEND: &str = "miniz_oxide";

/// Content per gzip member: `collect::chunks::CHUNK_BYTES`.
const CHUNK_BYTES: usize = 1 << 20;

/// One compressor, reused for every member, as the agent's sealer is.
#[cfg(feature = "libdeflate")]
struct Sealer(libdeflater::Compressor, Vec<u8>);

#[cfg(feature = "libdeflate")]
impl Sealer {
    fn new(level: u32) -> Self {
        let level = libdeflater::CompressionLvl::new(level as i32).expect("level 0-12");
        Self(libdeflater::Compressor::new(level), Vec::new())
    }

    fn seal(&mut self, data: &[u8]) -> usize {
        let bound = self.0.gzip_compress_bound(data.len());
        self.1.resize(bound, 0);
        self.0.gzip_compress(data, &mut self.1).expect("bound is enough")
    }
}

#[cfg(not(feature = "libdeflate"))]
struct Sealer(flate2::Compress, Vec<u8>);

#[cfg(not(feature = "libdeflate"))]
impl Sealer {
    fn new(level: u32) -> Self {
        Self(flate2::Compress::new(flate2::Compression::new(level), false), Vec::new())
    }

    fn seal(&mut self, data: &[u8]) -> usize {
        self.0.reset();
        self.1.clear();
        self.1.reserve(data.len() + data.len() / 1000 + 64);
        let mut input = data;
        loop {
            let before = self.0.total_in();
            let status = self
                .0
                .compress_vec(input, &mut self.1, flate2::FlushCompress::Finish)
                .expect("deflate in memory");
            input = &input[(self.0.total_in() - before) as usize..];
            if status == flate2::Status::StreamEnd {
                break;
            }
            self.1.reserve(64 << 10);
        }
        let mut crc = flate2::Crc::new();
        crc.update(data);
        std::hint::black_box(crc.sum());
        // gzip header (10) and trailer (8) around the raw deflate stream.
        self.1.len() + 18
    }
}

/// CPU time of the calling thread, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The pieces the agent seals: up to the last line end before 1 MiB.
fn pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = data;
    while rest.len() > CHUNK_BYTES {
        let cut = rest[..CHUNK_BYTES]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(CHUNK_BYTES, |nl| nl + 1);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out.push(rest);
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: abr-deflate-bench FILE LEVEL...");
        std::process::exit(2);
    };
    let data = match std::fs::read(&path) {
        Ok(data) => data,
        Err(err) => {
            eprintln!("reading {path}: {err}");
            std::process::exit(1);
        }
    };
    let pieces = pieces(&data);
    for level in args {
        let Ok(level) = level.parse::<u32>() else {
            eprintln!("not a level: {level}");
            std::process::exit(2);
        };
        let cpu = thread_cpu_ns();
        let wall = Instant::now();
        let mut sealer = Sealer::new(level);
        let out: usize = pieces.iter().map(|p| sealer.seal(p)).sum();
        // Nanoseconds of one run fit f64's mantissa many times over.
        #[allow(clippy::cast_precision_loss)]
        let cpu_s = (thread_cpu_ns() - cpu) as f64 / 1e9;
        println!(
            "{{\"backend\":\"{BACKEND}\",\"level\":{level},\"in\":{},\"out\":{out},\"cpu_s\":{cpu_s:.4},\"wall_s\":{:.4}}}",
            data.len(),
            wall.elapsed().as_secs_f64()
        );
    }
}
