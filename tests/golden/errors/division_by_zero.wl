param hosts = 10
param per_worker = hosts / 0
target db { sqlite "bench.db" }
schema s { rows per_worker  field a: long = 1 }
ingest load { into db via sqlite  rows s }
