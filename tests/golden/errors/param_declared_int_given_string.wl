param hosts: int = "ten"
target db { sqlite "bench.db" }
schema s { rows hosts  field a: long = 1 }
ingest load { into db via sqlite  rows s }
