//! Which filesystem a library root lives on, from `/proc/self/mountinfo`: kernel change
//! events do not arrive for changes made by other machines on network and FUSE filesystems,
//! so those roots are polled. Owns the mountinfo parsing only; never touches the store.

use std::path::Path;

/// Filesystem types whose changes may be made elsewhere, out of sight of inotify.
const REMOTE: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "afs",
    "ceph",
    "glusterfs",
    "lustre",
    "davfs",
    "fuse",
    "fuseblk",
    "sshfs",
    "virtiofs",
    "vboxsf",
    "vmhgfs",
];

/// True when `fstype` (as mountinfo names it) is a network or FUSE filesystem.
pub fn is_remote(fstype: &str) -> bool {
    REMOTE.contains(&fstype) || fstype.starts_with("fuse.")
}

/// The type of the filesystem holding `path` (an absolute, canonical path), or `None` when
/// it cannot be told (not Linux, or mountinfo unreadable): the caller then trusts events.
pub fn fstype_of(path: &Path) -> Option<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    fstype_in(&info, path)
}

/// The fstype of the longest mount point that contains `path`, per `mountinfo` text.
pub fn fstype_in(mountinfo: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let Some((mount_point, fstype)) = parse_line(line) else {
            continue;
        };
        let mount = Path::new(&mount_point);
        let depth = mount.components().count();
        if path.starts_with(mount) && best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, fstype));
        }
    }
    best.map(|(_, fstype)| fstype)
}

/// `(mount point, fstype)` of one mountinfo line: field 5 is the mount point; the fstype is
/// the first field after the `-` separator (optional fields come before it).
fn parse_line(line: &str) -> Option<(String, String)> {
    let mut fields = line.split(' ');
    let mount_point = fields.nth(4)?;
    let fstype = fields.skip_while(|f| *f != "-").nth(1)?;
    Some((unescape(mount_point), fstype.to_string()))
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo` octal.
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let d = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(d, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:35 / /mnt/nas rw,relatime shared:20 - nfs4 nas:/photos rw,vers=4.2
41 22 0:36 / /mnt/my\\040share rw - cifs //box/share rw
42 40 0:37 / /mnt/nas/local rw - ext4 /dev/sdb1 rw
43 22 0:38 / /media/phone rw,nosuid - fuse.gvfsd-fuse gvfsd-fuse rw";

    fn at(p: &str) -> Option<String> {
        fstype_in(INFO, Path::new(p))
    }

    #[test]
    fn longest_mount_point_wins() {
        assert_eq!(at("/home/me/Pictures").as_deref(), Some("ext4"));
        assert_eq!(at("/mnt/nas/2024").as_deref(), Some("nfs4"));
        assert_eq!(at("/mnt/nas/local/x").as_deref(), Some("ext4"));
        assert_eq!(
            at("/mnt/nasty").as_deref(),
            Some("ext4"),
            "component-wise prefix only"
        );
    }

    #[test]
    fn escaped_mount_points_and_fuse_subtypes() {
        assert_eq!(at("/mnt/my share/a").as_deref(), Some("cifs"));
        assert!(is_remote("cifs") && is_remote("nfs4") && is_remote("fuse.gvfsd-fuse"));
        assert!(!is_remote("ext4") && !is_remote("btrfs") && !is_remote("zfs"));
        assert_eq!(at("/media/phone/DCIM").as_deref(), Some("fuse.gvfsd-fuse"));
    }

    #[test]
    fn garbage_lines_are_skipped() {
        assert_eq!(fstype_in("nonsense\n\n1 2 3", Path::new("/x")), None);
    }
}
