import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target questdb {
  http "http://127.0.0.1:9000"
}
ingest load {
  into questdb via http
  rows tsbs.cpu
}
