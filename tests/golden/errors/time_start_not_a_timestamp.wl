target db { sqlite "bench.db" }
schema s {
  series host: varchar = format("host_%d", n) for n in 0..10
  timestamp ts = every 1s from 5 for 1m
}
ingest load { into db via sqlite  rows s }
