//! Endpoint plans for the integration tests that drive a transport or driver directly
//! (tests/pg.rs, tests/query_transports.rs, tests/qwp_queries.rs), and the option values they
//! set. Use with `#[path = "common/endpoints.rs"] mod endpoints;`.

#![allow(dead_code)] // each test file uses its own subset

use indexmap::IndexMap;
use wlrun::plan::EndpointPlan;
use wlrun::value::{Text, Value};

/// The endpoint `db.<kind>` of `kind` in `dialect`, with `options`.
pub fn endpoint(kind: &str, dialect: &str, options: &[(&str, Value)]) -> EndpointPlan {
    EndpointPlan {
        target: "db".into(),
        name: kind.into(),
        kind: kind.into(),
        dialect: dialect.into(),
        url: None,
        options: options
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect::<IndexMap<_, _>>(),
    }
}

/// A bare word option value (`statements prepared`).
pub fn word(w: &str) -> Value {
    Value::Symbol(w.to_string())
}

/// A quoted text option value.
pub fn text(s: &str) -> Value {
    Value::Str(Text::lit(s))
}

/// A duration option value of `s` seconds.
pub fn secs(s: f64) -> Value {
    Value::Duration((s * 1e9) as i64)
}
