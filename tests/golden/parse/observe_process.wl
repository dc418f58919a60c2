// The three ways of naming a target's server process, sampled from /proc while phases run.
target pg {
  observe process pidfile "/run/postgresql/15-main.pid"
  pg "postgres://wlrun@127.0.0.1:5432/wlrun"
  observe process listening pg
  observe process named "post${"gres"}"
}
