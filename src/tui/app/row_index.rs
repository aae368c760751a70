//! Rows found by their identity (a job's cluster and id, a node's cluster and name) without a
//! copy of any key: a hash table of row numbers, each compared through the row it names.
//!
//! A `HashMap<JobRef, u32>` over 100,000 jobs copies two strings per job on every refresh;
//! this holds four bytes per row, and the keys stay in the snapshots.

use std::hash::BuildHasher;

use hashbrown::HashTable;

/// Rows by a two-part key (`cluster`, `id`) that the caller reads from each row.
#[derive(Default)]
pub struct RowIndex {
    table: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
}

impl std::fmt::Debug for RowIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowIndex").field("rows", &self.table.len()).finish()
    }
}

impl RowIndex {
    pub fn with_capacity(rows: usize) -> RowIndex {
        RowIndex { table: HashTable::with_capacity(rows), hasher: Default::default() }
    }

    fn hash(&self, cluster: &str, id: &str) -> u64 {
        self.hasher.hash_one((cluster, id))
    }

    /// Index `row`, whose key is `key_of(row)`. A key seen before now names `row` (the
    /// last row of a key wins, as a map's insert would have it).
    pub fn insert<'a>(&mut self, row: u32, key_of: impl Fn(u32) -> (&'a str, &'a str)) {
        let (cluster, id) = key_of(row);
        let hash = self.hash(cluster, id);
        let hasher = |r: &u32| {
            let (c, i) = key_of(*r);
            self.hasher.hash_one((c, i))
        };
        match self.table.entry(hash, |r| key_of(*r) == (cluster, id), hasher) {
            hashbrown::hash_table::Entry::Occupied(mut e) => *e.get_mut() = row,
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert(row);
            }
        }
    }

    /// The row whose key is (`cluster`, `id`).
    pub fn get<'a>(&self, cluster: &str, id: &str, key_of: impl Fn(u32) -> (&'a str, &'a str)) -> Option<u32> {
        self.table.find(self.hash(cluster, id), |r| key_of(*r) == (cluster, id)).copied()
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_key_and_the_last_of_a_key_wins() {
        let keys = [("a", "1"), ("a", "2"), ("b", "1"), ("a", "1")];
        let key_of = |r: u32| keys[r as usize];
        let mut index = RowIndex::with_capacity(4);
        for row in 0..4 {
            index.insert(row, key_of);
        }
        assert_eq!(index.len(), 3);
        assert_eq!(index.get("a", "1", key_of), Some(3));
        assert_eq!(index.get("a", "2", key_of), Some(1));
        assert_eq!(index.get("b", "1", key_of), Some(2));
        assert_eq!(index.get("b", "2", key_of), None);
        assert_eq!(index.get("a1", "", key_of), None, "the parts are kept apart");
    }
}
