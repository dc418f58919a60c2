target db { sqlite "bench.db" }
schema s {
  field a: long = seq()
}
ingest load { into db via sqlite  rows s }
