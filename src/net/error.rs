//! The error every connection of the network layer returns, and the classes a report counts
//! separately. Drivers, admin clients and query transports share it, so it lives below them.

use std::time::Duration;

/// The kinds of failure a report counts separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorClass {
    /// The connection could not be made (refused, unreachable, handshake or login failed).
    Connect,
    /// The connection broke while sending or waiting (reset, closed by the server).
    Connection,
    /// The server answered with an error: an HTTP status, a SQL error, a rejected batch.
    Server,
    /// A wait ran past its timeout.
    Timeout,
    /// The rows could not be encoded for this endpoint.
    Encode,
}

impl ErrorClass {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Connection => "connection",
            ErrorClass::Server => "server",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Encode => "encode",
        }
    }
}

/// A failure with the server's own words where there are any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    pub class: ErrorClass,
    pub message: String,
    /// The connection is unusable afterwards: the worker stops. A rejected batch on a healthy
    /// connection (an HTTP 400, a failed COPY) is not fatal: the next batch is sent.
    pub fatal: bool,
    /// The server refused who wlrun is (a password, a certificate, its own certificate that
    /// wlrun cannot trust, TLS answered to a plain request): connecting again with the same
    /// settings is refused again, so nothing tries again (`tls::Connector::refuse`).
    pub refused: bool,
    /// Every byte of the batch reached the socket before this failure (its answer timed out,
    /// the server closed the connection after reading it): the rows were sent, and are not
    /// acknowledged. Only the ingest drivers set it; `false` says nothing was proven written.
    pub written: bool,
}

impl DriverError {
    /// The message is masked here, where every error of the layer is made: it may quote a
    /// server, a URL or an option that holds a secret (`secrets`).
    pub fn new(class: ErrorClass, message: impl Into<String>, fatal: bool) -> DriverError {
        DriverError {
            class,
            message: crate::secrets::masked(message.into()),
            fatal,
            refused: false,
            written: false,
        }
    }

    /// A connection the server refused for who wlrun is (see `refused`).
    pub fn refusal(endpoint: &str, e: impl std::fmt::Display) -> DriverError {
        DriverError {
            refused: true,
            ..DriverError::connect(endpoint, e)
        }
    }

    pub fn connect(endpoint: &str, e: impl std::fmt::Display) -> DriverError {
        DriverError::new(
            ErrorClass::Connect,
            format!("cannot connect to {endpoint}: {e}"),
            true,
        )
    }

    pub fn timeout(what: impl std::fmt::Display, after: Duration) -> DriverError {
        DriverError::new(
            ErrorClass::Timeout,
            format!(
                "{what}: no answer within {}",
                super::fmt::fmt_duration(after)
            ),
            true,
        )
    }
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} error: {}", self.class.as_str(), self.message)
    }
}
