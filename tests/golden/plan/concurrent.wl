// Reads beside a rate-controlled ingest, against two endpoints (a via axis): the group runs at
// the place of its first member, `until load` stops the reads when the ingest ends.
target pg { pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" as a  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" as b }

schema t {
  table "conc_t"
  field v: long = uniform(0, 9)
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1h
}

query n { sql "SELECT count(*) FROM conc_t" }

ingest load {
  into pg via a
  rows t
  batch 100 rows
  rate 1000/s
}

run reads {
  against pg via [a, b]
  queries n
  rate 10/s
  duration 1h
}

concurrent mixed {
  phases load, reads
  until load
}
