// A staged ingest: 2 workers, a step, a ramp and a step with a warm-up; the data (40,000
// rows) runs out in the last stage.
param top = 2_000/s

target t { ilp_http "http://127.0.0.1:9000" }

schema cpu {
  series host: symbol = format("h%d", n) for n in 0..10
  field  v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 4000s
}

ingest staged {
  into t via ilp_http
  setup shared          // the target takes no SQL: no DDL to run
  rows cpu
  batch 500 rows
  workers 2
  stage 10s rate 500/s
  stage 10s rate 500/s to top
  stage 30s rate top warmup 2s
}
