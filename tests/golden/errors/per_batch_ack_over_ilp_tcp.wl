import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target questdb {
  ilp_tcp "tcp://127.0.0.1:9009"
}
ingest load {
  into questdb via ilp_tcp
  rows tsbs.cpu
  ack per_batch
}
