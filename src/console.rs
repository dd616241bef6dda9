//! Windows only: the release binary is a GUI-subsystem program (no console window when the
//! desktop app is double-clicked), so a command typed in `cmd` or PowerShell would print
//! nothing. `attach` joins the console of the parent process when there is one. It owns no
//! other Windows behaviour and must not touch the engine.
//!
//! Output that is already redirected (`mediadex assets --json > out.json`, a pipe) is left
//! alone: attaching would send it to the console instead of the file. The terminal does not
//! wait for a GUI-subsystem program, so its prompt may print before the output; scripts that
//! need ordering redirect the output or use `start /wait`.
//!
//! Must not import: store, http, ops

use windows_sys::Win32::Storage::FileSystem::{FILE_TYPE_DISK, FILE_TYPE_PIPE, GetFileType};
use windows_sys::Win32::System::Console::{
    ATTACH_PARENT_PROCESS, AttachConsole, GetStdHandle, STD_OUTPUT_HANDLE,
};

/// Joins the parent's console unless stdout already goes to a file or a pipe. Without a
/// parent console (a double-click) this does nothing, which is what the desktop mode wants.
#[cfg_attr(debug_assertions, allow(dead_code))]
pub fn attach() {
    // SAFETY: both calls take no pointers; a null or invalid handle only makes
    // GetFileType answer FILE_TYPE_UNKNOWN, and AttachConsole fails harmlessly without a
    // parent console.
    unsafe {
        let out = GetStdHandle(STD_OUTPUT_HANDLE);
        let kind = GetFileType(out);
        if kind == FILE_TYPE_DISK || kind == FILE_TYPE_PIPE {
            return;
        }
        AttachConsole(ATTACH_PARENT_PROCESS);
    }
}
