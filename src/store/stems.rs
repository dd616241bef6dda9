//! Path arithmetic on library-relative paths that the families pairing namesakes share
//! (`motion`, `stacks`): a helper, no SQL.

/// `dir/stem.` of a library-relative path and the end of its range (`.` raised to `/`):
/// the names of one stem in one folder, as a range of the UNIQUE (library_id, rel_path) index
/// (a Live Photo's and a stack's namesakes); none without a stem.
pub(super) fn stem_range(rel_path: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let name_at = rel_path
        .iter()
        .rposition(|b| *b == b'/')
        .map_or(0, |i| i + 1);
    let dot = rel_path[name_at..].iter().rposition(|b| *b == b'.')? + name_at;
    if dot == name_at {
        return None; // `.hidden`: no stem
    }
    let lo = rel_path[..=dot].to_vec();
    let mut hi = lo.clone();
    if let Some(last) = hi.last_mut() {
        *last += 1;
    }
    Some((lo, hi))
}
