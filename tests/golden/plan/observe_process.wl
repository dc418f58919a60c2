// A target whose server is observed from /proc: the cell lists it, for the targets its phases
// run against only (`other` is not observed, no phase runs against it).
workload observed { seed 7 }

param pidfile = "/run/postgresql/15-main.pid"

target pg {
  dialect postgres
  pg "postgres://wlrun@127.0.0.1:5432/wlrun" as main
  observe process listening main
  observe process pidfile pidfile
}

target other {
  pg "postgres://wlrun@127.0.0.1:5433/wlrun"
  observe process named "postgres"
}

query one { sql "SELECT 1" }

run point {
  against pg.main
  queries one
  count 10
}
