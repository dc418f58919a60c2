// A line-protocol or QWP endpoint takes no SQL: with no endpoint of the phase that does (no
// `pg` or `sqlite` endpoint, no SQL count), `setup recreate|truncate` and `teardown drop` have
// nowhere to run and are refused rather than skipped.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target qdb {
  dialect questdb
  ilp_tcp "tcp://127.0.0.1:9009"
  qwp     "ws://127.0.0.1:9000"
}
ingest load {
  into qdb via ilp_tcp
  rows tsbs.cpu
  setup recreate
}
ingest again {
  into qdb via qwp
  rows tsbs.cpu
  setup truncate
  teardown drop
}
