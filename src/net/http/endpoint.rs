//! What an endpoint's options say about its HTTP connection: text and flag options, the
//! headers every request carries, the connect timeout, and the error of options that cannot work.

use std::time::Duration;

use base64::Engine as _;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};

use super::HttpUrl;
use crate::net::error::{DriverError, ErrorClass};
use crate::plan::EndpointPlan;
use crate::value::Value;

/// A text option of an endpoint, with `env(...)` parts resolved now.
pub fn option_text(endpoint: &EndpointPlan, name: &str) -> Result<Option<String>, DriverError> {
    match endpoint.options.get(name) {
        None | Some(Value::None) => Ok(None),
        Some(Value::Str(t)) => t
            .resolve_env()
            .map(Some)
            .map_err(|e| config_error(endpoint, format!("option `{name}`: {e}"))),
        Some(other) => Err(config_error(
            endpoint,
            format!("option `{name}` must be a string, not {}", other.kind()),
        )),
    }
}

/// A boolean option, `false` when absent.
pub fn option_flag(endpoint: &EndpointPlan, name: &str) -> Result<bool, DriverError> {
    match endpoint.options.get(name) {
        None | Some(Value::None) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(config_error(
            endpoint,
            format!(
                "option `{name}` must be true or false, not {}",
                other.kind()
            ),
        )),
    }
}

/// An endpoint whose options cannot work: the connection is never attempted.
pub fn config_error(endpoint: &EndpointPlan, message: impl std::fmt::Display) -> DriverError {
    DriverError::new(
        ErrorClass::Connect,
        format!("endpoint {}.{}: {message}", endpoint.target, endpoint.name),
        true,
    )
}

/// The headers every request of an endpoint carries: its `headers` option, and Basic
/// authentication from `user`/`password` (or the URL's `user:password@`).
pub(crate) fn endpoint_headers(
    endpoint: &EndpointPlan,
    url: &HttpUrl,
) -> Result<HeaderMap, DriverError> {
    let mut headers = HeaderMap::new();
    match endpoint.options.get("headers") {
        None | Some(Value::None) => {}
        Some(Value::Map(entries)) => {
            for (name, value) in entries {
                let Value::Str(text) = value else {
                    return Err(config_error(
                        endpoint,
                        format!("header `{name}` must be a string, not {}", value.kind()),
                    ));
                };
                let value = text
                    .resolve_env()
                    .map_err(|e| config_error(endpoint, format!("header `{name}`: {e}")))?;
                let hname = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    config_error(
                        endpoint,
                        format!("`{name}` is not a valid HTTP header name"),
                    )
                })?;
                // These decide how the request is framed; a different value from the user
                // would desynchronise the connection.
                if [
                    header::HOST,
                    header::CONTENT_LENGTH,
                    header::TRANSFER_ENCODING,
                    header::CONNECTION,
                ]
                .contains(&hname)
                {
                    return Err(config_error(
                        endpoint,
                        format!("header `{name}` is set by wlrun and cannot be overridden"),
                    ));
                }
                let hvalue = HeaderValue::from_str(&value).map_err(|_| {
                    config_error(
                        endpoint,
                        format!("the value of header `{name}` is not valid in HTTP"),
                    )
                })?;
                headers.append(hname, hvalue);
            }
        }
        Some(other) => {
            return Err(config_error(
                endpoint,
                format!("option `headers` must be a map, not {}", other.kind()),
            ))
        }
    }
    let user = option_text(endpoint, "user")?;
    let password = option_text(endpoint, "password")?;
    if (user.is_some() || password.is_some()) && url.user.is_some() {
        return Err(config_error(
            endpoint,
            "credentials are given both in the URL and in the `user`/`password` options; keep one",
        ));
    }
    let (user, password) = match (user, password) {
        (None, None) => (url.user.clone(), url.password.clone()),
        (None, Some(_)) => {
            return Err(config_error(
                endpoint,
                "option `password` needs a `user` for HTTP Basic authentication",
            ))
        }
        (u, p) => (u, p),
    };
    if let Some(user) = user {
        if headers.contains_key(header::AUTHORIZATION) {
            return Err(config_error(
                endpoint,
                "both `user` and an `Authorization` header are set; keep one",
            ));
        }
        if user.contains(':') {
            return Err(config_error(
                endpoint,
                "a Basic authentication user name cannot contain `:`",
            ));
        }
        let token = base64::engine::general_purpose::STANDARD
            .encode(format!("{user}:{}", password.unwrap_or_default()));
        let mut value = HeaderValue::from_str(&format!("Basic {token}")).map_err(|_| {
            config_error(endpoint, "the credentials cannot be sent in an HTTP header")
        })?;
        value.set_sensitive(true);
        headers.insert(header::AUTHORIZATION, value);
    }
    Ok(headers)
}

/// The endpoint's `connect_timeout` option, else `timeout` capped at 10 s: for clients that
/// are given a single timeout.
pub fn connect_timeout(endpoint: &EndpointPlan, timeout: Duration) -> Duration {
    match endpoint.options.get("connect_timeout") {
        Some(Value::Duration(ns)) if *ns > 0 => Duration::from_nanos(ns.unsigned_abs()),
        _ => timeout.min(Duration::from_secs(10)),
    }
}
