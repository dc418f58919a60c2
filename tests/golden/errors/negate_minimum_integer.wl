// -(-9223372036854775808) does not fit; the checker silently uses 9223372036854775807.
param min = -9223372036854775807 - 1
param flipped = -min
target db { sqlite "bench.db" }
schema s { rows 10  field x: long = flipped }
ingest load { into db via sqlite  rows s }
