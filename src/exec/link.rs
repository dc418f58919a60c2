//! A worker's connection as both runners keep it: opened on first use and after a failure
//! broke it, with a doubling backoff between failed attempts, and given up after `GIVE_UP`
//! without one, so that a server gone for good fails the rest of the round at once instead of
//! holding it for hours. A refusal (the server refused a password or a certificate, which the
//! phase's connector then remembers) is kept for good: the link never connects again, and its
//! worker stops, so a refused phase costs one attempt per worker, not one per query.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::net::fmt::fmt_duration;
use crate::net::tls::Connector;
use crate::query::{QueryError, QueryErrorClass};

/// How long a worker keeps trying to connect (a server restarting comes back well within it).
pub const GIVE_UP: Duration = Duration::from_secs(30);

/// The failure line of a run whose workers stopped at a refusal: why the rest went unsent.
pub fn refused_line(unit: &str) -> String {
    format!(
        "the server refused wlrun's credentials or certificate at connecting: not asked again, \
         so the {unit} left were not sent"
    )
}

pub struct Link<C> {
    pub conn: Option<C>,
    /// Since when connecting has failed, without a success since.
    down_since: Option<Instant>,
    /// After a failed connect, wait this long before the next try (doubling, at most 1 s).
    backoff: Duration,
    /// Connections opened so far.
    pub connects: u64,
    /// The refusal a connect met (`refused`): every later `get` fails with it at once.
    refusal: Option<QueryError>,
}

impl<C> Default for Link<C> {
    fn default() -> Self {
        Link {
            conn: None,
            down_since: None,
            backoff: Duration::ZERO,
            connects: 0,
            refusal: None,
        }
    }
}

impl<C> Link<C> {
    /// Whether the server refused who wlrun is at a connect: the worker stops.
    pub fn refused(&self) -> bool {
        self.refusal.is_some()
    }

    /// The open connection, or one opened now with `connect` through `connector`, which says
    /// whether a failure was a refusal.
    pub async fn get<F>(
        &mut self,
        connector: &Connector,
        connect: impl FnOnce() -> F,
    ) -> Result<&mut C, QueryError>
    where
        F: Future<Output = Result<C, QueryError>>,
    {
        if let Some(e) = &self.refusal {
            return Err(e.clone());
        }
        if self.conn.is_none() {
            if let Some(since) = self.down_since {
                if since.elapsed() > GIVE_UP {
                    return Err(QueryError {
                        class: QueryErrorClass::Connect,
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
                    if connector.refusal().is_some() {
                        // Asking again would be refused again: no wait, no next attempt.
                        self.refusal = Some(e.clone());
                        return Err(e);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::error::DriverError;
    use crate::query::transport::from_driver;

    /// Connects `link` through `connector` with an attempt that fails with `e` (and, for a
    /// refusal, has the connector remember it, as the network layer does); counts attempts.
    async fn fail(link: &mut Link<()>, connector: &Connector, e: DriverError, n: &mut u32) {
        let r = link
            .get(connector, || {
                *n += 1;
                if e.refused {
                    connector.refuse(&e);
                }
                std::future::ready(Err(from_driver(e)))
            })
            .await;
        assert!(r.is_err());
    }

    #[tokio::test]
    async fn a_refusal_is_asked_once() {
        let connector = Connector::plain("db.pg");
        let mut link = Link::default();
        let mut attempts = 0;
        for _ in 0..5 {
            let e = DriverError::refusal("db.pg", "password authentication failed (28P01)");
            fail(&mut link, &connector, e, &mut attempts).await;
        }
        assert_eq!(attempts, 1);
        assert!(link.refused());
    }

    #[tokio::test]
    async fn a_refused_port_is_tried_again() {
        let connector = Connector::plain("db.pg");
        let mut link = Link::default();
        let mut attempts = 0;
        for _ in 0..2 {
            let e = DriverError::connect("db.pg", "connection refused");
            fail(&mut link, &connector, e, &mut attempts).await;
        }
        assert_eq!(attempts, 2);
        assert!(!link.refused());
    }
}
