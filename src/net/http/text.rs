//! What servers say, read for messages and counts: their text quoted and cut, the error
//! message of an answer body, a JSON value read as a row count.

use serde_json::Value as Json;

/// Server text quoted in error messages is cut to this many characters.
pub const MAX_QUOTED_CHARS: usize = 500;

/// `text` trimmed and cut to `MAX_QUOTED_CHARS` characters on a character boundary, its
/// secrets masked first: a server may say back what it was sent, and a secret cut in two at
/// the limit would no longer be found whole.
pub fn quote_server_text(text: &str) -> String {
    let masked = crate::secrets::mask(text);
    let t = masked.trim();
    match t.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((cut, _)) => format!("{}...", &t[..cut]),
        None => t.to_string(),
    }
}

/// The error text of an answer body: the `message` of a JSON object (QuestDB), else its
/// `error` (InfluxDB, Prometheus, VictoriaMetrics), else the body as text; trimmed and cut.
pub fn server_message(body: &[u8]) -> String {
    if let Ok(serde_json::Value::Object(o)) = serde_json::from_slice::<serde_json::Value>(body) {
        for key in ["message", "error"] {
            if let Some(serde_json::Value::String(s)) = o.get(key) {
                let mut m = s.clone();
                // QuestDB says which line of the batch it rejected: worth keeping.
                if let Some(line) = o.get("line").and_then(serde_json::Value::as_u64) {
                    m = format!("{m} (line {line})");
                }
                return quote_server_text(&m);
            }
        }
    }
    quote_server_text(&String::from_utf8_lossy(body))
}

/// A JSON value as a row count: a non-negative integer (an integral float such as `42.0`
/// counts too; `42.5`, negatives, null and text do not).
pub fn json_count(v: &Json) -> Result<u64, String> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    if let Some(n) = v.as_i64() {
        return Err(format!("returned {n}, which is negative"));
    }
    if let Some(f) = v.as_f64() {
        return float_count(f).ok_or_else(|| format!("returned {f}, which is not a whole count"));
    }
    match v {
        Json::Null => Err("returned NULL".to_string()),
        other => Err(format!(
            "returned {}, which is not a number",
            quote_server_text(&other.to_string())
        )),
    }
}

/// `f` as a count if it is finite, non-negative and whole, and exact in an `f64`.
pub fn float_count(f: f64) -> Option<u64> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= EXACT).then_some(f as u64)
}
