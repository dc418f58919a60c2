// Replay as an axis: the same ingest live (generated while sending) and replayed (pre-encoded,
// only the sending timed), and the rows/s a 14.7 Gbit/s link would carry.
target questdb {
  qwp     "ws://127.0.0.1:9000"
  ilp_tcp "tcp://127.0.0.1:9009"
  pg      "postgres://admin@127.0.0.1:8812/qdb"
}
schema cpu {
  series host: symbol = "host_{n}" for n in 0..4
  field usage: double = 1.5
  timestamp timestamp = every 10s from 2016-01-01T00:00:00Z for 1m
}
matrix {
  protocol in [qwp, ilp_tcp]
  input    in [live, replay]
}
ingest load {
  into questdb via protocol
  rows cpu
  replay when input == replay budget 64MiB
  link 14.7gbit
}
