// A rate of rows must be a positive rate: zero, and a plain number, are refused.
target t { null }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest zero {
  into t via null
  rows s
  rate 0/s
}

ingest unitless {
  into t via null
  rows s
  rate 5000
}
