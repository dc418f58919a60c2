param n: integer = 5
target db { sqlite "bench.db" }
schema s { rows 10  field x: long = n }
ingest load { into db via sqlite  rows s }
