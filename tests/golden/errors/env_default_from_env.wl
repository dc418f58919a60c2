target db { sqlite "bench.db" }
schema s {
  rows 10
  field host: varchar = pick(["a", "b"])
  field x: varchar = env("A", env("B"))
}
ingest load { into db via sqlite  rows s }
