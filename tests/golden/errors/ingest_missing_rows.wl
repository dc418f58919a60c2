target db { sqlite "bench.db" }
ingest load {
  into db via sqlite
  batch 100 rows
}
