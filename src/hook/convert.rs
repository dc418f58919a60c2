//! Between Rust and Rhai: params into Rhai values, what `request()` returns into a request, a
//! response into the map `response()` sees, and what it returns into a verdict.

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::http::uri::PathAndQuery;
use hyper::{HeaderMap, Method};
use rhai::{Array, Dynamic, Map, FLOAT, INT};

use super::{Built, HttpRequest, ResponseView, Verdict};
use crate::value::BindValue;
use crate::value::Value;

/// What a value is, as messages say it.
pub(super) fn kind(d: &Dynamic) -> &'static str {
    if d.is_unit() {
        "()"
    } else if d.is_int() {
        "an integer"
    } else if d.is_float() {
        "a number"
    } else if d.is_bool() {
        "a boolean"
    } else if d.is_string() {
        "a string"
    } else if d.is_char() {
        "a character"
    } else if d.is_array() {
        "an array"
    } else if d.is_blob() {
        "a BLOB"
    } else if d.is_map() {
        "a map"
    } else if d.is_fnptr() {
        "a function pointer"
    } else if d.is::<super::ctx::Ctx>() {
        "the ctx object"
    } else if d.is::<super::ctx::RngHandle>() {
        "the rng object"
    } else {
        "a value of another type"
    }
}

/// A param as the script sees it in `ctx.params`.
pub(super) fn param(v: &Value) -> Dynamic {
    match v {
        Value::Int(i) => Dynamic::from_int(*i),
        Value::Float(f) => Dynamic::from_float(*f),
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::None => Dynamic::UNIT,
        // Secrets resolve as they do for the run's connection strings; a missing variable
        // without a default shows as `${env:NAME}`.
        Value::Str(t) => t.resolve_env().unwrap_or_else(|_| t.redacted()).into(),
        Value::Symbol(s) => s.clone().into(),
        Value::Duration(ns) => Dynamic::from_int(*ns),
        Value::List(items) => Dynamic::from_array(items.iter().map(param).collect()),
        Value::Map(entries) => Dynamic::from_map(
            entries
                .iter()
                .map(|(k, v)| (k.as_str().into(), param(v)))
                .collect(),
        ),
        other => other.to_string().into(),
    }
}

pub(super) fn params(entries: &[(String, Value)]) -> Map {
    entries
        .iter()
        .map(|(k, v)| (k.as_str().into(), param(v)))
        .collect()
}

const REQUEST_SHAPE: &str = "a map #{method, path, headers, body} or #{sql, binds}";

/// The headers a worker's hook returned last, and what they parsed into: a hook returns the
/// same headers (a map literal) on nearly every call, and parsing names and values into a
/// `HeaderMap` was a fifth of a call's cost.
#[derive(Default)]
pub(super) struct HeaderCache {
    last: Vec<(rhai::ImmutableString, rhai::ImmutableString)>,
    parsed: Arc<HeaderMap>,
}

impl HeaderCache {
    /// The parsed headers, if `h` has the same string names and values as last time.
    fn hit(&self, h: &Map) -> Option<Arc<HeaderMap>> {
        if h.len() != self.last.len() || self.last.is_empty() {
            return None;
        }
        for ((name, value), (last_name, last_value)) in h.iter().zip(&self.last) {
            let value = value.read_lock::<rhai::ImmutableString>()?;
            if name.as_str() != last_name.as_str() || value.as_str() != last_value.as_str() {
                return None;
            }
        }
        Some(self.parsed.clone())
    }

    /// Remembers `h` (when its values are all strings) as parsed into `parsed`.
    fn keep(&mut self, h: &Map, parsed: &Arc<HeaderMap>) {
        self.last.clear();
        for (name, value) in h {
            match value.read_lock::<rhai::ImmutableString>() {
                Some(v) => self.last.push((name.as_str().into(), v.clone())),
                None => {
                    self.last.clear();
                    return;
                }
            }
        }
        self.parsed = parsed.clone();
    }
}

