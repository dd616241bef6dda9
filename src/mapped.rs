//! Hashing (and parsing) a large file through a memory map without dying when the file
//! shrinks, or its disk or network share fails, under the map.
//!
//! A read of a mapped page that no longer exists (the file was truncated while it was being
//! hashed) or cannot be read (an I/O error on a failing disk, an NFS/SMB share that went
//! away) is not an error code: the kernel sends SIGBUS, and by default that kills the whole
//! process, the service and every scan and job with it. `read()` would turn both into errors,
//! but it copies every byte and hashes a lone large file on one core (a 256 MiB file, warm,
//! on 2 cores: 0.20 s read against 0.06 s mapped).
//!
//! So on Linux the map is registered in a small lock-free table while it is hashed, and a
//! SIGBUS handler (installed once, chaining to whatever handler was there before) answers a
//! fault inside a registered map by mapping zero pages over the rest of it and marking it
//! faulted; the hash then completes over garbage and is thrown away, and the caller gets an
//! `io::Error`. A fault anywhere else goes to the previous handler, so it still ends the
//! process as it would have. Elsewhere, and when the table is full, the file is read instead.
//!
//! Owns the SIGBUS disposition of the process and nothing else; knows nothing of scans.
//!
//! Must not import: store, media, http

use std::fs::File;
use std::io;

/// A blake3 digest.
pub type Digest = [u8; 32];

/// blake3 over the whole of `file` (from its start, whatever its cursor), reading it through
/// a guarded map where this platform has one. An `Err` means the file could not be read to
/// its end (it shrank, or a read failed) and no digest was produced.
pub fn blake3_file(file: &File) -> io::Result<Digest> {
    hash_with(file, || {})
}

/// `blake3_file`, with `after_map` run between mapping the file and hashing it (tests use it
/// to truncate the file under the map deterministically).
fn hash_with(file: &File, after_map: impl FnOnce()) -> io::Result<Digest> {
    #[cfg(target_os = "linux")]
    if let Some(digest) = guarded::with_map(file, after_map, guarded::hash_bytes)? {
        return Ok(digest);
    }
    #[cfg(not(target_os = "linux"))]
    after_map();
    read_and_hash(file)
}

/// `work` over the whole of `file` through a guarded map, without copying it: `Ok(None)`
/// where there is no guard (not Linux, an empty file, the table full), and the caller reads
/// the file instead. An `Err` means the file shrank or failed to read under the map: what
/// `work` computed then came from zero pages and is thrown away.
pub fn with_map<T>(file: &File, work: impl FnOnce(&[u8]) -> T) -> io::Result<Option<T>> {
    #[cfg(target_os = "linux")]
    return guarded::with_map(file, || {}, work);
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, work);
        Ok(None)
    }
}

/// The fallback: plain reads, so a short file or a failed read is an ordinary error.
fn read_and_hash(file: &File) -> io::Result<Digest> {
    use std::io::Seek;
    let mut file = file;
    file.rewind()?;
    Ok(*blake3::Hasher::new()
        .update_reader(file)?
        .finalize()
        .as_bytes())
}

#[cfg(target_os = "linux")]
mod guarded {
    //! The table of maps being hashed and the SIGBUS handler that reads it. Everything the
    //! handler touches is a plain atomic or a raw syscall: it may run on any thread, at any
    //! instruction of the hash.

    use super::Digest;
    use std::fs::File;
    use std::io;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// From this size on the hash is split over rayon's threads. benches/hash.rs on 2 cores
    /// (`file/`, warm): a 16 MiB file 2.91 GiB/s split against 1.79 on one thread, 4 MiB
    /// 2.49 against 1.98 with the other core idle but none when it is busy (load 9: in
    /// memory, 4 MiB 2.55 against 4.38), and a scan keeps both cores busy with files.
    pub(super) const PARALLEL_FROM: u64 = 16 << 20;

    /// Maps hashed at once: one per rayon thread is the most a scan uses; past this the
    /// file is read instead.
    const SLOTS: usize = 64;

    struct Slot {
        taken: AtomicBool,
        /// `[start, end)` of the registered map; both 0 when free.
        start: AtomicUsize,
        end: AtomicUsize,
        faulted: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot {
        taken: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        faulted: AtomicBool::new(false),
    };
    static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    /// The disposition SIGBUS had before ours; `None` if ours could not be installed.
    static PREVIOUS: OnceLock<Option<Previous>> = OnceLock::new();

    #[derive(Clone, Copy)]
    struct Previous(libc::sigaction);
    // SAFETY: a plain C struct of integers and function addresses, written once before the
    // handler that reads it is installed.
    unsafe impl Send for Previous {}
    unsafe impl Sync for Previous {}

