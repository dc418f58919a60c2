// A probe's interval is a duration of at least 1ms: below it, zero, and a plain number are
// refused.
target t {
  dialect questdb
  ilp_http "http://127.0.0.1:9000"
  http     "http://127.0.0.1:9000"
  count rows via http sql "SELECT count(*) FROM ${table}"
}

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest too_often {
  into t via ilp_http
  rows s
  probe visible every 500us
}

ingest zero {
  into t via ilp_http
  rows s
  probe visible every 0s
}

ingest unitless {
  into t via ilp_http
  rows s
  probe visible every 100
}
