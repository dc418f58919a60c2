// An ingest phase that stops after its duration, whatever rows are left.
target t { ilp_http "http://127.0.0.1:9000" }

schema cpu {
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}

ingest soak {
  into t via ilp_http
  setup shared          // the target takes no SQL: no DDL to run
  rows cpu
  workers 2
  duration 30s
}