/// What `request()` returned, as a request.
pub(super) fn built(ret: Dynamic, cache: &mut HeaderCache) -> Result<Built, String> {
    let ret = ret.flatten();
    if ret.is_string() {
        let path = ret.into_string().unwrap_or_default();
        return Ok(Built::Http(HttpRequest {
            method: Method::GET,
            path: checked_path(path)?,
            headers: Arc::default(),
            body: Bytes::new(),
        }));
    }
    if !ret.is_map() {
        return Err(format!(
            "request() must return {REQUEST_SHAPE}; it returned {}",
            kind(&ret)
        ));
    }
    let mut map = ret.cast::<Map>();
    if map.contains_key("sql") {
        if let Some(k) = map.keys().find(|k| !matches!(k.as_str(), "sql" | "binds")) {
            return Err(format!(
                "request() returned a SQL map with the key `{k}`; a SQL map has only `sql` and `binds`"
            ));
        }
        let sql = map.remove("sql").unwrap_or_default().flatten();
        if !sql.is_string() {
            return Err(format!(
                "request() returned `sql` as {}; it must be a string",
                kind(&sql)
            ));
        }
        let sql = sql.into_string().unwrap_or_default();
        let binds = match map.remove("binds").map(Dynamic::flatten) {
            None => Vec::new(),
            Some(b) if b.is_unit() => Vec::new(),
            Some(b) if b.is_array() => b
                .cast::<Array>()
                .into_iter()
                .enumerate()
                .map(|(i, v)| bind(i, v))
                .collect::<Result<_, _>>()?,
            Some(b) => {
                return Err(format!(
                    "request() returned `binds` as {}; it must be an array",
                    kind(&b)
                ))
            }
        };
        return Ok(Built::Sql { sql, binds });
    }
    // One pass over the map, taking each value as it is (no lookups, no removals): this runs
    // for every request a hook builds.
    let (mut method, mut path, mut headers_value, mut body) = (None, None, None, None);
    for (k, v) in map {
        let slot = match k.as_str() {
            "method" => &mut method,
            "path" => &mut path,
            "headers" => &mut headers_value,
            "body" => &mut body,
            _ => {
                return Err(format!(
                    "request() returned the key `{k}`; an HTTP request map has `method`, `path`, `headers` and `body` (a SQL one `sql` and `binds`)"
                ))
            }
        };
        *slot = Some(v.flatten());
    }
    let method = match method {
        None => Method::GET,
        Some(m) if m.is_unit() => Method::GET,
        Some(m) => {
            let Ok(s) = m.as_immutable_string_ref() else {
                return Err(format!(
                    "request() returned `method` as {}; it must be a string such as \"GET\"",
                    kind(&m)
                ));
            };
            let upper;
            let s = if s.bytes().any(|b| b.is_ascii_lowercase()) {
                upper = s.to_ascii_uppercase();
                upper.as_str()
            } else {
                s.as_str()
            };
            Method::from_bytes(s.as_bytes())
                .map_err(|_| format!("request() returned the invalid HTTP method {s:?}"))?
        }
    };
    let path = match path {
        None => return Err("request() returned a map without `path`".to_string()),
        Some(p) if p.is_string() => checked_path(p.into_string().unwrap_or_default())?,
        Some(p) => {
            return Err(format!(
                "request() returned `path` as {}; it must be a string starting with `/`",
                kind(&p)
            ))
        }
    };
    let mut headers = Arc::<HeaderMap>::default();
    match headers_value {
        None => {}
        Some(h) if h.is_unit() => {}
        Some(h) => {
            if !h.is_map() {
                return Err(format!(
                    "request() returned `headers` as {}; it must be a map of name to value",
                    kind(&h)
                ));
            }
            let h = h.cast::<Map>();
            headers = match cache.hit(&h) {
                Some(parsed) => parsed,
                None => {
                    let parsed = Arc::new(parsed_headers(&h)?);
                    cache.keep(&h, &parsed);
                    parsed
                }
            };
        }
    }
    let body = match body {
        None => Bytes::new(),
        Some(b) if b.is_unit() => Bytes::new(),
        Some(b) if b.is_string() => Bytes::from(b.into_string().unwrap_or_default()),
        Some(b) if b.is_blob() => Bytes::from(b.into_blob().unwrap_or_default()),
        Some(b) if b.is_map() || b.is_array() => {
            let mut out = Vec::with_capacity(128);
            json(&mut out, &b).map_err(|e| format!("request() returned a `body` {e}"))?;
            if !headers.contains_key(CONTENT_TYPE) {
                Arc::make_mut(&mut headers)
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            }
            Bytes::from(out)
        }
        Some(b) => {
            return Err(format!(
                "request() returned `body` as {}; it must be a string, a BLOB, a map or an array (sent as JSON) or ()",
                kind(&b)
            ))
        }
    };
    Ok(Built::Http(HttpRequest {
        method,
        path,
        headers,
        body,
    }))
}

