//! The driver's last word: when the process aborts (a stack overflow, an allocation the
//! system refused), the input that was running is written out before it dies, with
//! async-signal-safe calls only (mkdir, open, write). Other deaths (a plain SIGSEGV) are
//! not caught: the run still fails, and FUZZ_SEED with FUZZ_TARGETS replays it.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

static INPUT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static LEN: AtomicUsize = AtomicUsize::new(0);
static DIR: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());
static FILE: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

/// Where an abort during a target's inputs saves the one running, per seed (by its type).
pub struct Places {
    dir: CString,
    files: Vec<CString>,
}

impl Places {
    pub fn new(dir: &Path, kinds: impl Iterator<Item = String>) -> Places {
        let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).unwrap_or_default();
        let files = kinds
            .map(|k| c(&dir.join(format!("{k}-aborted.bin"))))
            .collect();
        // The handler makes the target's folder, not its parents.
        if let Some(parent) = dir.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        Places { dir: c(dir), files }
    }
}

pub fn install() {
    // SAFETY: the handler only reads atomics and calls async-signal-safe functions. It runs
    // on the thread's alternate signal stack (Rust gives every thread one): after a stack
    // overflow the thread's own stack has no room left.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_abort as *const () as usize;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigaction(libc::SIGABRT, &action, std::ptr::null_mut());
    }
}

/// `input` from seed `pick` runs now; `places` and `input` outlive the run.
pub fn running(places: &Places, pick: usize, input: &[u8]) {
    DIR.store(places.dir.as_ptr().cast_mut(), Ordering::SeqCst);
    FILE.store(places.files[pick].as_ptr().cast_mut(), Ordering::SeqCst);
    LEN.store(input.len(), Ordering::SeqCst);
    INPUT.store(input.as_ptr().cast_mut(), Ordering::SeqCst);
}

pub fn idle() {
    INPUT.store(std::ptr::null_mut(), Ordering::SeqCst);
}

extern "C" fn on_abort(_: libc::c_int) {
    let input = INPUT.load(Ordering::SeqCst);
    let (dir, file) = (DIR.load(Ordering::SeqCst), FILE.load(Ordering::SeqCst));
    // SAFETY: the pointers were stored from live CStrings and the running input, which
    // stay alive while the input runs; only async-signal-safe calls are made.
    unsafe {
        if !input.is_null() && !file.is_null() {
            libc::mkdir(dir, 0o755);
            let fd = libc::open(file, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o644);
            if fd >= 0 {
                write_all(fd, input, LEN.load(Ordering::SeqCst));
                libc::close(fd);
                let say = b"fuzz: ABORTED; the running input is saved as ";
                write_all(2, say.as_ptr(), say.len());
                write_all(2, file.cast(), libc::strlen(file));
                write_all(2, b"\n".as_ptr(), 1);
            }
        }
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
        libc::raise(libc::SIGABRT);
    }
}

unsafe fn write_all(fd: libc::c_int, mut at: *const u8, mut left: usize) {
    while left > 0 {
        // SAFETY: `at..at + left` is inside the buffer the caller passed.
        let n = unsafe { libc::write(fd, at.cast(), left) };
        if n <= 0 {
            return;
        }
        // SAFETY: n <= left.
        at = unsafe { at.add(n as usize) };
        left -= n as usize;
    }
}
