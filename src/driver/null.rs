//! `null`: takes every chunk and discards it. Its rate is the ceiling the generator and the
//! encoder set (TSBS with loading off); `calibrate` compares a real cell against it.

use super::{Chunk, Sent};

pub struct Null;

impl Null {
    pub fn send(&mut self, chunk: &Chunk) -> Sent {
        // The chunk was generated and encoded by the producer; reading its length keeps the
        // work observable without sending anything.
        Sent {
            socket_bytes: std::hint::black_box(chunk.bytes.len()) as u64,
            acked: false,
        }
    }
}