/// A hook's headers map as a `HeaderMap`.
fn parsed_headers(h: &Map) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::with_capacity(h.len());
    for (name, value) in h {
        let hn = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            format!(
                "request() returned the invalid header name {:?}",
                name.as_str()
            )
        })?;
        let value = value.flatten_clone();
        let hv = if let Ok(s) = value.as_immutable_string_ref() {
                HeaderValue::from_str(s.as_str())
            } else if let Ok(i) = value.as_int() {
                Ok(HeaderValue::from(i))
            } else if let Ok(f) = value.as_float() {
                HeaderValue::from_str(&f.to_string())
            } else if let Ok(b) = value.as_bool() {
                Ok(HeaderValue::from_static(if b { "true" } else { "false" }))
            } else {
                return Err(format!(
                    "request() returned header `{name}` as {}; a header value is a string or a number",
                    kind(&value)
                ));
            }
            .map_err(|_| {
                format!(
                    "request() returned header `{name}` with a value that is not a valid header value (control characters?)"
                )
            })?;
        headers.append(hn, hv);
    }
    Ok(headers)
}

fn checked_path(path: String) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err(format!(
            "request() returned the path {path:?}; it must start with `/`"
        ));
    }
    if PathAndQuery::try_from(path.as_str()).is_err() {
        return Err(format!(
            "request() returned the path {path:?}, which is not a valid URL path (spaces and control characters must be percent-encoded)"
        ));
    }
    Ok(path)
}

fn bind(i: usize, v: Dynamic) -> Result<BindValue, String> {
    let v = v.flatten();
    Ok(if v.is_unit() {
        BindValue::Null
    } else if let Ok(n) = v.as_int() {
        BindValue::Int(n)
    } else if let Ok(f) = v.as_float() {
        BindValue::Float(f)
    } else if let Ok(b) = v.as_bool() {
        BindValue::Bool(b)
    } else if let Ok(c) = v.as_char() {
        BindValue::Text(c.to_string())
    } else if v.is_string() {
        BindValue::Text(v.into_string().unwrap_or_default())
    } else {
        return Err(format!(
            "request() returned binds[{i}] as {}; a bind is an integer, a number, a boolean, a string or ()",
            kind(&v)
        ));
    })
}

/// `d` as JSON text. Maps keep Rhai's key order (sorted).
pub(super) fn json(out: &mut Vec<u8>, d: &Dynamic) -> Result<(), String> {
    if d.is_shared() {
        return json(out, &d.flatten_clone());
    }
    if d.is_unit() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = d.as_bool() {
        out.extend_from_slice(if b { b"true" } else { b"false" });
    } else if let Ok(i) = d.as_int() {
        out.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
    } else if let Ok(f) = d.as_float() {
        json_float(out, f)?;
    } else if let Ok(s) = d.as_immutable_string_ref() {
        json_string(out, s.as_str());
    } else if let Ok(c) = d.as_char() {
        json_string(out, c.encode_utf8(&mut [0; 4]));
    } else if let Ok(a) = d.as_array_ref() {
        out.push(b'[');
        for (i, v) in a.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json(out, v)?;
        }
        out.push(b']');
    } else if let Ok(b) = d.as_blob_ref() {
        out.push(b'[');
        for (i, v) in b.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(itoa::Buffer::new().format(*v).as_bytes());
        }
        out.push(b']');
    } else if let Ok(m) = d.as_map_ref() {
        out.push(b'{');
        for (i, (k, v)) in m.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json_string(out, k.as_str());
            out.push(b':');
            json(out, v)?;
        }
        out.push(b'}');
    } else {
        return Err(format!("holds {}, which has no JSON form", kind(d)));
    }
    Ok(())
}

