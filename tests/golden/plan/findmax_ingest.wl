// The highest row rate whose visibility lag stays under 2s at p99: steps of 1,000 probes (the
// derived count for p99) every 100ms, each after a 5s warm-up whose probes are not judged.
target qdb {
  dialect questdb
  ilp_http "http://127.0.0.1:9000"
  http     "http://127.0.0.1:9000"
  count rows via http sql "SELECT count(*) FROM ${table}"
}

schema cpu {
  series host: symbol = format("h%d", n) for n in 0..1000
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 7d
}

ingest load {
  into qdb via ilp_http
  rows cpu
  batch 10_000 rows
  workers 4
  setup recreate
  probe visible every 100ms within 60s
  warmup 5s
  find max rate from 50_000/s up to 2_000_000/s where lag_p99 < 2s and visible_after < 10s and errors == 0
}
