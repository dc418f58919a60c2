// What cannot run in a group: an ingest's `calibrate` and `replay`, a run's `repeat` above 1,
// and `check same results across endpoints` beside an ingest.
target t { null  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" as a  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" as b }

schema s {
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

query q { sql "SELECT 1" }

ingest load {
  into t via null
  rows s
  calibrate
  replay
}

run reads {
  against t via [a, b]
  queries q
  count 10
  repeat 3
  check same results across endpoints
}

concurrent mixed {
  phases load, reads
}
