target db { sqlite "bench.db" }
schema s {
  series host: varchar = format("host_%d", n) for n in 0..10
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1m
}
ingest load {
  into db via sqlite  rows s
  link 10GB
}
ingest zero {
  into db via sqlite  rows s
  link 0gbit
}
