//! The discovery contract: the one interface between the reporter and the
//! rest of the installer (`docs/discovery-contract.md`; keep the two in step).
//! This module owns where it lives and what it is made of — the files of the
//! contract directory with their modes and formats, and the environment names
//! of the upstream unit — and every way the reporter touches it: reading it
//! ([`Dir`]), writing it into an Ignition fragment ([`entries`], for
//! `ignition`) and removing it in a safe order ([`files::REMOVAL_ORDER`], for
//! `cleanup`). Which value wins when several places set one is `config`'s.

pub(crate) mod credentials;
mod layout;
pub(crate) mod proxy_env;
pub(crate) mod tunables;

use std::path::{Path, PathBuf};

use uuid::Uuid;

use crate::bounded_read::{self, Kind, ReadError};
use crate::rootfs::under_root;

pub use credentials::{parse_credentials, Credentials};
pub use layout::{env, files, DEFAULT_DIR, MODE_DIR, MODE_PUBLIC, MODE_SECRET};
pub(crate) use proxy_env::ProxyEnv;
pub use tunables::{check_tunables, Tunables};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ContractError {
    /// The file could not be read, or what stands there is no contract file
    /// (a FIFO, a device, over its size cap); the message names the path.
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error("invalid {what} {path}: {reason}")]
    Invalid {
        what: &'static str,
        path: PathBuf,
        reason: String,
    },
}

/// The discovery contract directory of one host.
#[derive(Debug, Clone)]
pub(crate) struct Dir {
    dir: PathBuf,
}

impl Dir {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
        }
    }

    /// `dir` when given (a flag), else the default place under `root`.
    pub(crate) fn at(root: &Path, dir: Option<&Path>) -> Self {
        Self::new(&dir.map_or_else(|| under_root(root, DEFAULT_DIR), Path::to_owned))
    }

    pub(crate) fn root(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    pub(crate) fn display(&self, file: &str) -> String {
        self.path(file).display().to_string()
    }

    /// A one-value file, trimmed; absent or empty means "not set here".
    pub(crate) fn read(&self, file: &str) -> Result<Option<String>, ContractError> {
        let text = bounded_read::read_text(&self.path(file), Kind::Value)?;
        Ok(text
            .map(|t| t.text.trim().to_owned())
            .filter(|t| !t.is_empty()))
    }

    /// `reporter.conf`, or no tunables when it is absent.
    pub(crate) fn tunables(&self) -> Result<Tunables, ContractError> {
        let path = self.path(files::TUNABLES);
        let Some(text) = bounded_read::read_text(&path, Kind::Settings)? else {
            return Ok(Tunables::default());
        };
        tunables::parse(&text.text).map_err(|reason| ContractError::Invalid {
            what: "tunables file",
            path,
            reason,
        })
    }

    /// `proxy.env`, or no proxy when it is absent; warns (into `warnings`)
    /// when its mode lets others read it.
    pub(crate) fn proxy_env(&self, warnings: &mut Vec<String>) -> Result<ProxyEnv, ContractError> {
        let path = self.path(files::PROXY);
        match read_secret_file(&path, Kind::Settings, warnings)? {
            Some(text) => proxy_env::parse(&text).map_err(|reason| ContractError::Invalid {
                what: "proxy file",
                path,
                reason,
            }),
            None => Ok(ProxyEnv::default()),
        }
    }
}

