// args: --only part=ingest
// With --only leaving a phase in no cell, no param or axis is called unused: that phase may read it.
target db { pg "postgres://wlrun@127.0.0.1:5432/wlrun" }
schema s {
  table "events"
  series host: varchar = format("host_%d", n) for n in 0..4
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1m
}
param read_count = 10   // read only by `reads`, which no cell of `--only part=ingest` runs
query seen { sql "SELECT count(*) FROM events" }
matrix {
  part    in [ingest, queries, mixed]
  workers in [1, 2] when part == ingest
}
ingest load when part == ingest {
  into db via pg  rows s
  workers workers
}
run reads when part == queries {
  against db.pg
  queries seen
  count read_count
}
ingest paced when part == mixed {
  into db via pg  rows s
  rate 100/s
}
run beside when part == mixed {
  against db.pg
  queries seen
  duration 10s
}
concurrent mixed { phases paced, beside  until paced }
