//! The barrier protocol on the wire: one JSON object per line over one TCP connection from
//! each shard to shard 0 (docs/language.md, "Shards", describes it for a reader of captures).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, ReadHalf,
    WriteHalf,
};

use super::access::Token;

/// A line longer than this is not ours (a port scanner, another protocol): the connection is
/// dropped rather than buffered without end.
pub const MAX_LINE: u64 = 1 << 20;
/// Before a peer is let in, its hello is all it may send: a stranger gets this much buffer,
/// not a mebibyte per connection.
pub const MAX_HELLO: u64 = 16 << 10;
/// A peer that takes no line for this long is gone (its reader stopped, or a partition filled
/// the send buffer): the writer gives up rather than hold the connection's lock for ever.
const WRITE_WAIT: Duration = Duration::from_secs(10);

/// A barrier connection, in clear or under TLS.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}
pub type Conn = Box<dyn Io>;
pub type Reader = Lines<ReadHalf<Conn>>;
pub type Writer = WriteHalf<Conn>;

/// A connection split into its lines and its writer.
pub fn split(conn: Conn) -> (Reader, Writer) {
    let (r, w) = tokio::io::split(conn);
    (Lines::new(r), w)
}

/// The heartbeat both ends of every barrier connection keep: a line (`alive`, or any other)
/// every `every`, and a peer from which nothing came for `silence` is lost, mid-phase as
/// at a barrier. `silence` is the barrier timeout, at most 10 s, and `every` a tenth of it:
/// a peer is lost after 10 missed beats, so one late beat on a loaded machine is no alarm,
/// and a partition is seen within seconds rather than at the next barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pulse {
    pub every: Duration,
    pub silence: Duration,
}

/// Beats missed before a peer is lost.
pub const MISSES: u32 = 10;
const MAX_SILENCE: Duration = Duration::from_secs(10);

impl Pulse {
    pub fn of(timeout: Duration) -> Pulse {
        let silence = timeout.min(MAX_SILENCE);
        Pulse {
            every: silence / MISSES,
            silence,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Msg {
    /// A shard's first line: who it is and what it runs.
    Hello {
        shard: u64,
        count: u64,
        plan: String,
        version: String,
        /// `WLRUN_BARRIER_TOKEN`, when set: shard 0 lets no one in without the same.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<Token>,
    },
    /// Shard 0 does not let this connection in (no token, a wrong one), saying why; the
    /// connection closes and the run goes on without it.
    Refuse { reason: String },
    /// Every shard has said hello: the run begins.
    Welcome { count: u64 },
    /// A shard reached barrier `seq`; `failure` when its phase cannot start, `figures` what
    /// it sent when the barrier ends a phase.
    Arrive {
        seq: u64,
        point: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        figures: Option<Figures>,
    },
    /// Every shard reached barrier `seq`: go on. `refusals` are the shards whose phase could
    /// not start (then no shard runs it), `totals` the figures summed over every shard, `skew`
    /// the start skew shard 0 measured at the release of barrier `seq - 1`.
    Release {
        seq: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        refusals: Vec<Refusal>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        totals: Option<Figures>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skew: Option<Skew>,
    },
    /// Sent by a shard the moment it reads a release: shard 0 times the round trip.
    Go { seq: u64 },
    /// A shard stops before the run's end (SIGINT, SIGTERM).
    Leave { reason: String },
    /// Shard 0 ends the run for every shard, saying why.
    Abort { reason: String },
    /// The heartbeat, both ways (`Pulse`): each end knows the other lives, mid-phase too.
    Alive,
}

/// What one shard did in a phase, or every shard summed (`totals`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Rows, queries or requests sent.
    pub sent: u64,
    /// Rows the server acknowledged; `None` where the protocol does not acknowledge, and in
    /// query and request runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked: Option<u64>,
    /// Queries or requests answered without error; `None` in an ingest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<u64>,
    /// Rows generated but not encodable (ingest), which count as carried with the sent ones.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Figures {
    /// The sum of every shard's figures; a count one shard lacks is absent from the sum.
    pub fn sum<'a>(all: impl IntoIterator<Item = &'a Figures>) -> Figures {
        let mut out: Option<Figures> = None;
        for f in all {
            out = Some(match out {
                None => f.clone(),
                Some(s) => Figures {
                    sent: s.sent + f.sent,
                    acked: s.acked.zip(f.acked).map(|(a, b)| a + b),
                    ok: s.ok.zip(f.ok).map(|(a, b)| a + b),
                    dropped: s.dropped + f.dropped,
                },
            });
        }
        out.unwrap_or_default()
    }
}

/// A shard whose phase could not start, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    pub shard: u64,
    pub failure: String,
}

