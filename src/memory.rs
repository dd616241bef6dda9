//! The process's allocator setting: how many malloc arenas glibc may keep (issue 16's peak
//! RSS target, ≤ 64 MiB and flat from 100k to 1M files).
//!
//! glibc gives each thread that allocates under contention an arena of its own, up to eight
//! per core, and an arena keeps the chunks freed into it for reuse instead of giving them back.
//! A first index runs a walker, a rayon reader per core and the SQLite writer, each
//! allocating and freeing a file's worth of buffers and rows per file, so by the end of a
//! million files about 15 MiB of RSS were free chunks held in per-thread arenas (heaptrack's
//! heap peak 37 MiB against 52 MiB of anonymous RSS). `ARENAS` caps them; MALLOC_ARENA_MAX
//! in the environment, which glibc reads itself, wins over it. The figures behind the cap are
//! in docs/performance.md. Elsewhere (musl, macOS, Windows) this does nothing.
//!
//! Owns the allocator's tuning and nothing else.
//!
//! Must not import: store, http, scan, media

/// The arenas a process may have: the main one and one more, shared by every other thread.
/// The threads that allocate most (the readers and the writer) touch the allocator a few times
/// per file, microseconds apart at most, so two arenas cost no measurable contention
/// (docs/performance.md).
pub const ARENAS: i32 = 2;

/// Caps glibc's malloc arenas at `ARENAS`, unless MALLOC_ARENA_MAX says otherwise. Call it
/// first thing in `main`, before any thread starts. Answers whether the cap was set.
pub fn limit_arenas() -> bool {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return false;
    }
    set_arena_max(ARENAS)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(arenas: i32) -> bool {
    // SAFETY: mallopt only changes glibc's allocator parameters; M_ARENA_MAX is one it knows,
    // and it is called before the process starts any thread of its own.
    unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_arenas: i32) -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    #[test]
    fn glibc_takes_the_arena_cap() {
        assert!(super::set_arena_max(super::ARENAS));
    }
}
