// `observe metrics`: the URL, then `every`, `keep` and `cpu` in any order.
target questdb {
  pg "postgres://admin:quest@127.0.0.1:8812/qdb"
  observe metrics "http://127.0.0.1:9003/metrics" every 500ms keep "questdb_.*", "process_.*" cpu "process_cpu_seconds_total"
  observe metrics "http://127.0.0.1:9100/metrics"
    cpu "node_cpu_seconds_total{mode!='idle'}"
    keep "node_memory_MemAvailable_bytes"
    keep "node_network_.*_bytes_total"
}
