//! The secrets of a run, and the one masker every output goes through.
//!
//! A server may say back what it was sent (a 401 quoting the request's headers), so a secret
//! wlrun sent can come back inside an error it keeps, prints and writes. What is a secret:
//!
//! - a value `env()` read from the environment, of 4 characters or more ([`MIN_CHARS`]), unless
//!   it reads as a number (ports and counts come from the environment too, and masking `8000`
//!   would mask it inside `18000 rows`); a default written in the file is none: the file says it;
//! - the credentials of an endpoint (its URL's `user:password@`, its `user`/`password`
//!   options) as they travel: `user:password`, and its base64 inside `Authorization: Basic`.
//!   A password written in the file is hidden where wlrun shows it as a password (a URL, an
//!   option: [`redact_url`]) but not as a bare word elsewhere: the workload copied beside the
//!   report says it anyway, and `wlrun` or `quest` masked in every line would garble the output
//!   and hide nothing.
//!
//! What is no secret, even when `env()` read it: an endpoint's user name, host and database
//! ([`remember_url`], the `user` option). wlrun prints them as it connects, and `PGUSER=wlrun`
//! masked would turn wlrun's own name into `***` in every line; a password equal to its user
//! name hides nothing either.
//!
//! Each secret is masked as `***` in the forms it could take on the way out: plain,
//! percent-encoded (a server putting it into a URL), base64 (with and without padding),
//! escaped for JSON and for HTML.
//!
//! The secrets are kept for the process, not carried beside the plan: an error is made far
//! below anything that sees the plan (a connection's, a server's answer quoted), and every
//! message, report and file must be masked wherever it is made. Masking touches error text and
//! outputs only, never a request that succeeded; with no secret known it is one atomic load.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use base64::Engine as _;

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Shorter values are not masked: `abc` would be masked inside every word that holds it.
pub const MIN_CHARS: usize = 4;

/// Every form of every secret, longest first (a form inside a longer one goes after it).
static FORMS: RwLock<Vec<String>> = RwLock::new(Vec::new());
/// Set once a form is known: until then masking costs one load.
static ANY: AtomicBool = AtomicBool::new(false);
/// Values an endpoint shows as it connects (user names, hosts, databases): never masked.
static PUBLIC: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// A value read from the environment by `env()`.
pub fn remember(value: &str) {
    if value.chars().count() < MIN_CHARS || is_number(value) || known(value) || public(value) {
        return;
    }
    add(forms(value));
}

/// A value an endpoint shows (its user name, host or database), from the environment or not:
/// not a secret, and no longer masked if `env()` made it one.
pub fn remember_public(value: &str) {
    if value.is_empty() || public(value) {
        return;
    }
    PUBLIC
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .push(value.to_string());
    let gone = forms(value);
    FORMS
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|f| !gone.contains(f));
}

fn public(value: &str) -> bool {
    PUBLIC
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|p| p == value)
}

/// Credentials sent as HTTP Basic authorization (or in a URL): `user:password` and its base64,
/// which name the password whatever its length or origin.
pub fn remember_credentials(user: &str, password: &str) {
    if password.is_empty() {
        return;
    }
    let pair = format!("{user}:{password}");
    if known(&pair) {
        return;
    }
    let b64 = base64::engine::general_purpose::STANDARD.encode(&pair);
    let mut all = forms(&b64);
    all.extend(forms(&pair));
    add(all);
}

/// The credentials of a URL (`scheme://user:password@host`), as written and percent-decoded;
/// its user name, host and database are public.
pub fn remember_url(url: &str) {
    for part in shown_parts(url) {
        remember_public(&part);
    }
    let Some((user, password)) = userinfo(url) else {
        return;
    };
    remember_credentials(user, password);
    if let (Some(u), Some(p)) = (percent_decode(user), percent_decode(password)) {
        remember_credentials(&u, &p);
    }
}

/// `text` with every known secret replaced by [`MASK`].
pub fn mask(text: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(text);
    }
    let forms = FORMS.read().unwrap_or_else(|e| e.into_inner());
    let mut out = Cow::Borrowed(text);
    for f in forms.iter() {
        if out.contains(f.as_str()) {
            out = Cow::Owned(out.replace(f.as_str(), MASK));
        }
    }
    out
}

/// [`mask`] for an owned string, without copying it when nothing is masked.
pub fn masked(text: String) -> String {
    match mask(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(m) => m,
    }
}

/// JSON text with the secrets masked in its string values only: numbers, `true`, keys and the
/// structure stay as they are, so the file still parses and means what it meant.
pub fn mask_json(json: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(json);
    }
    let b = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut copied = 0;
    let mut changed = false;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut end = start;
        while end < b.len() && b[end] != b'"' {
            end += if b[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(b.len());
        let next = b[(end + 1).min(b.len())..]
            .iter()
            .find(|c| !c.is_ascii_whitespace());
        if next != Some(&b':') {
            if let Cow::Owned(m) = mask(&json[start..end]) {
                out.push_str(&json[copied..start]);
                out.push_str(&m);
                copied = end;
                changed = true;
            }
        }
        i = end + 1;
    }
    if !changed {
        return Cow::Borrowed(json);
    }
    out.push_str(&json[copied..]);
    Cow::Owned(out)
}

