//! Embedded SQLite: opening a database the way every wlrun connection to it must (same
//! pragmas, `:memory:` shared within the process): the admin client, the ingest driver and the
//! query transport all open it here.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::net::error::{DriverError, ErrorClass};
use crate::plan::EndpointPlan;

/// `:memory:` databases are private to a connection in SQLite; wlrun's writer, counter and
/// query workers are separate connections, so `:memory:` means one shared in-memory database
/// per process, kept alive here until the process exits.
static MEMORY_KEEPALIVE: Mutex<Vec<Connection>> = Mutex::new(Vec::new());
const MEMORY_URI: &str = "file:wlrun-memory?mode=memory&cache=shared";

pub(crate) fn sqlite_error(what: &str, e: rusqlite::Error) -> DriverError {
    let class = match &e {
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(
                f.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ) =>
        {
            ErrorClass::Timeout
        }
        _ => ErrorClass::Server,
    };
    DriverError::new(class, format!("{what}: {e}"), false)
}

fn option_word(endpoint: &EndpointPlan, name: &str) -> Option<String> {
    endpoint.options.get(name).map(|v| v.to_string())
}

/// Opens the database named by `url` (a path, relative to the current directory, or
/// `:memory:`) with the endpoint's `journal` (default `wal`) and `synchronous` (default
/// `normal`) settings and a busy timeout, so that concurrent wlrun connections wait for the
/// writer instead of failing at once.
pub fn open(endpoint: &EndpointPlan, url: &str, busy: Duration) -> Result<Connection, DriverError> {
    let name = format!("{}.{} ({url})", endpoint.target, endpoint.name);
    let memory = url == ":memory:";
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if memory {
        let conn = Connection::open_with_flags(MEMORY_URI, flags)
            .map_err(|e| DriverError::connect(&name, e))?;
        let mut keep = MEMORY_KEEPALIVE.lock().unwrap_or_else(|p| p.into_inner());
        if keep.is_empty() {
            keep.push(
                Connection::open_with_flags(MEMORY_URI, flags)
                    .map_err(|e| DriverError::connect(&name, e))?,
            );
        }
        conn
    } else {
        Connection::open_with_flags(Path::new(url), flags)
            .map_err(|e| DriverError::connect(&name, e))?
    };
    conn.busy_timeout(busy)
        .map_err(|e| DriverError::connect(&name, e))?;
    let journal = option_word(endpoint, "journal").unwrap_or_else(|| {
        if memory {
            "memory".into()
        } else {
            "wal".into()
        }
    });
    let synchronous = option_word(endpoint, "synchronous").unwrap_or_else(|| "normal".into());
    // journal_mode answers with a row, so it is read rather than executed.
    conn.query_row(&format!("PRAGMA journal_mode = {journal}"), [], |_| Ok(()))
        .map_err(|e| DriverError::connect(&name, e))?;
    conn.execute_batch(&format!("PRAGMA synchronous = {synchronous}"))
        .map_err(|e| DriverError::connect(&name, e))?;
    Ok(conn)
}
