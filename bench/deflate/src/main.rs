//! CPU cost and output size of gzip through flate2, as the agent compresses a
//! bundle: a `GzEncoder` fed 64 KiB writes (`tar::Builder`'s pattern) into a
//! byte-counting sink, at each level asked for, with whichever flate2 backend
//! this build was compiled with (cargo feature).
//!
//!   abr-deflate-bench FILE LEVEL...
//!
//! Prints one JSON object per level: backend, level, input and output bytes,
//! CPU seconds of this thread (from /proc/thread-self/schedstat, in
//! nanoseconds) and wall seconds. The input is read into memory first so
//! that only compression is measured.

use std::io::Write;
use std::time::Instant;

#[cfg(feature = "zlib-ng")]
const BACKEND: &str = "zlib-ng";
#[cfg(all(feature = "zlib-rs", not(feature = "zlib-ng")))]
const BACKEND: &str = "zlib-rs";
#[cfg(not(any(feature = "zlib-rs", feature = "zlib-ng")))]
const BACKEND: &str = "miniz_oxide";

/// Counts what the encoder emits, and drops it.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// CPU time of the calling thread, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
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
    for level in args {
        let Ok(level) = level.parse::<u32>() else {
            eprintln!("not a level: {level}");
            std::process::exit(2);
        };
        let cpu = thread_cpu_ns();
        let wall = Instant::now();
        let mut gz = flate2::write::GzEncoder::new(Counter(0), flate2::Compression::new(level));
        for chunk in data.chunks(64 * 1024) {
            gz.write_all(chunk)
                .expect("writing to a counter cannot fail");
        }
        let out = gz.finish().expect("writing to a counter cannot fail").0;
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
