// A replaying ingest cannot start with the other members of a group; with `replay when`, only
// the cells where it replays are refused.
target db { sqlite "bench.db" }
schema s {
  series host: varchar = format("host_%d", n) for n in 0..10
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1m
}
matrix { input in [live, replay] }
ingest load {
  into db via sqlite  rows s
  replay when input == replay
}
ingest other {
  into db via sqlite table "t2"  rows s
}
concurrent both { phases load, other }