    /// `Ok(None)`: no guard available (handler not installed, table full); read instead.
    /// `after_map` runs between mapping and `work` (a test seam).
    pub(super) fn with_map<T>(
        file: &File,
        after_map: impl FnOnce(),
        work: impl FnOnce(&[u8]) -> T,
    ) -> io::Result<Option<T>> {
        if file.metadata()?.len() == 0 || !installed() {
            return Ok(None);
        }
        // SAFETY: the map is only read, by `work`, while it is registered; a fault in it
        // is answered by the handler below instead of killing the process.
        let map = unsafe { memmap2::MmapOptions::new().map(file)? };
        let Some(guard) = Guard::register(&map) else {
            return Ok(None);
        };
        after_map();
        let done = work(&map);
        // Unregistered before the map is dropped: once unmapped, the address range may be
        // reused by another map whose faults are not ours to answer.
        let faulted_while_working = guard.release();
        drop(map);
        if faulted_while_working {
            return Err(faulted());
        }
        Ok(Some(done))
    }

    pub(super) fn hash_bytes(bytes: &[u8]) -> Digest {
        let mut hasher = blake3::Hasher::new();
        if bytes.len() as u64 >= PARALLEL_FROM {
            hasher.update_rayon(bytes);
        } else {
            hasher.update(bytes);
        }
        *hasher.finalize().as_bytes()
    }

    fn faulted() -> io::Error {
        io::Error::other(
            "the file shrank or could not be read while it was being hashed \
             (it is read again on the next scan)",
        )
    }

