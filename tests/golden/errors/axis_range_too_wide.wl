// A range axis whose width does not fit in 64 bits (the checker panicked on `hi - lo`).
target db { sqlite "bench.db" }
matrix { workers in -9223372036854775807..9223372036854775807 }
schema s { rows 10  field a: long = 1 }
ingest load { into db via sqlite  rows s  workers workers }
