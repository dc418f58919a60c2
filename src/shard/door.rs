//! Shard 0's door: every connection to the barrier is let in here or refused, before the
//! lead sees it. A connection must finish its TLS handshake (when the barrier serves TLS) and
//! say hello with the barrier's token within `HELLO_WAIT`; a peer with no token or a wrong
//! one is told why (`refuse`), logged on standard error with its address (never a token) and
//! closed, and the run goes on without it: a stranger can neither join, abort nor stall a
//! run. Only what came through reaches the lead, which then checks plan, count and version.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::TlsAcceptor;

use super::access::Access;
use super::wire::{self, Conn, Msg, Reader, Writer};

/// How long a new connection has to say hello before it is dropped (a health check, a port
/// scanner): it must not hold up the shards that do.
pub(super) const HELLO_WAIT: Duration = Duration::from_secs(10);
/// Connections waiting to say hello at once; past this a new one is closed at once, so a
/// flood of idle connections costs at most this many small buffers.
const PENDING: usize = 256;

/// A connection let in: its hello, and the connection to go on with.
pub(super) struct Entry {
    pub msg: Msg,
    pub lines: Reader,
    pub writer: Writer,
    pub from: SocketAddr,
}

pub(super) struct Door {
    access: Access,
    tls: Option<TlsAcceptor>,
    pending: Arc<Semaphore>,
    /// Connections refused for their token or their TLS, for the message when a shard never
    /// joins (it may be one of them, misconfigured).
    pub refused: AtomicU64,
}

impl Door {
    /// The door of a barrier with `access`; reads the TLS files now.
    pub(super) fn new(access: &Access) -> Result<Door, String> {
        let tls = match &access.tls {
            Some(files) => Some(super::access::acceptor(files)?),
            None => None,
        };
        Ok(Door {
            access: access.clone(),
            tls,
            pending: Arc::new(Semaphore::new(PENDING)),
            refused: AtomicU64::new(0),
        })
    }

    /// Accepts connections for as long as the lead lives; each is let in or refused on its
    /// own task, so a connection that never says hello holds up no one.
    pub(super) async fn accept_loop(
        self: Arc<Door>,
        listener: TcpListener,
        tx: mpsc::UnboundedSender<Entry>,
    ) {
        loop {
            let Ok((sock, from)) = listener.accept().await else {
                continue;
            };
            let Ok(permit) = self.pending.clone().try_acquire_owned() else {
                continue;
            };
            let _ = sock.set_nodelay(true);
            let door = self.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Some(entry) = door.enter(sock, from).await {
                    let _ = tx.send(entry);
                }
                drop(permit);
            });
        }
    }

    async fn enter(&self, sock: TcpStream, from: SocketAddr) -> Option<Entry> {
        let conn: Conn = match &self.tls {
            None => Box::new(sock),
            Some(tls) => match tokio::time::timeout(HELLO_WAIT, tls.accept(sock)).await {
                Ok(Ok(s)) => Box::new(s),
                Ok(Err(e)) => {
                    self.log(
                        from,
                        &format!("no TLS handshake ({e}): the barrier serves TLS only"),
                    );
                    return None;
                }
                Err(_) => return None,
            },
        };
        let (mut lines, mut writer) = wire::split(conn);
        lines.limit(wire::MAX_HELLO);
        // Anything but a hello in time is not a shard: dropped without a word.
        let Ok(Ok(Some((msg @ Msg::Hello { .. }, _)))) =
            tokio::time::timeout(HELLO_WAIT, lines.next()).await
        else {
            return None;
        };
        let Msg::Hello { shard, token, .. } = &msg else {
            return None;
        };
        if let Err(reason) = self.access.admits(token.as_ref()) {
            self.log(from, &format!("it says it is shard {shard}: {reason}"));
            let msg = Msg::Refuse {
                reason: reason.to_string(),
            };
            let _ = wire::send(&mut writer, &msg).await;
            let _ = tokio::io::AsyncWriteExt::shutdown(&mut writer).await;
            return None;
        }
        lines.limit(wire::MAX_LINE);
        Some(Entry {
            msg,
            lines,
            writer,
            from,
        })
    }

    fn log(&self, from: SocketAddr, why: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        sayln!("wlrun: shard 0: refused a connection from {from}: {why}");
    }
}
