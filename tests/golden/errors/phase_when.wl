// A phase's condition is a boolean; a group's members run in the same cells.
target db { pg "postgres://wlrun@127.0.0.1:5432/wlrun" }
schema s {
  table "events"
  series host: varchar = format("host_%d", n) for n in 0..4
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1m
}
query seen { sql "SELECT count(*) FROM events" }
matrix { part in [ingest, mixed] }
ingest load when part {
  into db via pg  rows s
}
ingest paced when part == mixed {
  into db via pg table "paced"  rows s
  rate 100/s
}
run beside {
  against db.pg
  queries seen
  duration 10s
}
concurrent together { phases paced, beside }
