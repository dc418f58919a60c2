// An ingest's rate is a fixed schedule: Poisson arrivals are refused.
target t { null }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest load {
  into t via null
  rows s
  rate 1000/s poisson
}
