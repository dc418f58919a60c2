target db { sqlite "bench.db" }
query q { sql "SELECT 1" }
ingest load { into db via sqlite  rows q }
