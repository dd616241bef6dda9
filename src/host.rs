//! This host's id: made on first use and kept in `<data dir>/host-id`, so that it stays the
//! same across restarts and upgrades, and two data dirs on one machine (two indexes, or two
//! services on one shared index) are two hosts. Each host says where it sees a library
//! (`library_roots`) and claims only the work of libraries it sees. Owns that file; must not
//! decide what a host may do with its id (that is `store`'s and `ops`'s).
//!
//! Must not import: store, http, ops

use std::io::Write;
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
    match create(&file) {
        Ok(id) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(&file),
        Err(source) => Err(HostError::Write {
            path: file.display().to_string(),
            source,
        }),
    }
}

fn valid(id: &str) -> bool {
    (1..=100).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

fn read(file: &Path) -> Result<String, HostError> {
    let text = std::fs::read_to_string(file).map_err(|source| HostError::Read {
        path: file.display().to_string(),
        source,
    })?;
    let id = text.trim();
    if !valid(id) {
        return Err(HostError::Damaged(file.display().to_string()));
    }
    Ok(id.to_string())
}

/// Fails with `AlreadyExists` when another start made it first; that one is read back.
fn create(file: &Path) -> std::io::Result<String> {
    let suffix = uuid::Uuid::now_v7().simple().to_string();
    let name: String = machine_name()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(60)
        .collect();
    let id = match name.is_empty() {
        true => format!("host-{}", &suffix[suffix.len() - 8..]),
        false => format!("{name}-{}", &suffix[suffix.len() - 8..]),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(file)?;
    f.write_all(format!("{id}\n").as_bytes())?;
    f.sync_all()?;
    Ok(id)
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
