// Server metrics scraped during the phases of the target that declares them; the other target's
// phases are not observed.
workload observed { seed 1 }

param exporter = "127.0.0.1:9100"

target pg {
  dialect postgres
  pg "postgres://postgres@127.0.0.1:5432/bench"
  observe metrics "http://${exporter}/metrics" every 2s
    keep "node_cpu_seconds_total", "node_memory_MemAvailable_bytes", "process_.*"
    cpu "node_cpu_seconds_total{mode!='idle'}"
  observe metrics "http://127.0.0.1:9187/metrics" cpu "process_cpu_seconds_total"
}

target other {
  pg "postgres://postgres@127.0.0.1:5433/bench"
  observe metrics "http://127.0.0.1:9101/metrics" keep "up"
}

query one { sql "SELECT 1" }

run points {
  against pg.pg
  queries one
  count 100
}
