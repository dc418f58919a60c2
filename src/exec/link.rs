//! A worker's connection as both runners keep it: opened on first use and after a failure
//! broke it, with a doubling backoff between failed attempts, and given up after `GIVE_UP`
//! without one, so that a server gone for good fails the rest of the round at once instead of
//! holding it for hours.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::net::fmt::fmt_duration;
use crate::query::{QueryError, QueryErrorClass};

/// How long a worker keeps trying to connect (a server restarting comes back well within it).
pub const GIVE_UP: Duration = Duration::from_secs(30);

pub struct Link<C> {
    pub conn: Option<C>,
    /// Since when connecting has failed, without a success since.
    down_since: Option<Instant>,
    /// After a failed connect, wait this long before the next try (doubling, at most 1 s).
    backoff: Duration,
    /// Connections opened so far.
    pub connects: u64,
}

impl<C> Default for Link<C> {
    fn default() -> Self {
        Link {
            conn: None,
            down_since: None,
            backoff: Duration::ZERO,
            connects: 0,
        }
    }
}

impl<C> Link<C> {
    /// The open connection, or one opened now with `connect`.
    pub async fn get<F>(&mut self, connect: impl FnOnce() -> F) -> Result<&mut C, QueryError>
    where
        F: Future<Output = Result<C, QueryError>>,
    {
        if self.conn.is_none() {
            if let Some(since) = self.down_since {
                if since.elapsed() > GIVE_UP {
                    return Err(QueryError {
                        class: QueryErrorClass::Connection,
                        message: format!(
                            "no connection for {}: not trying again in this round",
                            fmt_duration(GIVE_UP)
                        ),
                        code: None,
                        broken: true,
                    });
                }
            }
            match connect().await {
                Ok(c) => {
                    self.conn = Some(c);
                    self.connects += 1;
                    self.backoff = Duration::ZERO;
                    self.down_since = None;
                }
                Err(e) => {
                    self.down_since.get_or_insert_with(Instant::now);
                    // A server that is down must not turn the run into a busy loop.
                    tokio::time::sleep(self.backoff).await;
                    self.backoff =
                        (self.backoff * 2).clamp(Duration::from_millis(50), Duration::from_secs(1));
                    return Err(e);
                }
            }
        }
        Ok(self.conn.as_mut().expect("connected above"))
    }
}
