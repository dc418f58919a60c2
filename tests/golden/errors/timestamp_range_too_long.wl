// A timestamp progression longer than 292 years (the checker panicked on `end - start`).
target db { sqlite "bench.db" }
schema s {
  series h: varchar = format("h%d", n) for n in 0..2
  timestamp ts = every 1w from 1677-09-22T00:00:00Z to 2262-04-11T00:00:00Z
}
ingest load { into db via sqlite  rows s }
