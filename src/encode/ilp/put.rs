//! The byte writers of the ILP encoder: escaping by context and integer digits without a
//! formatter. They sit under the encoder's hot loop, and their `#[inline]`s are part of its
//! measured speed.

pub(super) const MEASUREMENT: u8 = 1;
pub(super) const KEY: u8 = 2;
pub(super) const TAG_VALUE: u8 = 4;
pub(super) const QUOTED: u8 = 8;

/// For each byte, the contexts in which it takes a backslash.
static ESCAPE: [u8; 256] = escape_table();

const fn escape_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    t[b',' as usize] = MEASUREMENT | KEY | TAG_VALUE;
    t[b' ' as usize] = MEASUREMENT | KEY | TAG_VALUE;
    t[b'=' as usize] = KEY | TAG_VALUE;
    t[b'\\' as usize] = MEASUREMENT | KEY | TAG_VALUE | QUOTED;
    t[b'\n' as usize] = TAG_VALUE | QUOTED;
    t[b'\r' as usize] = TAG_VALUE | QUOTED;
    t[b'"' as usize] = QUOTED;
    t
}

/// Appends `s` with a backslash before every byte that needs one in `context`.
pub(super) fn write_escaped(out: &mut Vec<u8>, s: &[u8], context: u8) {
    let mut run = 0;
    for (i, &b) in s.iter().enumerate() {
        if ESCAPE[b as usize] & context != 0 {
            out.extend_from_slice(&s[run..i]);
            out.push(b'\\');
            run = i;
        }
    }
    out.extend_from_slice(&s[run..]);
}

/// Writes `s` escaped for `context` at `pos` (room for `2 * s.len()` bytes); returns the end.
#[inline]
pub(super) fn put_escaped(line: &mut [u8], pos: usize, s: &[u8], context: u8) -> usize {
    if !s.iter().any(|&b| ESCAPE[b as usize] & context != 0) {
        line[pos..pos + s.len()].copy_from_slice(s);
        return pos + s.len();
    }
    let mut at = pos;
    for &b in s {
        if ESCAPE[b as usize] & context != 0 {
            line[at] = b'\\';
            at += 1;
        }
        line[at] = b;
        at += 1;
    }
    at
}

const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes `v` in decimal at `pos` (room for 20 bytes); returns the end.
#[inline(always)]
fn put_u64(line: &mut [u8], pos: usize, mut v: u64) -> usize {
    if v < 10 {
        line[pos] = b'0' + v as u8;
        return pos + 1;
    }
    if v < 100 {
        let d = v as usize * 2;
        line[pos..pos + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
        return pos + 2;
    }
    let end = pos + v.checked_ilog10().unwrap_or(0) as usize + 1;
    let mut i = end;
    while v >= 100 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        line[i..i + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    }
    if v >= 10 {
        let d = v as usize * 2;
        line[i - 2..i].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    } else {
        line[i - 1] = b'0' + v as u8;
    }
    end
}

/// Writes `v` in decimal at `pos` (room for 20 bytes); returns the end.
#[inline(always)]
pub(super) fn put_i64(line: &mut [u8], pos: usize, v: i64) -> usize {
    if v < 0 {
        line[pos] = b'-';
        put_u64(line, pos + 1, v.unsigned_abs())
    } else {
        put_u64(line, pos, v as u64)
    }
}

/// `0i` ... `255i`, each padded to 4 bytes, and their lengths: a small long is one copy.
static SMALL_LONGS: ([[u8; 4]; 256], [u8; 256]) = small_longs();

const fn small_longs() -> ([[u8; 4]; 256], [u8; 256]) {
    let mut text = [[0u8; 4]; 256];
    let mut len = [0u8; 256];
    let mut v = 0;
    while v < 256 {
        let digits = [(v / 100) as u8, (v / 10 % 10) as u8, (v % 10) as u8];
        let skip = if v >= 100 {
            0
        } else if v >= 10 {
            1
        } else {
            2
        };
        let mut i = 0;
        while skip + i < 3 {
            text[v][i] = b'0' + digits[skip + i];
            i += 1;
        }
        text[v][i] = b'i';
        len[v] = (i + 1) as u8;
        v += 1;
    }
    (text, len)
}

/// Writes `v` and the ILP integer suffix `i` at `pos` (room for 21 bytes); returns the end.
#[inline(always)]
pub(super) fn put_long(line: &mut [u8], pos: usize, v: i64) -> usize {
    if (v as u64) < 256 {
        line[pos..pos + 4].copy_from_slice(&SMALL_LONGS.0[v as usize]);
        return pos + SMALL_LONGS.1[v as usize] as usize;
    }
    let p = put_i64(line, pos, v);
    line[p] = b'i';
    p + 1
}
