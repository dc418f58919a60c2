//! Drivers: one connection of one ingest worker to one endpoint. A driver takes chunks the
//! worker's producer has already generated and encoded, sends them, and says what the server
//! confirmed. It does not generate, route or count rows; `exec::ingest` does.
//!
//! Dispatch is an enum, once per chunk (thousands of rows), never per row.

pub mod ilp_http;
pub mod ilp_tcp;
pub mod null;
pub mod pg;
pub mod qwp;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::encode::qwp::{Frame, QwpOptions};
use crate::gen::batch::{Batch, BatchSchema};
use crate::net::error::{DriverError, ErrorClass};
use crate::net::tls::Connector;
use crate::plan::{Ack, EndpointPlan};

/// What a worker's producer turns each batch into, before the clock of the send starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// InfluxDB line protocol, QuestDB flavour (`encode::IlpEncoder`).
    Ilp,
    /// QWP messages, one connection's stream of them (`encode::QwpEncoder`).
    Qwp(QwpOptions),
    /// PostgreSQL's binary COPY stream: header, tuples, trailer (`driver::pg::CopyEncoder`).
    PgCopy,
    /// Nothing: the driver binds the batch's values itself (SQLite, PostgreSQL INSERT).
    Rows,
}

/// One batch on its way to a server (one request, COPY or transaction): with the `Rows`
/// encoding its rows in `batch`, otherwise their encoded bytes (generated in smaller batches
/// that stay in cache, then appended). Chunks are recycled between the producer and the
/// driver, so the hot loop allocates nothing once the buffers have grown.
pub struct Chunk {
    /// Rows the chunk carries.
    pub rows: u64,
    /// Rows generated for it; more than `rows` when the encoding could not carry some.
    pub generated: u64,
    pub bytes: Vec<u8>,
    /// Where each message ends in `bytes`, for protocols that send several (QWP).
    pub frames: Vec<Frame>,
    pub batch: Batch,
}

impl Chunk {
    pub fn new(batch: Batch) -> Chunk {
        Chunk {
            rows: 0,
            generated: 0,
            bytes: Vec::new(),
            frames: Vec::new(),
            batch,
        }
    }
}

/// What sending one chunk achieved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Bytes written to the socket for this chunk: the payload plus the protocol's framing
    /// (HTTP request line and headers, COPY messages, ...).
    pub socket_bytes: u64,
    /// The server confirmed these rows (HTTP 2xx, COPY complete, SQLite commit). Always
    /// `false` for ILP over TCP and `null`.
    pub acked: bool,
}

/// Everything a driver needs to open its connection.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    pub endpoint: EndpointPlan,
    /// The resolved URL (secrets filled in); `None` for `null`.
    pub url: Option<String>,
    pub table: String,
    pub schema: Arc<BatchSchema>,
    /// Every wait on the server (write, answer, commit) ends after this.
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// The directory of the workload file, for relative paths (SQLite databases).
    pub base_dir: PathBuf,
    pub worker: usize,
    /// What the phase waits for (QWP: `publish` or `per_batch`).
    pub ack: Ack,
    /// QWP's `commit every N rows`: the rows after which a connection commits; `None`: every
    /// batch commits.
    pub commit_every: Option<u64>,
    /// The phase's connector for the endpoint, shared by its workers (TLS sessions resume,
    /// connection costs add up); `None`: the driver makes its own.
    pub connector: Option<Connector>,
}

impl DriverConfig {
    /// The connector to open connections with.
    pub fn connector(&self) -> Result<Connector, DriverError> {
        match &self.connector {
            Some(c) => Ok(c.clone()),
            None => {
                crate::net::connect::connector(&self.endpoint, self.url.as_deref().unwrap_or(""))
            }
        }
    }
}

/// One worker's connection.
pub enum Driver {
    Null(null::Null),
    IlpTcp(ilp_tcp::IlpTcp),
    IlpHttp(ilp_http::IlpHttp),
    Pg(Box<pg::PgWriter>),
    Sqlite(sqlite::SqliteWriter),
    Qwp(qwp::QwpWriter),
}

