//! A QWP connection's commits: which messages carry `FLAG_DEFER_COMMIT`, and which rows an OK
//! makes acknowledged.
//!
//! The encoder defers every message of a batch but its last, so a batch commits as one. With
//! `commit every N rows` the last message of a batch is deferred too, until the rows since the
//! connection's last commit reach N: commits fall on batch boundaries, the first at or after N.
//!
//! An OK for a deferred message is not a commit (QuestDB 9.4 acknowledges each deferred
//! message, 10.x holds the OK until the commit; deferred rows are rolled back when the
//! connection drops), so a row counts as acknowledged only once an OK covers the message that
//! commits it, whichever the server. OKs are cumulative and in order: the rows of the deferred
//! messages an OK covers wait in `uncommitted_ok` for the OK of their commit.

use crate::qwp::FLAG_DEFER_COMMIT;

/// The 14-byte message that commits what is deferred: the header (version 1, the delta symbol
/// dictionary flag as every WebSocket sender sets it, no table) and an empty dictionary delta
/// from id 0 (an overlap of nothing, never a gap). The protocol notes (§3.2) make a message
/// with no table and the flag clear a commit.
pub const EMPTY_COMMIT: [u8; 14] = [
    b'Q',
    b'W',
    b'P',
    b'1',
    1,
    crate::qwp::FLAG_DELTA_SYMBOL_DICT,
    0,
    0,
    2,
    0,
    0,
    0,
    0,
    0,
];

#[derive(Debug, Default)]
pub struct Ledger {
    /// `commit every N rows`; `None`: each batch commits.
    every: Option<u64>,
    /// Rows of whole batches sent since the last commit, for `every`.
    batch_rows: u64,
    /// Rows of the deferred messages written since the last commit message: what a dropped
    /// connection rolls back.
    pub open_rows: u64,
    /// A deferred message (rows or dictionary) was written after the last commit.
    pub open: bool,
    /// Commit messages written whole.
    pub commits: u64,
    /// Rows of deferred messages an OK covered, waiting for the OK of their commit.
    pub uncommitted_ok: u64,
}

impl Ledger {
    pub fn new(every: Option<u64>) -> Ledger {
        Ledger {
            every,
            ..Ledger::default()
        }
    }

    /// Whether batches may be deferred (`commit every N rows`).
    pub fn defers(&self) -> bool {
        self.every.is_some()
    }

    /// Sets or clears the defer flag of a message about to be written (`flags` is its header
    /// byte) and says whether it commits. `batch` is the rows of its whole batch when it is
    /// the batch's last message.
    pub fn flag(&mut self, flags: &mut u8, batch: Option<u64>) -> bool {
        if let (Some(every), Some(rows)) = (self.every, batch) {
            if self.batch_rows + rows < every {
                *flags |= FLAG_DEFER_COMMIT;
            } else {
                *flags &= !FLAG_DEFER_COMMIT;
            }
        }
        *flags & FLAG_DEFER_COMMIT == 0
    }

    /// A message was written whole.
    pub fn written(&mut self, rows: u64, commits: bool, batch: Option<u64>) {
        if commits {
            self.commits += 1;
            self.open_rows = 0;
            self.open = false;
            self.batch_rows = 0;
        } else {
            self.open_rows += rows;
            self.open = true;
            self.batch_rows += batch.unwrap_or(0);
        }
    }

    /// An OK covered a message of `rows`: the rows it makes acknowledged (committed).
    pub fn covered(&mut self, rows: u64, commits: bool) -> u64 {
        self.uncommitted_ok += rows;
        if commits {
            std::mem::take(&mut self.uncommitted_ok)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qwp::FLAG_DELTA_SYMBOL_DICT as DICT;

    /// Sends batches of `rows` (one message each) and returns each message's flags.
    fn flags_of(every: Option<u64>, batches: &[u64]) -> (Vec<u8>, Ledger) {
        let mut l = Ledger::new(every);
        let mut out = Vec::new();
        for &rows in batches {
            let mut f = DICT;
            let commits = l.flag(&mut f, Some(rows));
            l.written(rows, commits, Some(rows));
            out.push(f);
        }
        (out, l)
    }

    #[test]
    fn per_batch_leaves_the_encoders_flags() {
        let (f, l) = flags_of(None, &[10, 10, 10]);
        assert_eq!(f, vec![DICT; 3]);
        assert_eq!((l.commits, l.open), (3, false));
        let mut l = Ledger::new(None);
        let mut split = DICT | FLAG_DEFER_COMMIT;
        assert!(!l.flag(&mut split, None));
        assert_eq!(split, DICT | FLAG_DEFER_COMMIT);
    }

    #[test]
    fn every_n_rows_commits_at_the_first_batch_boundary_at_or_after_n() {
        let d = DICT | FLAG_DEFER_COMMIT;
        // 25 rows in batches of 10: commits after 30, then 60.
        let (f, l) = flags_of(Some(25), &[10, 10, 10, 10, 10, 10, 10]);
        assert_eq!(f, vec![d, d, DICT, d, d, DICT, d]);
        assert_eq!((l.commits, l.open, l.open_rows), (2, true, 10));
        // A multiple of the batch: exactly every N.
        let (f, _) = flags_of(Some(20), &[10, 10, 10, 10]);
        assert_eq!(f, vec![d, DICT, d, DICT]);
        // Fewer rows than a batch: every batch.
        let (f, _) = flags_of(Some(5), &[10, 10]);
        assert_eq!(f, vec![DICT, DICT]);
    }

    #[test]
    fn a_row_is_acknowledged_when_the_ok_of_its_commit_comes() {
        let mut l = Ledger::new(Some(30));
        // 9.4: an OK per deferred message, then the commit's.
        assert_eq!(l.covered(10, false), 0);
        assert_eq!(l.covered(10, false), 0);
        assert_eq!(l.covered(10, true), 30);
        // 10.x: one cumulative OK covers the deferred messages and their commit at once.
        assert_eq!(
            l.covered(10, false) + l.covered(10, false) + l.covered(10, true),
            30
        );
        // An OK of deferred messages whose commit never comes acknowledges nothing.
        assert_eq!(l.covered(10, false), 0);
    }

    #[test]
    fn the_empty_commit_is_a_well_formed_message_without_a_table() {
        let mut r = crate::qwp::Reader::new(&EMPTY_COMMIT);
        let h = crate::qwp::read_header(&mut r).unwrap();
        // The delta dictionary: from id 0, no entry.
        assert_eq!((r.u8().unwrap(), r.u8().unwrap()), (0, 0));
        assert_eq!((h.flags, h.table_count, h.payload_len), (DICT, 0, 2));
    }
}
