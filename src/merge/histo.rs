//! Latency summaries merged exactly: each shard's whole histogram (`Latency::histogram`,
//! V2-deflate, base64) decoded and added, the percentiles taken again from the sum. A p99 of
//! all shards' samples is no shard's p99, nor their average.

use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use crate::report::Latency;

/// A histogram as a report carries it, decoded; `None` for an empty summary (no samples: the
/// report writes no histogram for it).
pub fn decode(l: &Latency) -> Result<Option<Histogram<u64>>, String> {
    if l.count == 0 && l.histogram.is_empty() {
        return Ok(None);
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&l.histogram)
        .map_err(|e| format!("a latency histogram is not base64: {e}"))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("a latency histogram does not decode: {e:?}"))?;
    if h.len() != l.count {
        return Err(format!(
            "a latency histogram holds {} samples where its summary counts {}",
            h.len(),
            l.count
        ));
    }
    Ok(Some(h))
}

/// The sum of `parts`: the histogram of every sample any of them holds. The sum takes the
/// bounds of the first (every wlrun histogram of one kind has the same) and grows past them,
/// so that it equals, bucket for bucket, one histogram that recorded all the samples.
pub fn sum(parts: &[Histogram<u64>]) -> Option<Histogram<u64>> {
    let first = parts.first()?;
    let mut total = Histogram::new_with_bounds(first.low(), first.high(), first.sigfig())
        .unwrap_or_else(|_| Histogram::new(3).expect("3 significant digits are valid"));
    total.auto(true);
    for h in parts {
        // Same precision and an auto-resizing sum: adding cannot fail.
        let _ = total.add(h);
    }
    Some(total)
}

/// The merged summary of `parts` (one per shard; `None`: that shard has none). `Ok(None)` when
/// no shard has one. Each histogram is added bucket by bucket (`codec::Adder`) into a sum with
/// the first one's bounds, growing.
pub fn merge<'a>(
    parts: impl IntoIterator<Item = Option<&'a Latency>>,
) -> Result<Option<Latency>, String> {
    let mut any = false;
    let mut total: Option<Histogram<u64>> = None;
    let mut adder = super::codec::Adder::default();
    for l in parts.into_iter().flatten() {
        any = true;
        if l.count == 0 && l.histogram.is_empty() {
            continue;
        }
        let n = adder.add_base64(&mut total, &l.histogram)?;
        if n != l.count {
            return Err(format!(
                "a latency histogram holds {n} samples where its summary counts {}",
                l.count
            ));
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(total.map(|h| Latency::of(&h)).unwrap_or_default()))
}

/// `merge` of summaries every shard has.
pub fn merge_all<'a>(parts: impl IntoIterator<Item = &'a Latency>) -> Result<Latency, String> {
    Ok(merge(parts.into_iter().map(Some))?.unwrap_or_default())
}
