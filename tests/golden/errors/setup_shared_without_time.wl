target db { sqlite "bench.db" }
schema s {
  rows 10
  field a: long = seq()
}
ingest load {
  into db via sqlite  rows s
  setup shared
  verify visible
}
