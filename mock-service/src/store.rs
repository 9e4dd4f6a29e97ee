//! Uploaded log bundles on disk: where each one lives, how an upload becomes
//! visible (temp file, then rename, so a reader or a failed upload never sees
//! a half-written bundle), and what we learn about its contents.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;
use uuid::Uuid;

use crate::rfc3339::ser_time;

/// Key of a stored bundle: one per (cluster, host, logs type). Controller
/// logs are uploaded without a host and use `None`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BundleKey {
    pub cluster_id: Uuid,
    pub host_id: Option<Uuid>,
    pub logs_type: String,
}

/// Real assisted-service limit on an uploaded logs file (swagger `maxLength`).
pub const MAX_UPLOAD_BYTES: u64 = 262_144_000;

/// Member names kept per bundle; a runaway archive should not bloat the state.
const MAX_MEMBERS: usize = 10_000;

/// Most bytes an uploaded bundle may inflate to before it is refused
/// (`valid: false`) and reading stops: four times the upload limit, far
/// above any agent bundle (200 MiB of content at most), far below what a
/// gzip bomb would cost.
pub const MAX_UNCOMPRESSED_BYTES: u64 = 1 << 30;

// The bundle format's bounded tar.gz reader: the mock reads bundles exactly
// as `inspect` does, without depending on the agent crate.
pub(crate) use bundle_format::reader as bundle_reader;

#[derive(Clone, Debug, Serialize)]
pub struct BundleMeta {
    pub size: u64,
    #[serde(serialize_with = "ser_time")]
    pub uploaded_at: SystemTime,
    pub uploads: u64,
    /// The real service stores whatever it gets; we only record whether it
    /// is a readable gzip tar so tests can assert on the agent's output.
    pub valid: bool,
    pub members: Vec<String>,
    pub path: PathBuf,
}

pub fn bundles_root(data_dir: &Path) -> PathBuf {
    data_dir.join("bundles")
}

/// Where uploads stream before their parameters are checked (upstream
/// reads the whole body first) and downloads are assembled. Inside the data
/// dir, so a commit is a rename on one file system.
pub fn incoming_path(data_dir: &Path) -> PathBuf {
    data_dir.join("incoming").join("upload")
}

pub fn bundle_path(data_dir: &Path, key: &BundleKey) -> PathBuf {
    let host = key
        .host_id
        .map_or_else(|| "cluster".to_owned(), |h| h.to_string());
    bundles_root(data_dir)
        .join(key.cluster_id.to_string())
        .join(host)
        .join(format!("{}.tar.gz", key.logs_type))
}

/// A file being uploaded. Dropping it without `commit` deletes it, which
/// covers both refused uploads and handlers cancelled by a vanished client.
pub struct TempUpload {
    path: PathBuf,
    committed: bool,
}

