//! Serialized histograms (HdrHistogram's V2 format, deflated or not) added into a histogram
//! bucket by bucket, without building a histogram of each; and merged histograms deflated with
//! one reused compressor. A merge adds 16 x 600 interval
//! histograms per phase: decoding each into a histogram of its own costs a zeroed counts array
//! apiece, which was most of a merge's time. This reads the counts straight from the payload
//! (zig-zag LEB128 varints, negative for a run of empty buckets) and adds each to the bucket of
//! the same index in the sum, which has the same layout (the same lowest value and precision,
//! checked; anything else goes through the library's own deserializer).

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;
const V2_HEADER: usize = 40;

/// Reusable buffers for adding serialized histograms.
pub struct Adder {
    inflate: flate2::Decompress,
    raw: Vec<u8>,
    plain: Vec<u8>,
}

impl Default for Adder {
    fn default() -> Self {
        Adder {
            inflate: flate2::Decompress::new(true),
            raw: Vec::new(),
            plain: Vec::new(),
        }
    }
}

/// The layout a V2 header gives.
struct Header {
    digits: u8,
    low: u64,
    high: u64,
}

impl Adder {
    /// Adds the base64 text of a serialized histogram into `into` (created with the
    /// histogram's own bounds, growing, when `None`); its sample count.
    pub fn add_base64(
        &mut self,
        into: &mut Option<Histogram<u64>>,
        text: &str,
    ) -> Result<u64, String> {
        let mut raw = std::mem::take(&mut self.raw);
        raw.clear();
        base64::engine::general_purpose::STANDARD
            .decode_vec(text, &mut raw)
            .map_err(|e| format!("a histogram is not base64: {e}"))?;
        let n = self.add(into, &raw);
        self.raw = raw;
        n
    }

    /// Adds a serialized histogram (V2, deflated or not) into `into`; its sample count.
    pub fn add(&mut self, into: &mut Option<Histogram<u64>>, bytes: &[u8]) -> Result<u64, String> {
        let bad = || "a histogram does not decode: not HdrHistogram's V2 format".to_string();
        let cookie = be_u32(bytes, 0).ok_or_else(bad)?;
        let plain: &[u8] = match cookie {
            V2_COOKIE => bytes,
            V2_COMPRESSED_COOKIE => {
                let len = be_u32(bytes, 4).ok_or_else(bad)? as usize;
                let deflated = bytes.get(8..8 + len).ok_or_else(bad)?;
                self.plain.clear();
                self.inflate.reset(true);
                // The inflated size is the header's payload length plus the header: unknown
                // here, so the buffer grows until the stream ends.
                self.plain.reserve(deflated.len() * 4 + V2_HEADER);
                loop {
                    let before = self.inflate.total_in() as usize;
                    let status = self
                        .inflate
                        .decompress_vec(
                            &deflated[before..],
                            &mut self.plain,
                            flate2::FlushDecompress::None,
                        )
                        .map_err(|e| format!("a histogram does not inflate: {e}"))?;
                    match status {
                        flate2::Status::StreamEnd => break,
                        _ if self.plain.len() == self.plain.capacity() => {
                            self.plain.reserve(self.plain.capacity().max(64));
                        }
                        _ => return Err(bad()),
                    }
                }
                &self.plain
            }
            _ => return Err(bad()),
        };
        if be_u32(plain, 0) != Some(V2_COOKIE) {
            return Err(bad());
        }
        let payload_len = be_u32(plain, 4).ok_or_else(bad)? as usize;
        let header = Header {
            digits: be_u32(plain, 12).ok_or_else(bad)? as u8,
            low: be_u64(plain, 16).ok_or_else(bad)?,
            high: be_u64(plain, 24).ok_or_else(bad)?,
        };
        let normalizing_offset = be_u32(plain, 8).ok_or_else(bad)?;
        let ratio = be_u64(plain, 32).map(f64::from_bits).ok_or_else(bad)?;
        let payload = plain
            .get(V2_HEADER..V2_HEADER + payload_len)
            .ok_or_else(bad)?;
        let h = into.get_or_insert_with(|| {
            let mut h = Histogram::new_with_bounds(header.low, header.high, header.digits)
                .unwrap_or_else(|_| Histogram::new(3).expect("3 significant digits are valid"));
            h.auto(true);
            h
        });
        if normalizing_offset != 0
            || ratio != 1.0
            || h.low() != header.low
            || h.sigfig() != header.digits
        {
            // Another layout: the library's own way, a histogram at a time.
            let other: Histogram<u64> = Deserializer::new()
                .deserialize(&mut &bytes[..])
                .map_err(|e| format!("a histogram does not decode: {e:?}"))?;
            h.add(&other)
                .map_err(|e| format!("a histogram does not add: {e:?}"))?;
            return Ok(other.len());
        }
        let layout = Layout::of(&header);
        let mut index: u64 = 0;
        let mut total = 0u64;
        let mut at = 0;
        while at < payload.len() {
            let (zz, read) = varint(&payload[at..]).ok_or_else(bad)?;
            at += read;
            let n = ((zz >> 1) as i64) ^ -((zz & 1) as i64);
            if n < 0 {
                index = index.saturating_add(n.unsigned_abs());
            } else {
                if n > 0 {
                    let value = layout.value(index).ok_or_else(bad)?;
                    h.record_n(value, n as u64)
                        .map_err(|e| format!("a histogram does not add: {e:?}"))?;
                    total += n as u64;
                }
                index += 1;
            }
        }
        Ok(total)
    }
}

