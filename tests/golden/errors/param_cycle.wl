param a = b + 1
param b = a * 2
target db { sqlite "bench.db" }
schema s { rows a  field x: long = 1 }
ingest load { into db via sqlite  rows s }
