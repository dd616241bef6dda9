//! One engine per data dir for the desktop app: the running instance holds an exclusive
//! lock on `instance.lock` for its whole life (the OS drops it when the process dies, so a
//! crash leaves nothing stale to clean up) and publishes where it listens in
//! `instance.json` (pid, url, owner). A second launch fails to take the lock, reads the file,
//! checks the instance answers on its url, and only opens the browser.
//! Owns those two files; knows nothing of HTTP beyond one `GET /healthz`.
//!
//! Must not import: store, http, ops

use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const LOCK_FILE: &str = "instance.lock";
const INFO_FILE: &str = "instance.json";

/// What a running instance tells later launches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    pub pid: u32,
    /// Where its web page is, e.g. `http://127.0.0.1:8765/`.
    pub url: String,
    /// Its lease owner (`host:pid:nonce`): `/healthz` must answer with the same one, so a
    /// port reused by another program is not mistaken for it.
    pub owner: String,
}

#[derive(Debug, thiserror::Error)]
pub enum InstanceError {
    #[error("cannot use the instance file in {dir}: {source}")]
    Io {
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

/// Held by the running instance; dropping it releases the lock and removes the info file.
pub struct Claim {
    _lock: File,
    info: PathBuf,
}

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.info);
    }
}

/// Either this process is now the instance, or another one is.
pub enum Launch {
    First(Claim),
    Running(Option<Instance>),
}

/// Tries to become the data dir's instance.
pub fn claim(data_dir: &Path) -> Result<Launch, InstanceError> {
    let io = |source| InstanceError::Io {
        dir: data_dir.display().to_string(),
        source,
    };
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join(LOCK_FILE))
        .map_err(io)?;
    match lock.try_lock() {
        Ok(()) => Ok(Launch::First(Claim {
            _lock: lock,
            info: data_dir.join(INFO_FILE),
        })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(Launch::Running(read(data_dir))),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

impl Claim {
    /// Publishes where this instance listens (atomically: a reader never sees half a file).
    pub fn publish(&self, instance: &Instance) -> std::io::Result<()> {
        let tmp = self.info.with_extension("json.tmp");
        let body = serde_json::to_vec_pretty(instance).map_err(std::io::Error::other)?;
        let mut file = File::create(&tmp)?;
        file.write_all(&body)?;
        file.sync_all()?;
        std::fs::rename(&tmp, &self.info)
    }
}

/// The published instance, if the file is there and readable.
pub fn read(data_dir: &Path) -> Option<Instance> {
    let body = std::fs::read(data_dir.join(INFO_FILE)).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Waits (up to `patience`) for the instance holding the lock to publish itself and answer
/// on its url; `None` if it never does (it may be starting up very slowly, or stuck).
pub fn wait_live(data_dir: &Path, patience: Duration) -> Option<Instance> {
    let start = Instant::now();
    loop {
        if let Some(instance) = read(data_dir).filter(is_live) {
            return Some(instance);
        }
        if start.elapsed() >= patience {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// True when `GET /healthz` on the instance's url answers 200 and names its owner.
pub fn is_live(instance: &Instance) -> bool {
    let Some((addr, host)) = address(&instance.url) else {
        return false;
    };
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    reply.starts_with("HTTP/1.1 200") && reply.contains(&instance.owner)
}

/// `(socket address, host header)` of an `http://host:port/…` url.
fn address(url: &str) -> Option<(SocketAddr, String)> {
    let rest = url.strip_prefix("http://")?;
    let host = rest.split('/').next()?;
    let addr = host.to_socket_addrs().ok()?.next()?;
    Some((addr, host.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_claim_sees_the_first_until_it_ends() {
        let dir = tempfile::tempdir().expect("tempdir");
        let Launch::First(claim1) = claim(dir.path()).expect("claim") else {
            panic!("the first launch must get the claim");
        };
        let me = Instance {
            pid: std::process::id(),
            url: "http://127.0.0.1:1/".into(),
            owner: "host:1:abc".into(),
        };
        claim1.publish(&me).expect("publish");
        match claim(dir.path()).expect("claim") {
            Launch::Running(Some(found)) => assert_eq!(found, me),
            _ => panic!("the second launch must find the first"),
        }
        drop(claim1);
        assert!(
            read(dir.path()).is_none(),
            "the info file goes with the instance"
        );
        assert!(matches!(
            claim(dir.path()).expect("claim"),
            Launch::First(_)
        ));
    }

    #[test]
    fn a_port_that_does_not_answer_is_not_live() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let gone = Instance {
            pid: 1,
            url: format!("http://127.0.0.1:{port}/"),
            owner: "x".into(),
        };
        assert!(!is_live(&gone));
        assert!(address("ftp://x").is_none());
    }
}