/// HdrHistogram's V2-deflate serialization (`V2DeflateSerializer`'s format, what interval
/// logs hold) with one compressor for every histogram: the library's makes a compressor per
/// histogram, whose zeroed tables cost more than compressing a merged interval does. Level 1,
/// not the library's 6: a merged log's histograms come out 3% larger, and the merge bench
/// took 0.78 s, not 0.89 s (docs/decisions.md).
pub struct Deflater {
    v2: V2Serializer,
    plain: Vec<u8>,
    out: Vec<u8>,
    compress: flate2::Compress,
}

impl Default for Deflater {
    fn default() -> Self {
        Deflater {
            v2: V2Serializer::new(),
            plain: Vec::new(),
            out: Vec::new(),
            compress: flate2::Compress::new(flate2::Compression::fast(), true),
        }
    }
}

impl Serializer for Deflater {
    type SerializeError = String;

    fn serialize<T: hdrhistogram::Counter, W: std::io::Write>(
        &mut self,
        h: &Histogram<T>,
        writer: &mut W,
    ) -> Result<usize, String> {
        self.plain.clear();
        self.v2
            .serialize(h, &mut self.plain)
            .map_err(|e| format!("a histogram does not serialize: {e}"))?;
        self.compress.reset();
        self.out.clear();
        self.out
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.out.extend_from_slice(&[0; 4]);
        self.out.reserve(self.plain.len() / 2 + 64);
        loop {
            let before = self.compress.total_in() as usize;
            let status = self
                .compress
                .compress_vec(
                    &self.plain[before..],
                    &mut self.out,
                    flate2::FlushCompress::Finish,
                )
                .map_err(|e| format!("a histogram does not deflate: {e}"))?;
            if status == flate2::Status::StreamEnd {
                break;
            }
            self.out.reserve(self.out.capacity().max(64));
        }
        let len = u32::try_from(self.out.len() - 8)
            .map_err(|_| "a histogram deflates to more than 4 GiB".to_string())?;
        self.out[4..8].copy_from_slice(&len.to_be_bytes());
        writer
            .write_all(&self.out)
            .map_err(|e| format!("a histogram cannot be written: {e}"))?;
        Ok(self.out.len())
    }
}

/// Where HdrHistogram puts bucket `index`: its lowest value, which falls in the same bucket
/// of any histogram with the same lowest value and precision.
struct Layout {
    unit_magnitude: u32,
    half_magnitude: u32,
}

impl Layout {
    fn of(h: &Header) -> Layout {
        let largest = 2 * 10u64.pow(u32::from(h.digits));
        let count_magnitude = (largest as f64).log2().ceil() as u32;
        Layout {
            unit_magnitude: (h.low.max(1) as f64).log2().floor() as u32,
            half_magnitude: count_magnitude.saturating_sub(1),
        }
    }

