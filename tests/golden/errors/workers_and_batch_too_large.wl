// Counts that size what a phase allocates when it starts are bounded at check time:
// `workers 1_000_000_000` asked for 700 GB before anything was sent.
target db { null }
schema s { rows 10  field x: long = 1 }
ingest load { into db via null  rows s  batch 4_000_000_000 rows  workers 1_000_000_000 }
query q { sql "SELECT 1" }
target pg { pg "postgres://postgres@127.0.0.1:5432/postgres" }
run r { against pg.pg  queries q  count 1  workers 200_000 }
