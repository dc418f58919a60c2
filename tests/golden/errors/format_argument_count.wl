target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = format("host_%d_%d", seq())
}
ingest load { into db via sqlite  rows s }
