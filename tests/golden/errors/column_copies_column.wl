target db { sqlite "bench.db" }
schema s {
  rows 10
  field a: long = seq()
  field b: long = a
}
ingest load { into db via sqlite  rows s }
