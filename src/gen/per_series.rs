//! The columnar engine's per-series state in compact form, so that a million series fit in a
//! few hundred megabytes: which series a generator owns, and a per-series symbol column's
//! dictionary ids in the narrowest integer that holds them.
//!
//! What a series costs otherwise is derived when a run needs it (its key prefixes, its walk
//! starts: see `columnar.rs`); what it costs here is a few bytes per symbol column.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::batch::Texts;

/// The series a generator owns, in index order: all of them, or a shard's.
pub(super) enum Members {
    /// Series 0..n.
    All(u64),
    Some(Vec<u64>),
}

impl Members {
    pub fn len(&self) -> usize {
        match self {
            Members::All(n) => *n as usize,
            Members::Some(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The series index of owned series `k`.
    #[inline]
    pub fn index(&self, k: usize) -> u64 {
        match self {
            Members::All(_) => k as u64,
            Members::Some(v) => v[k],
        }
    }
}

/// One dictionary id per owned series. A series key gives each series its own text in order
/// (`Identity`, nothing stored); a tag has a few values (a byte each).
#[derive(Debug, PartialEq)]
pub(super) enum Ids {
    /// Series `k` has id `k`; the number of series so far.
    Identity(usize),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
}

impl Default for Ids {
    fn default() -> Ids {
        Ids::Identity(0)
    }
}

impl Ids {
    pub fn push(&mut self, id: u32) {
        match self {
            Ids::Identity(n) if id as usize == *n => *n += 1,
            Ids::U8(v) if id <= u32::from(u8::MAX) => v.push(id as u8),
            Ids::U16(v) if id <= u32::from(u16::MAX) => v.push(id as u16),
            Ids::U32(v) => v.push(id),
            _ => {
                // Widened as rarely as ids grow: at most three times per column.
                let old = std::mem::take(self);
                let mut all: Vec<u32> = Vec::with_capacity(old.len() + 1);
                old.extend_range(0, old.len(), &mut all);
                all.push(id);
                let max = all.iter().copied().max().unwrap_or(0);
                *self = if max <= u32::from(u8::MAX) {
                    Ids::U8(all.into_iter().map(|x| x as u8).collect())
                } else if max <= u32::from(u16::MAX) {
                    Ids::U16(all.into_iter().map(|x| x as u16).collect())
                } else {
                    Ids::U32(all)
                };
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Ids::Identity(n) => *n,
            Ids::U8(v) => v.len(),
            Ids::U16(v) => v.len(),
            Ids::U32(v) => v.len(),
        }
    }

    /// Appends the ids of owned series `from..to` to `out`.
    #[inline]
    pub fn extend_range(&self, from: usize, to: usize, out: &mut Vec<u32>) {
        match self {
            Ids::Identity(_) => out.extend(from as u32..to as u32),
            Ids::U8(v) => out.extend(v[from..to].iter().map(|&x| u32::from(x))),
            Ids::U16(v) => out.extend(v[from..to].iter().map(|&x| u32::from(x))),
            Ids::U32(v) => out.extend_from_slice(&v[from..to]),
        }
    }

    pub fn shrink_to_fit(&mut self) {
        match self {
            Ids::Identity(_) => {}
            Ids::U8(v) => v.shrink_to_fit(),
            Ids::U16(v) => v.shrink_to_fit(),
            Ids::U32(v) => v.shrink_to_fit(),
        }
    }
}

/// Texts given ids in order of first appearance, while a dictionary is built. The table holds
/// ids only (5 bytes a slot) and hashes the text the dictionary already holds: a map from
/// `String` would hold every text a second time, a hundred bytes a series at a million.
pub(super) struct Interner {
    pub texts: Texts,
    table: HashTable<u32>,
    hasher: RandomState,
}

impl Interner {
    pub fn new() -> Interner {
        Interner {
            texts: Texts::default(),
            table: HashTable::new(),
            hasher: RandomState::new(),
        }
    }

    /// The id of `text`, given the next free one if it is new.
    pub fn id(&mut self, text: &str) -> u32 {
        let Interner {
            texts,
            table,
            hasher,
        } = self;
        let hash = hasher.hash_one(text);
        if let Some(&id) = table.find(hash, |&id| &texts[id as usize] == text) {
            return id;
        }
        let id = texts.len() as u32;
        texts.push(text);
        table.insert_unique(hash, id, |&id| hasher.hash_one(&texts[id as usize]));
        id
    }

    /// The dictionary, its spare capacity given back.
    pub fn into_texts(self) -> Texts {
        let mut t = self.texts;
        t.shrink_to_fit();
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(ids: &Ids) -> Vec<u32> {
        let mut v = Vec::new();
        ids.extend_range(0, ids.len(), &mut v);
        v
    }

    #[test]
    fn ids_keep_every_value_through_each_widening() {
        let mut ids = Ids::default();
        let want: Vec<u32> = vec![0, 1, 2, 2, 0, 300, 7, 70_000, 5];
        for (k, &id) in want.iter().enumerate() {
            ids.push(id);
            assert_eq!(all(&ids), want[..=k], "after {k}");
        }
        assert!(matches!(ids, Ids::U32(_)));
        let mut out = vec![9];
        ids.extend_range(4, 6, &mut out);
        assert_eq!(out, [9, 0, 300]);
    }

    #[test]
    fn ids_in_order_store_nothing_and_small_ids_a_byte() {
        let mut key = Ids::default();
        for id in 0..1000 {
            key.push(id);
        }
        assert_eq!(key, Ids::Identity(1000));
        let mut out = Vec::new();
        key.extend_range(10, 13, &mut out);
        assert_eq!(out, [10, 11, 12]);
        let mut tag = Ids::default();
        for id in [0, 0, 1, 255] {
            tag.push(id);
        }
        assert_eq!(tag, Ids::U8(vec![0, 0, 1, 255]));
        tag.push(256);
        assert_eq!(tag, Ids::U16(vec![0, 0, 1, 255, 256]));
    }

    #[test]
    fn the_interner_numbers_texts_by_first_appearance() {
        let mut i = Interner::new();
        let got: Vec<u32> = ["b", "a", "b", "", "c", "a", ""]
            .iter()
            .map(|t| i.id(t))
            .collect();
        assert_eq!(got, [0, 1, 0, 2, 3, 1, 2]);
        let texts = i.into_texts();
        assert_eq!(texts.iter().collect::<Vec<_>>(), ["b", "a", "", "c"]);
        assert_eq!((texts.len(), &texts[1], texts.get(3)), (4, "a", Some("c")));
        assert_eq!((texts.get(4), texts.get(usize::MAX)), (None, None));
        assert!(Texts::default().is_empty() && Texts::default().get(0).is_none());
        // Enough texts to make the table grow several times.
        let mut i = Interner::new();
        for n in 0..10_000u32 {
            assert_eq!(i.id(&format!("host_{n}")), n);
        }
        assert_eq!(i.id("host_1234"), 1234);
    }

    #[test]
    fn members_index_all_or_a_shard() {
        assert_eq!(Members::All(5).index(3), 3);
        assert_eq!(Members::All(5).len(), 5);
        let m = Members::Some(vec![1, 4, 9]);
        assert_eq!((m.len(), m.index(2)), (3, 9));
        assert!(Members::Some(Vec::new()).is_empty());
    }
}