    /// A registered map; `release` says whether it faulted.
    struct Guard(&'static Slot);

    impl Guard {
        fn register(map: &[u8]) -> Option<Guard> {
            let slot = TABLE.iter().find(|s| {
                s.taken
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })?;
            let start = map.as_ptr() as usize;
            slot.faulted.store(false, Ordering::Relaxed);
            slot.start.store(start, Ordering::Release);
            slot.end.store(start + map.len(), Ordering::Release);
            Some(Guard(slot))
        }

        fn release(self) -> bool {
            let slot = self.0;
            slot.end.store(0, Ordering::Release);
            slot.start.store(0, Ordering::Release);
            let faulted = slot.faulted.swap(false, Ordering::AcqRel);
            slot.taken.store(false, Ordering::Release);
            faulted
        }
    }

    fn installed() -> bool {
        PREVIOUS.get_or_init(install).is_some()
    }

    fn install() -> Option<Previous> {
        // SAFETY: plain libc calls on zeroed, then filled, C structs.
        unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE);
            if page > 0 {
                PAGE.store(page as usize, Ordering::Relaxed);
            }
            let mut ours: libc::sigaction = std::mem::zeroed();
            ours.sa_sigaction = on_sigbus as *const () as usize;
            ours.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut ours.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &ours, &mut previous) != 0 {
                tracing::warn!(
                    error = %io::Error::last_os_error(),
                    "cannot guard mapped reads; large files are read instead"
                );
                return None;
            }
            Some(Previous(previous))
        }
    }

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        for slot in &TABLE {
            let start = slot.start.load(Ordering::Acquire);
            let end = slot.end.load(Ordering::Acquire);
            if start <= addr && addr < end && answer(addr, end) {
                slot.faulted.store(true, Ordering::Release);
                return;
            }
        }
        forward(sig, info, ctx);
    }

    /// Maps zero pages from the faulting page to the end of the map, so the hash runs to its
    /// end without another fault. False if that failed.
    fn answer(addr: usize, end: usize) -> bool {
        let from = addr & !(PAGE.load(Ordering::Relaxed) - 1);
        // SAFETY: [from, end) lies inside a live map registered by `hash`, which is only
        // read; MAP_FIXED replaces those pages of it and nothing else.
        let mapped = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        mapped != libc::MAP_FAILED
    }

    /// A fault that is not ours: what SIGBUS would have done without us.
    fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        let Some(Some(Previous(prev))) = PREVIOUS.get() else {
            return reset(sig);
        };
        let handler = prev.sa_sigaction;
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            return reset(sig);
        }
        // SAFETY: `handler` is the function the previous disposition named, called with the
        // signature its flags declare.
        unsafe {
            if prev.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(handler);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                f(sig);
            }
        }
    }

    /// Back to the default disposition: returning re-runs the faulting instruction, which
    /// faults again and ends the process with SIGBUS, as it would have without us.
    fn reset(sig: libc::c_int) {
        // SAFETY: sigaction is async-signal-safe; the struct is zeroed (SIG_DFL).
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// With every slot taken the map is not used: the caller reads the file instead,
        /// and the slots are free again afterwards.
        #[test]
        fn a_full_table_falls_back_to_reading() {
            let _one_at_a_time = super::super::tests::TABLE_USE.lock();
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("f");
            std::fs::write(&path, vec![7u8; 5 << 20]).expect("write");
            let file = File::open(&path).expect("open");
            let stand_in = [0u8; SLOTS];
            let held: Vec<Guard> = (0..SLOTS)
                .map(|i| Guard::register(&stand_in[i..i + 1]).expect("a free slot"))
                .collect();
            let hash = |file: &File| with_map(file, || {}, hash_bytes);
            assert!(hash(&file).expect("no error").is_none());
            // What the caller then does: read the file, with the same digest.
            assert_eq!(
                super::super::blake3_file(&file).expect("read"),
                *blake3::hash(&[7u8; 5 << 20]).as_bytes()
            );
            let faulted: Vec<bool> = held.into_iter().map(Guard::release).collect();
            assert!(!faulted.contains(&true));
            assert!(hash(&file).expect("hash").is_some());
            assert!(TABLE.iter().all(|s| !s.taken.load(Ordering::Acquire)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(dir: &std::path::Path, name: &str, len: usize) -> (std::path::PathBuf, Vec<u8>) {
        let body: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
        let path = dir.join(name);
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(&body))
            .expect("write");
        (path, body)
    }

    /// Writes a file of `len` bytes and checks `blake3_file` agrees with blake3 over them.
    fn hashes_like_blake3(dir: &std::path::Path, name: &str, len: usize) {
        let (path, body) = file_of(dir, name, len);
        let file = File::open(&path).expect("open");
        assert_eq!(
            blake3_file(&file).expect("hash"),
            *blake3::hash(&body).as_bytes(),
            "{name}"
        );
    }

    fn truncate(path: &std::path::Path, len: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(len))
            .expect("truncate");
    }

    #[test]
    fn an_intact_file_hashes_like_blake3_over_its_bytes() {
        let dir = tempfile::tempdir().expect("tempdir");
        for len in [1usize, 5 << 20, (20 << 20) + 3] {
            hashes_like_blake3(dir.path(), &format!("f{len}"), len);
        }
    }

    /// Held by the tests that need the guard table to themselves: a truncated file only
    /// gives an error through a guarded map, not through the read fallback a full table
    /// falls back to.
    pub(super) static TABLE_USE: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Truncated between map and hash, on one thread (8 MiB) and on rayon (20 MiB): an error,
    /// not a SIGBUS, and the next file hashes correctly.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_truncated_under_its_map_is_an_error_and_the_process_lives_on() {
        let _one_at_a_time = TABLE_USE.lock();
        let dir = tempfile::tempdir().expect("tempdir");
        for len in [8usize << 20, (guarded::PARALLEL_FROM as usize) + (4 << 20)] {
            let (path, _) = file_of(dir.path(), &format!("t{len}"), len);
            let file = File::open(&path).expect("open");
            let err = hash_with(&file, || truncate(&path, 4096))
                .expect_err("a truncated file has no digest");
            assert!(err.to_string().contains("shrank"), "{err}");
            hashes_like_blake3(dir.path(), &format!("n{len}"), len);
        }
    }

    /// Eight threads at once, every other file truncated under its map: each answer is the
    /// right one for its own file (a fault is charged to the map it hit, not a neighbour's).
    #[cfg(target_os = "linux")]
    #[test]
    fn concurrent_maps_each_get_their_own_answer() {
        let _one_at_a_time = TABLE_USE.lock();
        let dir = tempfile::tempdir().expect("tempdir");
        std::thread::scope(|s| {
            for t in 0..8 {
                let dir = dir.path();
                s.spawn(move || {
                    for i in 0..6 {
                        let (path, body) = file_of(dir, &format!("c{t}-{i}"), 5 << 20);
                        let file = File::open(&path).expect("open");
                        let cut = (t + i) % 2 == 0;
                        let got = hash_with(&file, || {
                            if cut {
                                truncate(&path, 8192);
                            }
                        });
                        match (cut, got) {
                            (true, Err(e)) => assert!(e.to_string().contains("shrank")),
                            (false, Ok(d)) => assert_eq!(d, *blake3::hash(&body).as_bytes()),
                            (cut, got) => panic!("thread {t} file {i} cut {cut}: {got:?}"),
                        }
                    }
                });
            }
        });
    }

    /// The child half of the next test: a fault in a map that is not registered.
    #[cfg(target_os = "linux")]
    #[test]
    #[ignore = "run by a_fault_outside_a_guarded_map_still_ends_the_process"]
    fn foreign_fault_child() {
        let Some(dir) = std::env::var_os("MEDIADEX_FOREIGN_FAULT_DIR") else {
            return;
        };
        let dir = std::path::PathBuf::from(dir);
        // Installs the handler.
        hashes_like_blake3(&dir, "guarded", 5 << 20);
        let (path, _) = file_of(&dir, "foreign", 5 << 20);
        let file = File::open(&path).expect("open");
        // SAFETY: the point of the test: read a page the file no longer has.
        let map = unsafe { memmap2::Mmap::map(&file).expect("map") };
        truncate(&path, 0);
        let byte = unsafe { std::ptr::read_volatile(map.as_ptr().add(3 << 20)) };
        println!("read {byte} from a truncated map and lived");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_fault_outside_a_guarded_map_still_ends_the_process() {
        use std::os::unix::process::ExitStatusExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(std::env::current_exe().expect("exe"))
            .args([
                "mapped::tests::foreign_fault_child",
                "--exact",
                "--ignored",
                "--nocapture",
            ])
            .env("MEDIADEX_FOREIGN_FAULT_DIR", dir.path())
            .output()
            .expect("run the child");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGBUS),
            "{:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
