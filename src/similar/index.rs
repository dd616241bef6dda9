//! The grouping of perceptual hashes without comparing every pair: multi-index hashing. The
//! 64 bits are cut into `BANDS` bands of 16 bits. Two hashes within distance `d` differ in
//! at most `d / BANDS` bits in at least one band (pigeonhole: were every band `d / BANDS + 1`
//! bits apart, the whole would be more than `d` apart), so the hashes near one are found by
//! looking up, in each band's table, every band value within that radius of its own (1, 17 or
//! 137 values for a radius of 0, 1 or 2), then checking the whole distance of what the lookup
//! returns. `MAX_DISTANCE` (11, a radius of 2) bounds what the setting accepts: a radius of 3
//! would cost 697 lookups per band for each picture. Every pair within `d` is found: the tests
//! hold the index against the quadratic comparison.
//!
//! Groups are connected components (single linkage) of the pairs within the distance, except
//! the pairs that are the same picture: the same asset (byte-identical files are one asset) or
//! two assets with one content hash (the same pixels with other metadata, `same_content` in
//! docs/json.md, listed as duplicates). A chain of small steps (a burst) is one group even where
//! its ends are further apart than the distance.
//!
//! Cost: each hash is checked against the members of 17 (radius 1) or 137 (radius 2) buckets
//! per band, each bucket 1/65536 of the hashes when they spread evenly: the pairs compared
//! are about 1/1000 (radius 1) or 1/120 (radius 2) of all pairs, so the work still grows with
//! n², 65536 times slower. Measured (`examples/similar_index.rs`, optimised, hashes in clusters
//! of 10, on the 2-core machine at load average 7): 100,000 hashes group in 0.18 s at distance
//! 7 and 0.96 s at 8 (quadratic comparison: about 8 s); 1,000,000 in 13.2 s at 7 and 82.5 s at
//! 8 (quadratic: about 690 s); building the index takes 0.2 s. The store's lookup of one
//! picture's neighbours (`GET /api/assets/{id}/similar`) makes the same lookups through the
//! four band indexes of migration 0019: 68 or 548 index seeks, whatever the library's size.

/// Bands the hash is cut into, and the bits of each.
pub const BANDS: u32 = 4;
pub const BAND_BITS: u32 = 16;
const BUCKETS: usize = 1 << BAND_BITS;

/// The largest distance the index finds every pair within.
pub const MAX_DISTANCE: u32 = 11;

/// Bits a band may differ in for the whole to be within `distance`.
pub fn radius(distance: u32) -> u32 {
    distance / BANDS
}

/// Band `b` (0 = the lowest bits) of `hash`.
pub fn band(hash: u64, b: u32) -> u16 {
    (hash >> (b * BAND_BITS)) as u16
}

/// The masks of at most `radius` bits of a band, 0 first: a band's value XOR each is every
/// value within `radius` of it, each once.
pub fn masks(radius: u32) -> Vec<u16> {
    fn flips(mask: u16, left: u32, from: u32, out: &mut Vec<u16>) {
        out.push(mask);
        if left == 0 {
            return;
        }
        for bit in from..BAND_BITS {
            flips(mask | (1 << bit), left - 1, bit + 1, out);
        }
    }
    let mut out = Vec::new();
    flips(0, radius, 0, &mut out);
    out
}

/// One hashed picture: its asset, its hash and the first 8 bytes of its content hash (two
/// different contents share them with a chance of 2^-64 per pair), `None` when it has none.
pub use crate::model::PictureHash as Entry;

/// Whether the pair is one picture (the same asset, or the same content): never similar.
fn same_picture(a: &Entry, b: &Entry) -> bool {
    a.id == b.id || (a.content.is_some() && a.content == b.content)
}

/// The band values within the radius of `distance` of each band of `hash`: what to look up
/// in each band's table (the store's band indexes) for the hashes near it.
pub fn band_probes(hash: u64, distance: u32) -> Vec<Vec<u16>> {
    let masks = masks(radius(distance.min(MAX_DISTANCE)));
    (0..BANDS)
        .map(|b| masks.iter().map(|m| band(hash, b) ^ m).collect())
        .collect()
}

