target db { sqlite "bench.db" }
schema s {
  rows 10
  field name: varchar = uniform(0, 10)
}
ingest load { into db via sqlite  rows s }
