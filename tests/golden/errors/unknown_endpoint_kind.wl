target db {
  mysql "mysql://127.0.0.1:3306/bench"
}