/// Reads a secret file, warning when the mode of the inode read lets anyone
/// but the owner read it.
pub(crate) fn read_secret_file(
    path: &Path,
    kind: Kind,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, ContractError> {
    let Some(read) = bounded_read::read_text(path, kind)? else {
        return Ok(None);
    };
    let mode = read.mode & 0o777;
    if mode & 0o077 != 0 {
        warnings.push(format!(
            "SECRET FILE {} HAS MODE {mode:04o}: other users can read the agent token; it must be 0600",
            path.display()
        ));
    }
    Ok(Some(read.text))
}

/// What one host's contract holds, for writing it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Values<'a> {
    /// The pull secret JSON or a bare agent token, as given (trimmed).
    pub(crate) pull_secret: Option<&'a str>,
    /// `proxy.env` text, already checked.
    pub(crate) proxy_env: Option<&'a str>,
    pub(crate) service_url: &'a str,
    pub(crate) infra_env_id: Uuid,
    pub(crate) host_id: Uuid,
    pub(crate) cluster_id: Option<Uuid>,
    /// PEM text of the CA that signs the service's certificate.
    pub(crate) ca_cert: Option<&'a str>,
}

/// One file of the contract as it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: &'static str,
    /// One value (or one document) ending in a newline.
    pub(crate) text: String,
    pub(crate) mode: u32,
}

/// The files of a contract, secrets first (a reader of a fragment sees
/// their mode right away).
pub(crate) fn entries(values: &Values<'_>) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut push = |name: &'static str, value: &str, mode: u32| {
        out.push(Entry {
            name,
            text: format!("{}\n", value.trim_end()),
            mode,
        });
    };
    if let Some(secret) = values.pull_secret {
        push(files::PULL_SECRET, secret, MODE_SECRET);
    }
    if let Some(proxy) = values.proxy_env {
        push(files::PROXY, proxy, MODE_SECRET);
    }
    push(files::SERVICE_URL, values.service_url, MODE_PUBLIC);
    push(
        files::INFRA_ENV_ID,
        &values.infra_env_id.to_string(),
        MODE_PUBLIC,
    );
    push(files::HOST_ID, &values.host_id.to_string(), MODE_PUBLIC);
    if let Some(cluster_id) = values.cluster_id {
        push(files::CLUSTER_ID, &cluster_id.to_string(), MODE_PUBLIC);
    }
    if let Some(pem) = values.ca_cert {
        push(files::CA_CERT, pem, MODE_PUBLIC);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn host_id_is_removed_last_and_every_file_is_removed() {
        assert_eq!(files::REMOVAL_ORDER.last(), Some(&files::HOST_ID));
        assert_eq!(files::REMOVAL_ORDER[0], files::PULL_SECRET);
        let values = Values {
            pull_secret: Some("tok"),
            proxy_env: Some("HTTPS_PROXY=http://p:3128"),
            service_url: "https://svc",
            infra_env_id: Uuid::nil(),
            host_id: Uuid::nil(),
            cluster_id: Some(Uuid::nil()),
            ca_cert: Some("PEM"),
        };
        let written = entries(&values);
        for entry in &written {
            assert!(files::REMOVAL_ORDER.contains(&entry.name), "{}", entry.name);
            assert!(entry.text.ends_with('\n'));
        }
        let secrets: Vec<_> = written
            .iter()
            .take_while(|e| e.mode == MODE_SECRET)
            .map(|e| e.name)
            .collect();
        assert_eq!(secrets, [files::PULL_SECRET, files::PROXY]);
        assert!(written[2..].iter().all(|e| e.mode == MODE_PUBLIC));
    }

    #[test]
    fn an_absent_or_empty_file_is_not_set_and_values_are_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let contract = Dir::new(dir.path());
        assert_eq!(contract.read(files::HOST_ID).unwrap(), None);
        fs::write(dir.path().join(files::HOST_ID), " \n").unwrap();
        assert_eq!(contract.read(files::HOST_ID).unwrap(), None);
        fs::write(dir.path().join(files::HOST_ID), " abc\n").unwrap();
        assert_eq!(
            contract.read(files::HOST_ID).unwrap().as_deref(),
            Some("abc")
        );
        assert!(contract.tunables().unwrap().entries.is_empty());
        assert_eq!(
            Dir::at(Path::new("/sysroot"), None).root(),
            Path::new("/sysroot/etc/assisted-boot-reporter")
        );
    }
}