impl Driver {
    /// The encoding the producer must prepare for an endpoint kind. `calibrate` runs `null`
    /// with the encoding of the endpoint it calibrates.
    pub fn encoding(endpoint: &EndpointPlan) -> Encoding {
        match endpoint.kind.as_str() {
            "pg" => pg::encoding(endpoint),
            "sqlite" => Encoding::Rows,
            "qwp" => Encoding::Qwp(qwp::options(endpoint)),
            _ => Encoding::Ilp,
        }
    }

    /// Whether the endpoint kind's server confirms what it received (an HTTP answer, a COPY
    /// or commit, a QWP OK); ILP over TCP and `null` never do.
    pub fn acknowledges(kind: &str) -> bool {
        matches!(kind, "ilp_http" | "pg" | "sqlite" | "qwp")
    }

    /// Whether this wlrun has a driver for the endpoint kind.
    pub fn can_ingest(kind: &str) -> bool {
        matches!(
            kind,
            "null" | "ilp_tcp" | "ilp_http" | "pg" | "sqlite" | "qwp"
        )
    }

    pub async fn connect(cfg: &DriverConfig) -> Result<Driver, DriverError> {
        Ok(match cfg.endpoint.kind.as_str() {
            "null" => Driver::Null(null::Null),
            "ilp_tcp" => Driver::IlpTcp(ilp_tcp::IlpTcp::connect(cfg).await?),
            "ilp_http" => Driver::IlpHttp(ilp_http::IlpHttp::connect(cfg).await?),
            "pg" => Driver::Pg(Box::new(pg::PgWriter::connect(cfg).await?)),
            "sqlite" => Driver::Sqlite(sqlite::SqliteWriter::open(cfg)?),
            "qwp" => Driver::Qwp(qwp::QwpWriter::connect(cfg).await?),
            other => {
                return Err(DriverError::new(
                    ErrorClass::Connect,
                    format!("wlrun cannot ingest over `{other}` endpoints yet"),
                    true,
                ))
            }
        })
    }

    /// Sends one chunk; for acknowledging drivers, returns once the server has answered.
    pub async fn send(&mut self, chunk: &Chunk) -> Result<Sent, DriverError> {
        match self {
            Driver::Null(d) => Ok(d.send(chunk)),
            Driver::IlpTcp(d) => d.send(chunk).await,
            Driver::IlpHttp(d) => d.send(chunk).await,
            Driver::Pg(d) => d.send(chunk).await,
            // SQLite works synchronously; let the runtime move other tasks off this thread.
            Driver::Sqlite(d) => tokio::task::block_in_place(|| d.send(chunk)),
            Driver::Qwp(d) => d.send(chunk).await,
        }
    }

    /// Rows the server acknowledged since the last call, for drivers whose acknowledgements
    /// come apart from the sends (QWP); the others say so in `Sent::acked`.
    pub fn take_acked(&mut self) -> u64 {
        match self {
            Driver::Qwp(d) => d.take_acked(),
            _ => 0,
        }
    }

    /// Whether the connection can take more: `false` after a QWP server rejected a message
    /// (the worker stops; the messages after the last OK stay unacknowledged).
    pub fn usable(&self) -> bool {
        match self {
            Driver::Qwp(d) => d.usable(),
            _ => true,
        }
    }

    /// Commits the driver asked the server for (QWP's messages without `FLAG_DEFER_COMMIT`);
    /// `None` for protocols without deferred commits.
    pub fn commits(&self) -> Option<u64> {
        match self {
            Driver::Qwp(d) => Some(d.commits()),
            _ => None,
        }
    }

    /// Flushes and closes the connection; returns the socket bytes that closing wrote.
    pub async fn finish(&mut self) -> Result<u64, DriverError> {
        match self {
            Driver::Null(_) => Ok(0),
            Driver::IlpTcp(d) => d.finish().await,
            Driver::IlpHttp(_) => Ok(0),
            Driver::Pg(d) => d.finish().await,
            Driver::Sqlite(_) => Ok(0),
            Driver::Qwp(d) => d.finish().await,
        }
    }
}
