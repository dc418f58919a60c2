target db { sqlite "bench.db" }
ingest load { into db via sqlite  rows from file "data.parquet" }
