// A search runs its steps one after another: it cannot start and end with a group's members.
target t { null  http "http://127.0.0.1:8088" }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

ingest load {
  into t via null
  rows s
}

run reads {
  against t.http
  request GET "/"
  find max rate from 100/s where p99 < 20ms
}

concurrent mixed {
  phases load, reads
  until load
}
