// An ingest's stages set its span and rate: its own `rate` and `duration` are refused beside
// them, each where it is written.
target t { null }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest staged {
  into t via null
  rows s
  rate 1000/s
  duration 30s
  stage 10s rate 100/s
}
