// Every mistake of `observe metrics` is reported, each at its place.
target a {
  pg "postgres://postgres@127.0.0.1:5432/bench"
  observe metrics "127.0.0.1:9100/metrics" keep "node_(cpu", "ok_.*", "[z-a]"
  observe metrics "http://127.0.0.1:9100/metrics" every 1ms cpu "node_cpu_seconds_total{mode!=idle}"
  observe metrics "http://127.0.0.1:9100/metrics" every 5 cpu "x" cpu "y"
  observe metrics "http://127.0.0.1:9100/metrics" every 1s every 2s
  observe metrics "http://127.0.0.1:9100/metrics" cpu "m{mode=~'(idle'}"
}

query one { sql "SELECT 1" }

run r {
  against a.pg
  queries one
  count 1
}
