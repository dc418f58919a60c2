// An ingest's search bounds its visibility lag and its errors: what it refuses. A batch
// latency term (p99), a lag term without `probe visible`, a fixed `rate` beside the search,
// a `warmup` on an ingest that does not search, a search without a step length, and a first
// step the rows (3,600 of them) cannot fill.
target t { null }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest load {
  into t via null
  rows s
  rate 500/s
  find max rate from 1_000/s where p99 < 20ms and lag_p99 < 2s
}

ingest plain {
  into t via null
  rows s
  warmup 1s
}

ingest unbounded {
  into t via null
  rows s
  find max rate from 1_000/s where errors == 0
}

ingest small {
  into t via null
  rows s
  duration 10s
  find max rate from 1_000/s up to 2_000/s where errors == 0
}