/// One band's table: the entries by band value (a counting sort: `starts[v]..starts[v + 1]`
/// of `members` are the entries whose band is `v`), each member with its whole hash, so that
/// a bucket is checked reading its own memory in order (reading each candidate's entry
/// instead was a cache miss per candidate: 5 times slower at 1M hashes).
struct Band {
    starts: Vec<u32>,
    members: Vec<(u64, u32)>,
}

impl Band {
    fn new(entries: &[Entry], b: u32) -> Band {
        let mut starts = vec![0u32; BUCKETS + 1];
        for e in entries {
            starts[usize::from(band(e.hash, b)) + 1] += 1;
        }
        for v in 0..BUCKETS {
            starts[v + 1] += starts[v];
        }
        let mut next = starts.clone();
        let mut members = vec![(0u64, 0u32); entries.len()];
        for (i, e) in entries.iter().enumerate() {
            let slot = &mut next[usize::from(band(e.hash, b))];
            members[*slot as usize] = (e.hash, i as u32);
            *slot += 1;
        }
        Band { starts, members }
    }

    fn bucket(&self, value: u16) -> &[(u64, u32)] {
        let v = usize::from(value);
        &self.members[self.starts[v] as usize..self.starts[v + 1] as usize]
    }
}

/// The hashes of a library, indexed by band. Holds at most `u32::MAX` entries.
pub struct Index {
    entries: Vec<Entry>,
    bands: Vec<Band>,
}

impl Index {
    pub fn new(entries: Vec<Entry>) -> Index {
        let bands = (0..BANDS).map(|b| Band::new(&entries, b)).collect();
        Index { entries, bands }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Calls `found` with the position of every entry after position `after` (all: `None`)
    /// within `distance` of `hash`, each once per band it shares within the radius (a caller
    /// that needs each once dedupes).
    fn each_near(
        &self,
        (hash, after): (u64, Option<usize>),
        distance: u32,
        masks: &[u16],
        mut found: impl FnMut(usize),
    ) {
        let after = after.map_or(-1, |a| a as i64);
        for (b, table) in (0..BANDS).zip(&self.bands) {
            let value = band(hash, b);
            for m in masks {
                for &(other, j) in table.bucket(value ^ m) {
                    if i64::from(j) > after && super::distance(hash, other) <= distance {
                        found(j as usize);
                    }
                }
            }
        }
    }

    /// The entries within `distance` of `probe` that are not the same picture, nearest first
    /// (then by id). `distance` above `MAX_DISTANCE` is treated as `MAX_DISTANCE`.
    pub fn near(&self, probe: &Entry, distance: u32) -> Vec<(Entry, u32)> {
        let distance = distance.min(MAX_DISTANCE);
        let mut out: Vec<(Entry, u32)> = Vec::new();
        self.each_near(
            (probe.hash, None),
            distance,
            &masks(radius(distance)),
            |j| {
                let e = self.entries[j];
                if !same_picture(&e, probe) {
                    out.push((e, super::distance(probe.hash, e.hash)));
                }
            },
        );
        out.sort_by_key(|(e, d)| (*d, e.id));
        out.dedup_by_key(|(e, _)| e.id);
        out
    }

    /// The groups: connected components of two or more entries, linked by the pairs within
    /// `distance` (at most `MAX_DISTANCE`) that are not the same picture. Each group's ids
    /// ascend; the groups are ordered by their first id.
    pub fn groups(&self, distance: u32) -> Vec<Vec<i64>> {
        let distance = distance.min(MAX_DISTANCE);
        let masks = masks(radius(distance));
        let mut sets = Sets::new(self.entries.len());
        for (i, e) in self.entries.iter().enumerate() {
            self.each_near((e.hash, Some(i)), distance, &masks, |j| {
                if !same_picture(e, &self.entries[j]) {
                    sets.union(i, j);
                }
            });
        }
        sets.components(&self.entries)
    }
}

/// Union-find over entry positions (union by size, path halving).
struct Sets {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl Sets {
    fn new(n: usize) -> Sets {
        Sets {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] as usize != i {
            let up = self.parent[self.parent[i] as usize];
            self.parent[i] = up;
            i = up as usize;
        }
        i
    }

    fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.root(a), self.root(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a as u32;
        self.size[a] += self.size[b];
    }

    fn components(mut self, entries: &[Entry]) -> Vec<Vec<i64>> {
        let mut by_root: std::collections::HashMap<usize, Vec<i64>> = Default::default();
        for (i, e) in entries.iter().enumerate() {
            let root = self.root(i);
            if self.size[root] > 1 {
                by_root.entry(root).or_default().push(e.id);
            }
        }
        let mut groups: Vec<Vec<i64>> = by_root
            .into_values()
            .map(|mut ids| {
                ids.sort_unstable();
                ids
            })
            .collect();
        groups.sort_unstable_by_key(|g| g[0]);
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*), so the test needs no seed crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// `hash` with `bits` random bits flipped (some may repeat: at most `bits`).
        fn flip(&mut self, hash: u64, bits: u32) -> u64 {
            (0..bits).fold(hash, |h, _| h ^ (1 << (self.next() % 64)))
        }
    }

    /// Clusters of hashes a few bits apart, some twins among them.
    fn entries(rng: &mut Rng, clusters: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        for c in 0..clusters {
            let centre = rng.next();
            for k in 0..5u64 {
                let id = out.len() as i64 + 1;
                let bits = (rng.next() % 14) as u32;
                out.push(Entry {
                    id,
                    hash: rng.flip(centre, bits),
                    content: (k < 2 && c % 3 == 0).then_some(c as u64),
                });
            }
        }
        out
    }

    fn quadratic(entries: &[Entry], distance: u32) -> Vec<Vec<i64>> {
        let mut sets = Sets::new(entries.len());
        for (i, a) in entries.iter().enumerate() {
            for (j, b) in entries.iter().enumerate().skip(i + 1) {
                if super::super::distance(a.hash, b.hash) <= distance && !same_picture(a, b) {
                    sets.union(i, j);
                }
            }
        }
        sets.components(entries)
    }

    #[test]
    fn the_index_finds_every_pair_the_quadratic_comparison_finds() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let entries = entries(&mut rng, 300);
        let index = Index::new(entries.clone());
        for distance in 0..=MAX_DISTANCE {
            assert_eq!(
                index.groups(distance),
                quadratic(&entries, distance),
                "distance {distance}"
            );
        }
        for probe in entries.iter().step_by(7) {
            let brute: Vec<i64> = entries
                .iter()
                .filter(|e| super::super::distance(e.hash, probe.hash) <= 9)
                .filter(|e| !same_picture(e, probe))
                .map(|e| e.id)
                .collect();
            let mut got: Vec<i64> = index.near(probe, 9).iter().map(|(e, _)| e.id).collect();
            got.sort_unstable();
            assert_eq!(got, brute, "near {}", probe.id);
        }
    }

    #[test]
    fn the_masks_are_every_value_within_the_radius_once() {
        assert_eq!(masks(0), vec![0]);
        assert_eq!(masks(1).len(), 17);
        let two = masks(2);
        assert_eq!(two.len(), 137);
        let mut sorted = two.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 137);
        assert!(two.iter().all(|m| m.count_ones() <= 2));
    }

    #[test]
    fn twins_and_the_same_asset_are_never_a_group_and_a_chain_is_one() {
        let e = |id, hash, content| Entry { id, hash, content };
        let twins = Index::new(vec![e(1, 0, Some(7)), e(2, 1, Some(7))]);
        assert!(
            twins.groups(6).is_empty(),
            "the same content is a duplicate"
        );
        assert!(twins.near(&e(1, 0, Some(7)), 6).is_empty());
        // 0 -> 5 bits -> 10 bits: the ends are 10 apart, each step 5.
        let chain = Index::new(vec![e(1, 0, None), e(2, 0x1F, None), e(3, 0x3FF, None)]);
        assert_eq!(chain.groups(5), vec![vec![1, 2, 3]]);
        assert!(chain.groups(4).is_empty());
    }
}
