import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)

target db { sqlite "bench.db" }

ingest load {
  into db via sqlite
  rows tsbs.cpux
}
