target db { sqlite "bench.db" }
schema s {
  series host: varchar = format("host_%d", n) for n in 0..10
  timestamp ts = every 1s from 2016-01-01T00:00:00Z for 1m
}
matrix { input in [live, replay] }
ingest load {
  into db via sqlite  rows s
  replay when input
}
ingest other {
  into db via sqlite  rows s
  replay when 3
}
ingest third {
  into db via sqlite  rows s
  replay when "replay"
}
