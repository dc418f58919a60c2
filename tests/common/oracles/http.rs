//! The one piece of HTTP/1.1 the oracles share: reading a request (its target, its headers and
//! its `Content-Length` body) off a keep-alive connection. Part of `oracles` (mod.rs).

use std::io::BufRead;

/// A request as the client sent it.
pub struct Request {
    /// `/write?...`
    pub target: String,
    /// In the order sent, names as written.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The next request's target (`/write?...`) and body; `None` when the client closed.
pub fn read_request(r: &mut impl BufRead) -> std::io::Result<Option<(String, Vec<u8>)>> {
    Ok(read_whole_request(r)?.map(|q| (q.target, q.body)))
}

/// The next request with its headers; `None` when the client closed.
pub fn read_whole_request(r: &mut impl BufRead) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let mut length = 0usize;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
            headers.push((k.to_string(), v.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body)?;
    Ok(Some(Request {
        target,
        headers,
        body,
    }))
}
