//! The client's messages on `/read/v1`: QUERY_REQUEST and CREDIT, both without the 12-byte
//! QWP header (see the module comment of `egress` for how binds are typed).

use super::kind;
use crate::qwp::{put_str, put_varint, types};
use crate::value::BindValue;

/// Appends a QUERY_REQUEST to `out`. `initial_credit`: the bytes of RESULT_BATCHes (header
/// included) the server may send before it waits for CREDIT; 0 is no limit (TCP's
/// back-pressure paces the server, as with the reference clients). `query_flags` is written
/// only when it is `Some` and not 0 (the trailer must be absent unless SERVER_INFO advertised
/// `CAP_QUERY_FLAGS`, and 0 means nothing). Lengths are the caller's to check
/// (`MAX_SQL_BYTES`, `MAX_BINDS`, the server's message size): a text bind past 4 GiB cannot be
/// described and is cut at the wire's limit.
pub fn encode_query_request(
    out: &mut Vec<u8>,
    request_id: i64,
    sql: &str,
    binds: &[BindValue],
    initial_credit: u64,
    query_flags: Option<u64>,
) {
    out.push(kind::QUERY_REQUEST);
    out.extend_from_slice(&request_id.to_le_bytes());
    put_str(out, sql);
    put_varint(out, initial_credit);
    put_varint(out, binds.len() as u64);
    for b in binds {
        put_bind(out, b);
    }
    if let Some(flags) = query_flags.filter(|&f| f != 0) {
        put_varint(out, flags);
    }
}

/// Appends a CREDIT giving request `request_id` `additional_bytes` more of budget.
pub fn encode_credit(out: &mut Vec<u8>, request_id: i64, additional_bytes: u64) {
    out.push(kind::CREDIT);
    out.extend_from_slice(&request_id.to_le_bytes());
    put_varint(out, additional_bytes);
}

fn put_bind(out: &mut Vec<u8>, b: &BindValue) {
    match b {
        BindValue::Null => out.extend_from_slice(&[types::VARCHAR, 1, 1]),
        BindValue::Int(v) => {
            out.extend_from_slice(&[types::LONG, 0]);
            out.extend_from_slice(&v.to_le_bytes());
        }
        BindValue::Float(v) => {
            out.extend_from_slice(&[types::DOUBLE, 0]);
            out.extend_from_slice(&v.to_le_bytes());
        }
        BindValue::Bool(v) => out.extend_from_slice(&[types::BOOLEAN, 0, u8::from(*v)]),
        BindValue::Text(s) => {
            let len = u32::try_from(s.len()).unwrap_or(u32::MAX);
            out.extend_from_slice(&[types::VARCHAR, 0]);
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&s.as_bytes()[..len as usize]);
        }
        BindValue::Timestamp(ns) => {
            out.extend_from_slice(&[types::TIMESTAMP, 0]);
            out.extend_from_slice(&ns.div_euclid(1000).to_le_bytes());
        }
    }
}
