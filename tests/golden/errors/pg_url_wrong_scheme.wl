target db {
  pg "mysql://root@127.0.0.1:3306/bench"
}
