// Setup and teardown on VictoriaMetrics delete series through its HTTP API; an `ilp_tcp`
// endpoint without an `http` count gives no way to it.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target vm {
  dialect victoriametrics
  ilp_tcp "tcp://127.0.0.1:8089"
}
ingest load {
  into vm via ilp_tcp
  rows tsbs.cpu
}
ingest again {
  into vm via ilp_tcp
  rows tsbs.cpu
  setup shared
  teardown drop
}
