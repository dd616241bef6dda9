//! The access token of the HTTP API: generated on first use, kept in `<data dir>/token`
//! readable by its owner only (0600 on Unix), printed by `mediadex token`. Owns that file;
//! must not decide when the token is needed (that is `http::security`).
//!
//! Must not import: store, http, ops

use crate::once_file::Failed;
use std::path::{Path, PathBuf};

pub const TOKEN_FILE: &str = "token";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read the access token {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the access token {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the access token file {0} is empty or damaged; delete it to make a new token")]
    Damaged(String),
}

pub fn path(data_dir: &Path) -> PathBuf {
    data_dir.join(TOKEN_FILE)
}

/// The token of this data dir, made now if there is none yet.
pub fn load_or_create(data_dir: &Path) -> Result<String, TokenError> {
    let file = path(data_dir);
    let at = || file.display().to_string();
    let token = crate::once_file::load_or_create(&file, true, || {
        format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        )
    })
    .map_err(|e| match e {
        Failed::Read(source) => TokenError::Read { path: at(), source },
        Failed::Write(source) => TokenError::Write { path: at(), source },
    })?;
    if token.len() < 32 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(TokenError::Damaged(at()));
    }
    tighten(&file);
    Ok(token)
}

/// A token file someone made group- or world-readable is put back to 0600.
fn tighten(file: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(file)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(path = %file.display(), "the token file was readable by others; made it 0600");
            let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600));
        }
    }
    #[cfg(not(unix))]
    let _ = file;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_made_once_owner_only_and_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path()).expect("create");
        assert_eq!(first.len(), 64);
        assert_eq!(load_or_create(dir.path()).expect("read"), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path(dir.path()))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(path(dir.path()), "short").expect("damage");
        assert!(matches!(
            load_or_create(dir.path()),
            Err(TokenError::Damaged(_))
        ));
    }
}
