// A rate-controlled ingest: 50,000 rows/s on a fixed schedule (25,000/s per worker), for 10s.
param r = 50_000/s

target t { ilp_http "http://127.0.0.1:9000" }

schema cpu {
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}

ingest steady {
  into t via ilp_http
  setup shared          // the target takes no SQL: no DDL to run
  rows cpu
  batch 1000 rows
  workers 2
  rate r
  duration 10s
}