fn json_float(out: &mut Vec<u8>, f: FLOAT) -> Result<(), String> {
    if !f.is_finite() {
        return Err(format!("holds the number {f}, which has no JSON form"));
    }
    if f.fract() == 0.0 && f.abs() < 1e15 {
        // Whole numbers as integers with a fraction, as Rhai prints them: 2.0.
        out.extend_from_slice(itoa::Buffer::new().format(f as i64).as_bytes());
        out.extend_from_slice(b".0");
    } else {
        out.extend_from_slice(ryu::Buffer::new().format_finite(f).as_bytes());
    }
    Ok(())
}

fn json_string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// The map `response(ctx, resp)` sees.
pub(super) fn response_map(resp: &ResponseView<'_>) -> Dynamic {
    let mut m = Map::new();
    m.insert("status".into(), Dynamic::from_int(INT::from(resp.status)));
    m.insert(
        "body".into(),
        String::from_utf8_lossy(resp.body).into_owned().into(),
    );
    if let Some(headers) = resp.headers {
        let mut h = Map::new();
        for (name, value) in headers {
            let v = String::from_utf8_lossy(value.as_bytes());
            match h.get_mut(name.as_str()) {
                // Repeated headers are joined as HTTP allows: `a, b`.
                Some(prev) => {
                    let joined = format!("{prev}, {v}");
                    *prev = joined.into();
                }
                None => {
                    h.insert(name.as_str().into(), v.into_owned().into());
                }
            }
        }
        m.insert("headers".into(), Dynamic::from_map(h));
    }
    m.insert(
        "rows".into(),
        Dynamic::from_int(INT::try_from(resp.rows).unwrap_or(INT::MAX)),
    );
    m.insert(
        "latency_us".into(),
        Dynamic::from_int(INT::try_from(resp.latency.as_micros()).unwrap_or(INT::MAX)),
    );
    Dynamic::from_map(m)
}

pub(super) const REJECTED: &str = "the response hook rejected the response";

/// What `response()` returned, as a verdict.
pub(super) fn verdict(ret: Dynamic) -> Result<Verdict, String> {
    let ret = ret.flatten();
    if ret.is_unit() {
        return Ok(Verdict::Ok);
    }
    if let Ok(b) = ret.as_bool() {
        return Ok(if b {
            Verdict::Ok
        } else {
            Verdict::Error(REJECTED.to_string())
        });
    }
    if ret.is_string() {
        let s = ret.into_string().unwrap_or_default();
        return Ok(Verdict::Error(if s.is_empty() {
            REJECTED.to_string()
        } else {
            s
        }));
    }
    let expected = "response() must return (), true, false, an error message or #{ok, error}";
    if !ret.is_map() {
        return Err(format!("{expected}; it returned {}", kind(&ret)));
    }
    let mut map = ret.cast::<Map>();
    if let Some(k) = map.keys().find(|k| !matches!(k.as_str(), "ok" | "error")) {
        return Err(format!(
            "response() returned a map with the key `{k}`; the map has `ok` and an optional `error`"
        ));
    }
    let ok = match map.remove("ok").map(Dynamic::flatten) {
        Some(ok) => ok.as_bool().map_err(|_| {
            format!(
                "response() returned `ok` as {}; it must be true or false",
                kind(&ok)
            )
        })?,
        None => return Err(format!("{expected}; it returned a map without `ok`")),
    };
    let error = match map.remove("error").map(Dynamic::flatten) {
        None => None,
        Some(e) if e.is_unit() => None,
        Some(e) if e.is_string() => Some(e.into_string().unwrap_or_default()),
        Some(e) => {
            return Err(format!(
                "response() returned `error` as {}; it must be a string",
                kind(&e)
            ))
        }
    };
    Ok(if ok {
        Verdict::Ok
    } else {
        Verdict::Error(
            error
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| REJECTED.to_string()),
        )
    })
}
