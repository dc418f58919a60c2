//! The connection's symbol dictionary: extended by each batch's delta section and kept
//! across batches and queries until CACHE_RESET or a query sent with `QUERY_FLAG_RESET_DICT`.

use crate::qwp::{Malformed, Reader};

/// Past this the dictionary's growth is a server fault, not a result (the server's soft cap
/// is 100,000 entries between CACHE_RESETs; one query may pass it, not by this much).
const MAX_DICT_ENTRIES: usize = 1 << 24;

/// The connection's symbol dictionary: entries concatenated, with their end offsets.
#[derive(Debug, Default)]
pub(super) struct Dict {
    text: String,
    ends: Vec<usize>,
}

impl Dict {
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(super) fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    pub(super) fn get(&self, id: usize) -> Option<&str> {
        let end = *self.ends.get(id)?;
        let start = match id {
            0 => 0,
            _ => *self.ends.get(id - 1)?,
        };
        self.text.get(start..end)
    }

    /// A delta section: entries from `start`, which may repeat known ones (identically) but
    /// not leave a gap.
    pub(super) fn apply_delta(&mut self, r: &mut Reader<'_>) -> Result<(), Malformed> {
        let at = r.pos();
        let start = r.varint()?;
        // Each entry takes at least its length byte.
        let count = r.count("dictionary entries", r.remaining() as u64)?;
        if start > self.len() as u64 {
            return Err(Malformed {
                at,
                what: format!(
                    "the dictionary delta starts at id {start} but {} ids are known",
                    self.len()
                ),
            });
        }
        let start = start as usize;
        if start.saturating_add(count) > MAX_DICT_ENTRIES {
            return Err(Malformed {
                at,
                what: format!("the symbol dictionary would pass {MAX_DICT_ENTRIES} entries"),
            });
        }
        for k in 0..count {
            let at = r.pos();
            let s = r.str()?;
            let id = start + k;
            match self.get(id) {
                Some(known) if known == s => {}
                Some(known) => {
                    return Err(Malformed {
                        at,
                        what: format!("symbol id {id} is `{known}`, and the delta says `{s}`"),
                    })
                }
                None => {
                    self.text.push_str(s);
                    self.ends.push(self.text.len());
                }
            }
        }
        Ok(())
    }
}
