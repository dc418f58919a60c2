// A probe of the visibility lag every 100ms, over the target's count rule, while 20,000 rows/s
// are sent for 5s; probing may go on 30s after sending ends.
target qdb {
  dialect questdb
  ilp_http "http://127.0.0.1:9000"
  http     "http://127.0.0.1:9000"
  count rows via http sql "SELECT count(*) FROM ${table}"
}

schema cpu {
  series host: symbol = format("h%d", n) for n in 0..100
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1d
}

ingest steady {
  into qdb via ilp_http
  rows cpu
  batch 1000 rows
  rate 20_000/s
  duration 5s
  probe visible every 100ms within 30s
}
