//! Shipping a bundle: the tar.gz is produced on a blocking thread while it is
//! uploaded, through a small bounded channel, so neither memory nor disk ever
//! holds the whole archive, and a slow network slows the collectors down
//! instead of piling data up.
//!
//! A streamed body cannot be replayed, so a retry collects a fresh bundle;
//! that is what the service wants anyway (each upload replaces the previous
//! one and must be complete).

use std::io::{self, Write};
use std::time::Duration;

use reqwest::multipart::{Form, Part};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::api::{ApiError, Client, UploadTarget};
use crate::assemble::write_bundle;
use crate::bundle::{BundleLimits, BundleMeta, Manifest};
use crate::collect::CollectContext;

/// Chunks in flight between the producer and the socket: with 64 KiB chunks
/// this bounds the pipe at 256 KiB.
const CHANNEL_DEPTH: usize = 4;
const CHUNK_BYTES: usize = 64 << 10;

#[derive(Debug)]
pub(crate) struct Uploaded {
    pub(crate) manifest: Manifest,
    pub(crate) compressed_bytes: u64,
    pub(crate) elapsed: Duration,
}

enum Chunk {
    Data(Vec<u8>),
    /// Sent only after the gzip trailer: without it the body stream ends in
    /// an error, so a producer that dies half-way can never pass a truncated
    /// archive off as complete.
    End,
}

#[derive(Debug, Clone)]
pub(crate) struct Uploader {
    pub(crate) client: Client,
    pub(crate) target: UploadTarget,
    pub(crate) collect: CollectContext,
    pub(crate) limits: BundleLimits,
}

impl Uploader {
    /// Collects and uploads one complete bundle, retrying transient failures
    /// with a fresh bundle each time.
    pub(crate) async fn upload(
        &self,
        meta: &BundleMeta,
        deadline: Option<Instant>,
    ) -> Result<Uploaded, ApiError> {
        self.client
            .retry_policy()
            .run(deadline, |_| self.attempt(meta.clone()))
            .await
    }

    async fn attempt(&self, meta: BundleMeta) -> Result<Uploaded, ApiError> {
        let started = std::time::Instant::now();
        let (tx, rx) = mpsc::channel::<Chunk>(CHANNEL_DEPTH);
        let collect = self.collect.clone();
        let limits = self.limits;
        let producer = tokio::task::spawn_blocking(move || -> anyhow::Result<(Manifest, u64)> {
            let writer = ChannelWriter::new(tx);
            let (manifest, writer) = write_bundle(writer, &collect, &meta, &limits)?;
            let bytes = writer.finish()?;
            Ok((manifest, bytes))
        });

        let body = futures_util::stream::unfold(Some(rx), |state| async move {
            let mut rx = state?;
            match rx.recv().await {
                Some(Chunk::Data(bytes)) => Some((Ok(bytes), Some(rx))),
                Some(Chunk::End) => None,
                None => Some((
                    Err(io::Error::other(
                        "bundle producer stopped before the archive was complete",
                    )),
                    None,
                )),
            }
        });
        let body = reqwest::Body::wrap_stream(body);
        let file_name = format!("{}.tar.gz", self.target.logs_type);
        let part = Part::stream(body)
            .file_name(file_name)
            .mime_str("application/gzip")
            .expect("static MIME type is valid");
        let result = self
            .client
            .upload_logs_once(&self.target, Form::new().part("upfile", part))
            .await;

        // Wait for the producer either way so two bundles never run at once;
        // after a failed upload it stops at its next write (the pipe is closed).
        let production = producer.await;
        result?;
        match production {
            Ok(Ok((manifest, compressed_bytes))) => Ok(Uploaded {
                manifest,
                compressed_bytes,
                elapsed: started.elapsed(),
            }),
            // The service said 204 to a body that ended with End, so the
            // producer finished; anything else is a bug worth seeing.
            Ok(Err(err)) => Err(ApiError::Decode {
                operation: "building the bundle".into(),
                detail: format!("{err:#}"),
            }),
            Err(join) => Err(ApiError::Decode {
                operation: "building the bundle".into(),
                detail: join.to_string(),
            }),
        }
    }
}

/// `Write` end of the pipe, used on the blocking producer thread.
struct ChannelWriter {
    tx: mpsc::Sender<Chunk>,
    buf: Vec<u8>,
    sent: u64,
}

impl ChannelWriter {
    fn new(tx: mpsc::Sender<Chunk>) -> Self {
        Self {
            tx,
            buf: Vec::with_capacity(CHUNK_BYTES),
            sent: 0,
        }
    }

    fn send(&mut self, chunk: Chunk) -> io::Result<()> {
        self.tx
            .blocking_send(chunk)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "upload stopped"))
    }

    fn finish(mut self) -> io::Result<u64> {
        self.flush()?;
        self.send(Chunk::End)?;
        Ok(self.sent)
    }
}

impl Write for ChannelWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.sent += chunk.len() as u64;
        self.send(Chunk::Data(chunk))
    }
}
