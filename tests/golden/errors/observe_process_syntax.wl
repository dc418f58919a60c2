target db {
  pg "postgres://wlrun@127.0.0.1:5432/wlrun"
  observe process port 5432
}
