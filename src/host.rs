//! This host's id: made on first use and kept in `<data dir>/host-id`, so that it stays the
//! same across restarts and upgrades, and two data dirs on one machine (two indexes, or two
//! services on one shared index) are two hosts. Each host says where it sees a library
//! (`library_roots`) and claims only the work of libraries it sees. Owns that file; must not
//! decide what a host may do with its id (that is `store`'s and `ops`'s).
//!
//! Must not import: store, http, ops

use crate::once_file::Failed;
use std::path::{Path, PathBuf};

pub const HOST_FILE: &str = "host-id";

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot read the host id {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the host id {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the host id file {0} is empty or damaged (one line of letters, digits, '.', '-', '_'); \
         put back the id it had, or delete it to make this data dir a new host"
    )]
    Damaged(String),
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(HOST_FILE)
}

/// The host id of this data dir, made now if there is none yet: the machine's name and a
/// random suffix (two data dirs on one machine are two hosts).
pub fn load_or_create(data_dir: &Path) -> Result<String, HostError> {
    let file = path(data_dir);
    let at = || file.display().to_string();
    let id = crate::once_file::load_or_create(&file, false, new_id).map_err(|e| match e {
        Failed::Read(source) => HostError::Read { path: at(), source },
        Failed::Write(source) => HostError::Write { path: at(), source },
    })?;
    if !valid(&id) {
        return Err(HostError::Damaged(at()));
    }
    Ok(id)
}

fn valid(id: &str) -> bool {
    (1..=100).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

fn new_id() -> String {
    let suffix = uuid::Uuid::now_v7().simple().to_string();
    let name: String = machine_name()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(60)
        .collect();
    match name.is_empty() {
        true => format!("host-{}", &suffix[suffix.len() - 8..]),
        false => format!("{name}-{}", &suffix[suffix.len() - 8..]),
    }
}

fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_id_is_made_once_and_read_back_the_same() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path()).expect("create");
        assert!(valid(&first), "{first}");
        assert_eq!(load_or_create(dir.path()).expect("read"), first);
        let other = tempfile::tempdir().expect("tempdir");
        assert_ne!(load_or_create(other.path()).expect("other"), first);
        std::fs::write(path(dir.path()), "two words\n").expect("damage");
        assert!(matches!(
            load_or_create(dir.path()),
            Err(HostError::Damaged(_))
        ));
    }
}
