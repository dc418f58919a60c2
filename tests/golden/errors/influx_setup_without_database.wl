// InfluxDB 1.x names the database in the path (`/write?db=bench`): without it, there is no
// database to create nor a measurement to drop.
import "std/tsbs/cpu-only.wl" as tsbs (hosts = 10)
target influx {
  dialect influxdb
  ilp_http "http://127.0.0.1:8086"
}
ingest load {
  into influx via ilp_http
  rows tsbs.cpu
  setup truncate
}
