// An ingest's search needs the freshness probe's visibility lag: refused for now.
target t { null }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest load {
  into t via null
  rows s
  find max rate from 1_000/s where p99 < 20ms
}
