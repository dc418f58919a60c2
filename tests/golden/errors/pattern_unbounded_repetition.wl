target db { sqlite "bench.db" }
schema s {
  rows 10
  field item: varchar = pattern("Item_[0-9]+")
}
ingest load { into db via sqlite  rows s }