/// An HTML page with the secrets masked in its text only: tags, attributes and style sheets
/// stay as they are, so a secret that is also a word of the markup cannot break the page.
pub fn mask_html(html: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(html);
    }
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut in_style = false;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        out.push_str(&if in_style {
            Cow::Borrowed(text)
        } else {
            mask(text)
        });
        let gt = rest[lt..].find('>').map_or(rest.len(), |g| lt + g + 1);
        let tag = &rest[lt..gt];
        let name = tag.trim_start_matches(['<', '/']).to_ascii_lowercase();
        if name.starts_with("style") || name.starts_with("script") {
            in_style = !tag.starts_with("</");
        }
        out.push_str(tag);
        rest = &rest[gt..];
    }
    out.push_str(&if in_style {
        Cow::Borrowed(rest)
    } else {
        mask(rest)
    });
    Cow::Owned(out)
}

/// The URL with its password shown as `***`: in `user:password@` and in a `password` or
/// `sslpassword` query parameter. A password written `${env:NAME}` (a plan's listing of an
/// `env()` part) is kept: it names the variable, not its value.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_string();
    };
    let after = &url[scheme_end + 3..];
    let auth_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let mut out = match after[..auth_end].rfind('@') {
        Some(at) => {
            let userinfo = &after[..at];
            let hidden = match userinfo.split_once(':') {
                Some((user, pass)) if is_env_name(pass) => format!("{user}:{pass}"),
                Some((user, _)) => format!("{user}:{MASK}"),
                None => userinfo.to_string(),
            };
            format!("{}{hidden}{}", &url[..scheme_end + 3], &after[at..])
        }
        None => url.to_string(),
    };
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v))
                    if (k.eq_ignore_ascii_case("password")
                        || k.eq_ignore_ascii_case("sslpassword"))
                        && !is_env_name(v) =>
                {
                    format!("{k}={MASK}")
                }
                _ => pair.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

/// `${env:NAME}`: how a plan lists an `env()` part.
fn is_env_name(s: &str) -> bool {
    s.strip_prefix("${env:")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|n| !n.is_empty() && !n.contains(['$', '{', '}']))
}

/// The `user` and `password` of `scheme://user:password@host/...`, as written.
fn userinfo(url: &str) -> Option<(&str, &str)> {
    let after = &url[url.find("://")? + 3..];
    let authority = &after[..after.find(['/', '?', '#']).unwrap_or(after.len())];
    let (info, _) = authority.rsplit_once('@')?;
    info.split_once(':')
}

/// The user name, host and first path segment (a database) of `scheme://user:pw@host:port/db`,
/// percent-decoded.
fn shown_parts(url: &str) -> Vec<String> {
    let Some(at) = url.find("://") else {
        return Vec::new();
    };
    let after = &url[at + 3..];
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..end];
    let (info, host_port) = match authority.rsplit_once('@') {
        Some((info, hp)) => (Some(info), hp),
        None => (None, authority),
    };
    // `[::1]:5432` keeps its brackets; `host:5432` drops its port.
    let host = match host_port.find(']') {
        Some(close) if host_port.starts_with('[') => &host_port[..=close],
        _ => host_port.rsplit_once(':').map_or(host_port, |(h, _)| h),
    };
    let user = info.map(|i| i.split_once(':').map_or(i, |(u, _)| u));
    let db = after[end..]
        .strip_prefix('/')
        .map(|p| &p[..p.find(['/', '?', '#']).unwrap_or(p.len())]);
    [user, Some(host), db]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .map(|p| percent_decode(p).unwrap_or_else(|| p.to_string()))
        .collect()
}

fn is_number(s: &str) -> bool {
    s.parse::<f64>().is_ok()
}

/// The forms a secret takes on the way out.
fn forms(s: &str) -> Vec<String> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut all = vec![
        s.to_string(),
        percent_encoded(s, false),
        percent_encoded(s, true),
        b64.encode(s),
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(s),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s),
        serde_json::to_string(s)
            .map(|q| q[1..q.len() - 1].to_string())
            .unwrap_or_default(),
        html_escaped(s),
    ];
    all.retain(|f| f.chars().count() >= MIN_CHARS);
    all
}

/// A connection reads its secrets again each time it is made: once known, that costs a look.
fn known(form: &str) -> bool {
    ANY.load(Ordering::Acquire)
        && FORMS
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|f| f == form)
}

fn add(new: Vec<String>) {
    let mut forms = FORMS.write().unwrap_or_else(|e| e.into_inner());
    let before = forms.len();
    for f in new {
        if !forms.contains(&f) {
            forms.push(f);
        }
    }
    if forms.len() != before {
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        ANY.store(true, Ordering::Release);
    }
}

/// Every byte but the unreserved ones (RFC 3986) as `%XX`.
fn percent_encoded(s: &str, lower: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ if lower => out.push_str(&format!("%{b:02x}")),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn html_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests;
