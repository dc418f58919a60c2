//! Whether a request reached the socket whole, for the failure that comes after: a POST of
//! rows whose answer timed out, or whose connection closed before the answer, was still
//! sent if every byte of it was written (docs/report-format.md, "Ingest phases").
//!
//! hyper says nothing about how far a request got, so two marks are kept: the body hands its
//! last bytes to hyper (`Tracked`), then the socket is flushed (`Delivery::flushed`, called by
//! the connection's IO). hyper flushes its socket only once its own write buffer is empty, so
//! a flush after the body's end means the head and the whole body were written before it.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, SizeHint};

/// One connection's marks for the request in flight.
#[derive(Debug, Default)]
pub(super) struct Delivery {
    /// hyper has taken the whole body into its buffer.
    taken: AtomicBool,
    /// The socket was flushed after that.
    written: AtomicBool,
}

impl Delivery {
    /// A new request starts: nothing of it is written yet. An empty body is taken at once
    /// (hyper never asks for it).
    pub(super) fn start(&self, empty_body: bool) {
        self.written.store(false, Ordering::Relaxed);
        self.taken.store(empty_body, Ordering::Relaxed);
    }

    /// The connection's socket finished a flush.
    pub(super) fn flushed(&self) {
        if self.taken.load(Ordering::Relaxed) {
            self.written.store(true, Ordering::Relaxed);
        }
    }

    /// Every byte of the request in flight was written.
    pub(super) fn written(&self) -> bool {
        self.written.load(Ordering::Relaxed)
    }
}

/// A request body that marks when hyper has taken the last of it.
pub(super) struct Tracked {
    body: Full<Bytes>,
    delivery: Arc<Delivery>,
}

impl Tracked {
    pub(super) fn new(body: Bytes, delivery: Arc<Delivery>) -> Tracked {
        delivery.start(body.is_empty());
        Tracked {
            body: Full::new(body),
            delivery,
        }
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if frame.is_ready() && self.body.is_end_stream() {
            self.delivery.taken.store(true, Ordering::Relaxed);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use hyper::header::HeaderMap;
    use hyper::Method;
    use tokio::io::AsyncReadExt;
    use tokio::net::TcpListener;

    use crate::net::error::ErrorClass;
    use crate::net::http::HttpClient;

    /// A POST of `body` to a server that accepts and, with `reads`, reads everything it is
    /// sent without ever answering: the error the client ends with.
    async fn unanswered(reads: bool, body: usize) -> crate::net::error::DriverError {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 64 << 10];
            while reads && s.read(&mut buf).await.is_ok_and(|n| n > 0) {}
            // Held open, unread, until the client gives up.
            std::future::pending::<()>().await;
        });
        let timeout = Duration::from_millis(300);
        let mut c = HttpClient::connect(
            &format!("http://{addr}"),
            HeaderMap::new(),
            timeout,
            timeout,
        )
        .await
        .unwrap();
        let body = Bytes::from(vec![b'x'; body]);
        let e = c
            .request(Method::POST, "/write", &HeaderMap::new(), body)
            .await
            .unwrap_err();
        server.abort();
        e
    }

    #[tokio::test]
    async fn a_request_read_whole_and_unanswered_was_written() {
        let e = unanswered(true, 4096).await;
        assert_eq!(e.class, ErrorClass::Timeout, "{e}");
        assert!(e.written, "{e}");
    }

    #[tokio::test]
    async fn a_request_the_server_never_read_was_not_written_whole() {
        // Far more than loopback's socket buffers hold.
        let e = unanswered(false, 64 << 20).await;
        assert_eq!(e.class, ErrorClass::Timeout, "{e}");
        assert!(!e.written, "{e}");
    }
}
