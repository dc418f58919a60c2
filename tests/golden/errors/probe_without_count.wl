// A probe counts as `verify visible` does: a target with no count rule and no SQL endpoint
// gives it nothing to count with.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target questdb {
  ilp_tcp "tcp://127.0.0.1:9009"
}
ingest load {
  into questdb via ilp_tcp
  rows tsbs.cpu
  probe visible every 100ms within 60s
}
