target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = pick(["a", "b"])
  field x: boolean = chance(1.5)
}
ingest load { into db via sqlite  rows s }
