target db { ilp_tcp "tcp://127.0.0.1:9009" }
ingest load {
  into db via ilp_tcp table "cpu"
  rows from file "support/not-generated-yet.ilp"
  setup shared
}