impl TempUpload {
    /// Creates the temp file beside the final location so the rename stays
    /// on one file system and is atomic.
    pub async fn create(final_path: &Path) -> std::io::Result<(TempUpload, tokio::fs::File)> {
        let dir = final_path.parent().unwrap_or_else(|| Path::new("."));
        tokio::fs::create_dir_all(dir).await?;
        let name = final_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let path = dir.join(format!(".{name}.{}.part", Uuid::new_v4()));
        let file = tokio::fs::File::create(&path).await?;
        Ok((
            TempUpload {
                path,
                committed: false,
            },
            file,
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Atomically replaces `final_path` with the upload.
    pub fn commit(mut self, final_path: &Path) -> std::io::Result<()> {
        if let Some(dir) = final_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::rename(&self.path, final_path)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for TempUpload {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A member of a tar the service assembles for a download.
pub enum TarMember {
    File(PathBuf),
    /// Content the service writes itself (`cluster/metadata.json`).
    Bytes(Vec<u8>),
    /// A tar of its own (a host's logs inside the whole-cluster tar).
    Tar(Vec<(String, TarMember)>),
}

/// Writes an uncompressed tar of `members` to `out`, as upstream's
/// `TarAwsFiles` does; nested tars are built beside `out` first.
pub fn write_tar(out: &Path, members: &[(String, TarMember)]) -> std::io::Result<()> {
    let mut builder = tar::Builder::new(std::io::BufWriter::new(std::fs::File::create(out)?));
    builder.mode(tar::HeaderMode::Deterministic);
    for (i, (name, member)) in members.iter().enumerate() {
        match member {
            TarMember::File(path) => {
                let mut f = std::fs::File::open(path)?;
                builder.append_file(name, &mut f)?;
            }
            TarMember::Bytes(data) => {
                let mut header = tar::Header::new_gnu();
                header.set_size(data.len() as u64);
                header.set_mode(0o644);
                header.set_cksum();
                builder.append_data(&mut header, name, data.as_slice())?;
            }
            TarMember::Tar(inner) => {
                let nested = out.with_extension(format!("{i}.tar"));
                let built = write_tar(&nested, inner).and_then(|()| {
                    let mut f = std::fs::File::open(&nested)?;
                    builder.append_file(name, &mut f)
                });
                let _ = std::fs::remove_file(&nested);
                built?;
            }
        }
    }
    builder
        .into_inner()?
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    Ok(())
}

/// Lists the members of a gzip tar; `(false, names read so far)` if it is
/// not one, or if it is refused by the bounded reader (over
/// [`MAX_UNCOMPRESSED_BYTES`] inflated, a name over 4 KiB).
pub fn inspect(path: &Path) -> (bool, Vec<String>) {
    inspect_capped(path, MAX_UNCOMPRESSED_BYTES)
}

fn inspect_capped(path: &Path, max_uncompressed: u64) -> (bool, Vec<String>) {
    let Ok(file) = std::fs::File::open(path) else {
        return (false, Vec::new());
    };
    let mut members = Vec::new();
    let read = bundle_reader::read_members(file, max_uncompressed, |member| {
        if members.len() < MAX_MEMBERS {
            members.push(member.name);
        }
        // Reading each member through checks the data is complete, not just
        // the headers: a truncated archive must count as invalid.
        std::io::copy(member.data, &mut std::io::sink())?;
        Ok(bundle_reader::Next::Continue)
    });
    if let Err(err) = read {
        tracing::info!("upload {} is not a valid bundle: {err}", path.display());
        return (false, members);
    }
    (true, members)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
        let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(enc);
        for (name, data) in files {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn inspect_tells_valid_from_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good");
        let bytes = tar_gz(&[("journal.log", b"hello"), ("ip-a.txt", b"lo")]);
        std::fs::write(&good, &bytes).unwrap();
        assert_eq!(
            inspect(&good),
            (true, vec!["journal.log".to_owned(), "ip-a.txt".to_owned()])
        );
        let truncated = dir.path().join("truncated");
        std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
        assert!(!inspect(&truncated).0);
        let text = dir.path().join("text");
        std::fs::write(&text, b"not an archive").unwrap();
        assert!(!inspect(&text).0);
    }

    #[test]
    fn bounded_reading_refuses_bombs_and_long_names() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        // 32 MiB of zeros: a few KiB on disk, refused past a 4 MiB cap.
        let bomb = dir.path().join("bomb");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&bomb).unwrap(),
            flate2::Compression::fast(),
        );
        let mut h = tar::Header::new_gnu();
        h.set_path("host_boot/zeros").unwrap();
        h.set_size(32 << 20);
        h.set_mode(0o644);
        h.set_cksum();
        enc.write_all(h.as_bytes()).unwrap();
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..33 {
            enc.write_all(&zeros).unwrap();
        }
        enc.finish().unwrap();
        assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
        assert_eq!(
            inspect_capped(&bomb, 4 << 20),
            (false, vec!["host_boot/zeros".to_owned()])
        );
        assert!(inspect_capped(&bomb, 64 << 20).0);

        // A GNU long name of 1 MiB is refused from its header.
        let long = dir.path().join("long");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&long).unwrap(),
            flate2::Compression::fast(),
        );
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..13].copy_from_slice(b"././@LongLink");
        h.set_size(1 << 20);
        h.set_mode(0o644);
        h.set_entry_type(tar::EntryType::GNULongName);
        h.set_cksum();
        enc.write_all(h.as_bytes()).unwrap();
        enc.write_all(&vec![b'a'; 1 << 20]).unwrap();
        enc.write_all(&[0; 1024]).unwrap();
        enc.finish().unwrap();
        assert_eq!(inspect(&long), (false, Vec::new()));
    }

    #[tokio::test]
    async fn uncommitted_temp_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let final_path = dir.path().join("x/host.tar.gz");
        let (tmp, _f) = TempUpload::create(&final_path).await.unwrap();
        let p = tmp.path().to_owned();
        assert!(p.exists());
        drop(tmp);
        assert!(!p.exists());
        assert!(!final_path.exists());
    }
}
