ingest load {
  into questdb via protocol table "cpu"
  rows tsbs.cpu limit 1_000
  batch 10_000 rows
  workers workers
  ack ack
  setup recreate
  teardown keep
  verify visible via questdb.pg within 120s
  calibrate
}
ingest each {
  into questdb via [qwp, ilp_tcp, ilp_http,]
  rows from file "data/cpu.ilp"
  connections 4
  verify visible
  replay
}
ingest replayed {
  into questdb via ilp_tcp
  rows from file "data/cpu.ilp"
  replay budget 4GiB
}
ingest bare {}