    fn value(&self, index: u64) -> Option<u64> {
        let half = 1u64 << self.half_magnitude;
        let mut bucket = (index >> self.half_magnitude) as i64 - 1;
        let mut sub = (index & (half - 1)) + half;
        if bucket < 0 {
            sub -= half;
            bucket = 0;
        }
        let shift = u32::try_from(bucket).ok()? + self.unit_magnitude;
        (shift < 64)
            .then(|| sub << shift)
            .filter(|v| v >> shift == sub)
    }
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_be_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A LEB128 varint of at most 9 bytes (the 9th holds 8 bits), and its length.
fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for i in 0..9 {
        let byte = *b.get(i)?;
        if i == 8 {
            return Some((v | u64::from(byte) << 56, 9));
        }
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::V2DeflateSerializer;

    fn serialized(h: &Histogram<u64>, deflate: bool) -> Vec<u8> {
        let mut out = Vec::new();
        if deflate {
            V2DeflateSerializer::new().serialize(h, &mut out).unwrap();
        } else {
            V2Serializer::new().serialize(h, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn adding_the_payload_is_adding_the_decoded_histogram() {
        let mut adder = Adder::default();
        for (low, digits) in [(1u64, 3u8), (1, 2), (1, 5), (1_000, 3)] {
            let mut expected: Option<Histogram<u64>> = None;
            let mut sum: Option<Histogram<u64>> = None;
            for seed in 0..6u64 {
                let mut h = Histogram::<u64>::new_with_bounds(low, 3_600_000_000, digits).unwrap();
                let mut x = seed * 7919 + 1;
                for _ in 0..(200 * (seed + 1)) {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let v = low + (x >> 33) % (1 << (10 + 3 * seed));
                    h.record_n(v, 1 + (x >> 60)).unwrap();
                }
                let n = adder.add(&mut sum, &serialized(&h, seed % 2 == 0)).unwrap();
                assert_eq!(n, h.len());
                match &mut expected {
                    Some(e) => e.add(&h).unwrap(),
                    None => expected = Some(h),
                }
            }
            let (expected, sum) = (expected.unwrap(), sum.unwrap());
            assert_eq!(sum.len(), expected.len());
            assert_eq!(
                serialized(&sum, true),
                serialized(&expected, true),
                "low {low}, {digits} digits"
            );
        }
        // Interval histograms as the runner writes them: auto-resized from (1, 1000).
        let mut h = Histogram::<u64>::new_with_bounds(1, 1_000, 3).unwrap();
        h.auto(true);
        h.record(9_999_999).unwrap();
        h.record(3).unwrap();
        let mut sum = Some({
            let mut s = Histogram::<u64>::new_with_bounds(1, 1_000, 3).unwrap();
            s.auto(true);
            s
        });
        let text = base64::engine::general_purpose::STANDARD.encode(serialized(&h, true));
        assert_eq!(adder.add_base64(&mut sum, &text).unwrap(), 2);
        let sum = sum.unwrap();
        assert_eq!((sum.min(), sum.max()), (h.min(), h.max()));
        // What the reused compressor writes reads back, as the library's own does.
        let mut d = Deflater::default();
        for h in [&sum, &h, &sum] {
            let mut ours = Vec::new();
            d.serialize(h, &mut ours).unwrap();
            let back: Histogram<u64> = Deserializer::new().deserialize(&mut &ours[..]).unwrap();
            assert_eq!(&back, h);
            // Deflated faster than the library does (merge.rs writes 16x the histograms a
            // shard does), the same V2 payload inside.
            assert_eq!(
                &ours[..4],
                &serialized(h, true)[..4],
                "the compressed cookie"
            );
            let len = u32::from_be_bytes(ours[4..8].try_into().unwrap()) as usize;
            assert_eq!(ours.len(), 8 + len);
            let mut plain = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&ours[8..]), &mut plain)
                .unwrap();
            assert_eq!(
                plain,
                serialized(h, false),
                "the library's V2 bytes, deflated"
            );
        }
        // Not a histogram.
        assert!(adder.add(&mut None, b"nope").is_err());
        assert!(adder.add_base64(&mut None, "!!").is_err());
    }
}
