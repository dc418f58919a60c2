target pg { dialect postgres  pg "postgres://wlrun:wlrun@127.0.0.1:5432/wlrun" }
schema t { rows 10  field k: long = seq() }
ingest load {
  into pg via pg
  rows t
  setup sql "CREATE INDEX ON t (k)"
}
