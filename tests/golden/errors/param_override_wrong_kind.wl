// args: --param records=ten
// An override of the wrong kind is reported once, at the flag, not at each use of the param.
param records = 100
target db { pg "postgres://postgres@127.0.0.1:5432/postgres" }
schema s { rows records  field a: long = uniform(0, records) }
ingest load { into db via pg  rows s  batch records rows }
