// cpu-only.wl has a `hosts` param but no `host_count`.
import "std/tsbs/cpu-only.wl" as tsbs (host_count = 10)

target db { sqlite "bench.db" }

ingest load {
  into db via sqlite
  rows tsbs.cpu
}