/// How far apart the shards left a barrier, on shard 0's clock (docs/language.md, "Start
/// skew").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skew {
    /// The spread between the earliest and the latest shard's estimated release, ms.
    pub spread_ms: f64,
    /// How wrong the estimate can be: half the longest round trip, ms.
    pub error_ms: f64,
}

/// Writes one message as a line (flushed: TLS buffers what it encrypts).
pub async fn send<W: AsyncWrite + Unpin>(w: &mut W, msg: &Msg) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).expect("barrier messages serialize");
    line.push(b'\n');
    let write = async {
        w.write_all(&line).await?;
        w.flush().await
    };
    match tokio::time::timeout(WRITE_WAIT, write).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the peer took no line for 10 s",
        )),
    }
}

/// Reads lines as messages.
pub struct Lines<R> {
    r: BufReader<R>,
    buf: Vec<u8>,
    max: u64,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub fn new(r: R) -> Self {
        Lines {
            r: BufReader::new(r),
            buf: Vec::new(),
            max: MAX_LINE,
        }
    }

    /// Lines up to `max` bytes from now on.
    pub fn limit(&mut self, max: u64) {
        self.max = max;
    }

    /// The next message and when its line was read; `Ok(None)` at the end of the stream.
    pub async fn next(&mut self) -> Result<Option<(Msg, Instant)>, String> {
        self.buf.clear();
        let n = (&mut self.r)
            .take(self.max)
            .read_until(b'\n', &mut self.buf)
            .await;
        let n = match n {
            Ok(n) => n,
            // The peer's end, though not an orderly one: a reset (our heartbeat reached a
            // process that had died), or TLS without its close_notify (a killed process).
            Err(e) if closed(&e) => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let at = Instant::now();
        if n == 0 {
            return Ok(None);
        }
        if self.buf.last() != Some(&b'\n') {
            return Err(if n as u64 >= self.max {
                format!("a line over {}: not a wlrun shard", size(self.max))
            } else {
                "the connection closed in the middle of a line".to_string()
            });
        }
        serde_json::from_slice(&self.buf)
            .map(|m| Some((m, at)))
            .map_err(|e| {
                format!(
                    "not a barrier message ({e}): {}",
                    String::from_utf8_lossy(&self.buf[..self.buf.len().min(120)]).trim_end()
                )
            })
    }
}

fn closed(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | UnexpectedEof
    )
}

/// `1 MiB`, `16 KiB`.
fn size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_of_json_tagged_by_t() {
        let m = Msg::Arrive {
            seq: 3,
            point: "cell 1 load: start".into(),
            failure: None,
            figures: Some(Figures {
                sent: 10,
                acked: Some(9),
                ok: None,
                dropped: 0,
            }),
        };
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(
            text,
            r#"{"t":"arrive","seq":3,"point":"cell 1 load: start","figures":{"sent":10,"acked":9}}"#
        );
        assert_eq!(serde_json::from_str::<Msg>(&text).unwrap(), m);
        assert_eq!(
            serde_json::to_string(&Msg::Alive).unwrap(),
            r#"{"t":"alive"}"#
        );
    }

    #[test]
    fn sums_keep_a_count_only_when_every_shard_has_it() {
        let a = Figures {
            sent: 5,
            acked: Some(5),
            ok: None,
            dropped: 1,
        };
        let b = Figures {
            sent: 7,
            acked: Some(6),
            ok: None,
            dropped: 0,
        };
        let s = Figures::sum([&a, &b]);
        assert_eq!((s.sent, s.acked, s.dropped), (12, Some(11), 1));
        let c = Figures {
            acked: None,
            ..b.clone()
        };
        assert_eq!(Figures::sum([&a, &c]).acked, None);
        assert_eq!(Figures::sum([]), Figures::default());
    }

    #[tokio::test]
    async fn lines_end_at_the_stream_end_and_refuse_garbage() {
        let data: &[u8] = b"{\"t\":\"go\",\"seq\":1}\nnot json\n{\"t\":\"alive\"}";
        let mut l = Lines::new(data);
        assert_eq!(l.next().await.unwrap().unwrap().0, Msg::Go { seq: 1 });
        assert!(l
            .next()
            .await
            .unwrap_err()
            .contains("not a barrier message"));
        assert!(l.next().await.unwrap_err().contains("middle of a line"));
        assert!(l.next().await.unwrap().is_none());
    }
}
